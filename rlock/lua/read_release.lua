-- read_release.lua: drop one read hold (Redisson's RedissonReadLock unlock).
-- The hash lives as long as the longest live read hold of any holder; when
-- none is left (and no writer holds it) it is deleted and "0" is published,
-- which wakes one waiter (a writer, or a reader that could not join a
-- writer's lock).
-- KEYS[1]  the lock hash            KEYS[2]  the cancel floor
-- KEYS[3]  the channel, redisson_rwlock:{name}
-- KEYS[4]  this holder's timeout prefix: {name}:<field>:rwlock_timeout
-- ARGV[1..5] see lib/settle.lua (ARGV[2] is the reader field)
-- ARGV[6]  publish command: "publish", "spublish" or "both"
-- ARGV[7]  message ("0")
-- ARGV[8]  the key prefix of every holder's timeout keys: {name}
-- Returns: see lib/settle.lua.
--#include notify
--#include cancel
--#include hold
local function release()
    local mode = redis.call('hget', KEYS[1], 'mode')
    if mode == false then
        notify(ARGV[6], KEYS[3], ARGV[7])
        return -1
    end
    if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
        return -1
    end
    local n = redis.call('hincrby', KEYS[1], ARGV[2], -1)
    if n == 0 then
        redis.call('hdel', KEYS[1], ARGV[2])
    end
    redis.call('del', KEYS[4] .. ':' .. (n + 1))
    if redis.call('hlen', KEYS[1]) > 1 then
        local longest = -3
        for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
            local count = tonumber(redis.call('hget', KEYS[1], field))
            if type(count) == 'number' then
                for i = count, 1, -1 do
                    longest = math.max(longest, redis.call('pttl', ARGV[8] .. ':' .. field .. ':rwlock_timeout:' .. i))
                end
            end
        end
        if longest > 0 then
            redis.call('pexpire', KEYS[1], longest)
            return n
        end
        if mode == 'write' then
            return n
        end
    end
    redis.call('del', KEYS[1])
    notify(ARGV[6], KEYS[3], ARGV[7])
    return 0
end
local left = nil
--#include settle
--#include notify_end

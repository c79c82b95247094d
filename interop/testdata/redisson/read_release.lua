-- A read unlock request. The hash stays while any remaining read hold's
-- timeout key is alive (its PTTL becomes the hash's), or while a writer
-- holds it; otherwise it is deleted and one waiter is woken with "0".
-- KEYS[1] lock hash, KEYS[2] channel, KEYS[3] this thread's timeout
-- prefix, KEYS[4] key prefix of every holder ("{name}"), KEYS[5] latch.
-- ARGV[1] message "0", ARGV[2] reader field, ARGV[3] publish command,
-- ARGV[4] latch TTL ms.
-- Reply: 1 deleted, 0 holds remain, nil not held (when the lock is gone
-- altogether, "0" is published all the same).
local answered = redis.call('get', KEYS[5])
if answered ~= false then
    return tonumber(answered)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call(ARGV[3], KEYS[2], ARGV[1])
    redis.call('set', KEYS[5], 1, 'px', ARGV[4])
    return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return nil
end
local left = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if left == 0 then
    redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (left + 1))
if redis.call('hlen', KEYS[1]) > 1 then
    local longest = -3
    for _, holder in ipairs(redis.call('hkeys', KEYS[1])) do
        local levels = tonumber(redis.call('hget', KEYS[1], holder))
        if levels ~= nil then
            for n = levels, 1, -1 do
                local ttl = redis.call('pttl', KEYS[4] .. ':' .. holder .. ':rwlock_timeout:' .. n)
                longest = math.max(longest, ttl)
            end
        end
    end
    if longest > 0 then
        redis.call('pexpire', KEYS[1], longest)
        redis.call('set', KEYS[5], 0, 'px', ARGV[4])
        return 0
    end
    if mode == 'write' then
        redis.call('set', KEYS[5], 0, 'px', ARGV[4])
        return 0
    end
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[4])
return 1

-- faster_release.lua: drop one hold of a faster multilock (Redisson's
-- RedissonFasterMultiLock unlockInnerAsync) on every one of its values;
-- a value whose count reaches 0 loses its three fields, the others get their
-- expire_time raised to now + lease. Every unlock publishes the unlock
-- message on redisson_lock__channel:{group}, as Redisson's does (its test
-- of "hasDeleted" is always true in Lua), and so does an unlock of a group
-- that does not exist. Unlike Redisson, an owner that does not hold every
-- value (unexpired) changes nothing: Redisson decrements the values it still
-- holds before it refuses. Also the settles of lib/settle.lua.
-- KEYS[1]  the group hash           KEYS[2]  the cancel floor
-- KEYS[3]  the unlock channel, redisson_lock__channel:{group}
-- ARGV[1..5] see lib/settle.lua (mode, holder field, call number, known
--          holds, cancel floor TTL)
-- ARGV[6]  lease in ms, re-applied to the values still held
-- ARGV[7]  publish command: "publish", "spublish" or "both"
-- ARGV[8]  unlock message ("0")
-- ARGV[9..] the value fields
-- Returns: see lib/settle.lua.
--#include notify
--#include cancel
--#include faster
local now = now_ms()
local function holds()
    return complete_holds(KEYS[1], ARGV[2], 9, now)
end
local function release()
    if redis.call('exists', KEYS[1]) == 0 then
        notify(ARGV[7], KEYS[3], ARGV[8])
        return -1
    end
    if holds() == 0 then
        return -1
    end
    local me = ARGV[2]
    local deadline = now + tonumber(ARGV[6])
    local left = nil
    for i = 9, #ARGV do
        local v = ARGV[i]
        local n = redis.call('hincrby', KEYS[1], count_field(v, me), -1)
        if n <= 0 then
            redis.call('hdel', KEYS[1], expire_field(v, me), count_field(v, me), v)
            n = 0
        elseif tonumber(redis.call('hget', KEYS[1], expire_field(v, me))) < deadline then
            redis.call('hset', KEYS[1], expire_field(v, me), deadline)
        end
        if left == nil or n < left then
            left = n
        end
    end
    notify(ARGV[7], KEYS[3], ARGV[8])
    if left > 0 then
        extend_key(KEYS[1], ARGV[6])
    end
    return left
end
local left = nil
--#include settle
--#include notify_end

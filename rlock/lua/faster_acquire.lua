-- faster_acquire.lua: take or re-enter a faster multilock (Redisson's
-- RedissonFasterMultiLock tryLockInnerAsync): every value of the lock at
-- once, or none, in the group hash of lib/faster.lua. A value held by
-- another owner, unexpired, makes the attempt fail; otherwise each value is
-- set to the caller, its expire_time raised to now + lease, its lock_count
-- incremented, and the key's expiry set (a new key) or raised to the lease.
-- goredisson's additions: a value taken afresh (it was free, or its hold
-- had expired) starts its count at 1, and the expired holder's fields are
-- removed, where Redisson adds to a stale count and leaves them.
-- KEYS[1]  the group hash
-- KEYS[2]  the cancel floor of this set of values (lib/cancel.lua)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  holder field "<client id>:<owner id>"
-- ARGV[3]  this call's number
-- ARGV[4..] the value fields
-- Returns: {holds} when held (the caller's complete holds after it);
--          otherwise the ms until the latest deadline among the values held
--          by others (Redisson's reply), or -3 when the call was cancelled.
--#include cancel
--#include faster
if cancelled(KEYS[2], ARGV[2], ARGV[3]) then
    return -3
end
local now = now_ms()
local me = ARGV[2]
local existed = redis.call('exists', KEYS[1]) == 1
local latest = -1
for i = 4, #ARGV do
    local holder, deadline = live_holder(KEYS[1], ARGV[i], now)
    if holder and holder ~= me and deadline > latest then
        latest = deadline
    end
end
if latest ~= -1 then
    return math.max(1, latest - now)
end
local deadline = now + tonumber(ARGV[1])
local holds = nil
for i = 4, #ARGV do
    local v = ARGV[i]
    local n
    if live_holder(KEYS[1], v, now) == me then
        n = redis.call('hincrby', KEYS[1], count_field(v, me), 1)
        if tonumber(redis.call('hget', KEYS[1], expire_field(v, me))) < deadline then
            redis.call('hset', KEYS[1], expire_field(v, me), deadline)
        end
    else
        local old = redis.call('hget', KEYS[1], v)
        if old then
            redis.call('hdel', KEYS[1], expire_field(v, old), count_field(v, old))
        end
        redis.call('hset', KEYS[1], v, me, expire_field(v, me), deadline, count_field(v, me), 1)
        n = 1
    end
    if holds == nil or n < holds then
        holds = n
    end
end
if existed then
    extend_key(KEYS[1], ARGV[1])
else
    redis.call('pexpire', KEYS[1], ARGV[1])
end
return {holds}

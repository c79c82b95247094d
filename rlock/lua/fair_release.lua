-- fair_release.lua: drop one hold of a fair lock; the last one deletes it
-- and wakes the waiter at the head of the queue on its own channel.
-- KEYS[1]  the lock hash
-- KEYS[2]  the queue
-- KEYS[3]  the timeouts
-- KEYS[4]  the unlock channel, redisson_lock__channel:{name}; a waiter's own
--          channel is this plus ":<field>"
-- KEYS[5]  this request's unlock latch (see release.lua)
-- ARGV[1]  unlock message ("0")
-- ARGV[2]  lease in ms, re-applied while holds remain
-- ARGV[3]  holder field
-- ARGV[4]  publish command: "publish" or "spublish"
-- ARGV[5]  latch TTL in ms
-- Returns: 0 when holds remain, 1 when the lock was deleted, nil when the
--          field does not hold the lock (if nobody does, the head waiter is
--          woken all the same: the lock expired without an unlock).
--#include fair_queue
local latched = redis.call('get', KEYS[5])
if latched then
    return tonumber(latched)
end
purge(KEYS[2], KEYS[3], now_ms())
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    if redis.call('exists', KEYS[1]) == 0 then
        wake_head(KEYS[2], KEYS[4], ARGV[4], ARGV[1])
    end
    return nil
end
local count = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if count > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[5], 0, 'px', ARGV[5])
    return 0
end
redis.call('del', KEYS[1])
wake_head(KEYS[2], KEYS[4], ARGV[4], ARGV[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[5])
return 1

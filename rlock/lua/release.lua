-- release.lua: drop one hold of a reentrant lock; the last one deletes it
-- and publishes the unlock message.
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel, redisson_lock__channel:{name}
-- KEYS[3]  this request's unlock latch, redisson_unlock_latch:{name}:<request id>
-- ARGV[1]  unlock message ("0")
-- ARGV[2]  lease in ms, re-applied while holds remain
-- ARGV[3]  holder field "<client id>:<owner id>"
-- ARGV[4]  publish command: "publish" or "spublish"
-- ARGV[5]  latch TTL in ms
-- Returns: 0 when holds remain, 1 when the lock was deleted, nil when the
--          field does not hold the lock. A retry of the same request (same
--          latch) returns the first answer without changing anything.
local latched = redis.call('get', KEYS[3])
if latched then
    return tonumber(latched)
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local count = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if count > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[3], 0, 'px', ARGV[5])
    return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1

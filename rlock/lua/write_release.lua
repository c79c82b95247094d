-- write_release.lua: drop one write hold; the last one deletes the lock and
-- publishes the unlock message, or, when the writer also took read holds
-- (downgrade), leaves the lock in read mode and wakes waiting readers.
-- KEYS[1]  the lock hash
-- KEYS[2]  the channel, redisson_rwlock:{name}
-- KEYS[3]  this request's unlock latch
-- ARGV[1]  unlock message ("0")
-- ARGV[2]  lease in ms, re-applied while write holds remain
-- ARGV[3]  writer field
-- ARGV[4]  publish command: "publish" or "spublish"
-- ARGV[5]  latch TTL in ms
-- ARGV[6]  read-unlock message ("1"), published on a downgrade
-- Returns: 0 when write holds remain, 1 when the write lock was released,
--          nil when the field holds no write lock. A retry with the same
--          latch returns the first answer.
local latched = redis.call('get', KEYS[3])
if latched then
    return tonumber(latched)
end
local function answer(v)
    redis.call('set', KEYS[3], v, 'px', ARGV[5])
    return v
end
if redis.call('hget', KEYS[1], 'mode') ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local n = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if n > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return answer(0)
end
redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1])
    redis.call(ARGV[4], KEYS[2], ARGV[1])
else
    redis.call('hset', KEYS[1], 'mode', 'read')
    redis.call(ARGV[4], KEYS[2], ARGV[6])
end
return answer(1)

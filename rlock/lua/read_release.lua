-- read_release.lua: drop one read hold; the last hold of the lock deletes
-- it and publishes the read-unlock message.
-- KEYS[1]  the lock hash
-- KEYS[2]  the channel, redisson_rwlock:{name}
-- KEYS[3]  this holder's read-timeout prefix (see read_acquire.lua)
-- KEYS[4]  this request's unlock latch
-- ARGV[1]  read-unlock message ("1")
-- ARGV[2]  reader field
-- ARGV[3]  publish command: "publish" or "spublish"
-- ARGV[4]  latch TTL in ms
-- ARGV[5]  timeout-key prefix of every holder: suffixName(name, "")
-- Returns: 0 when holds remain, 1 when the lock was deleted, nil when the
--          field holds no read lock. A retry with the same latch returns
--          the first answer.
local latched = redis.call('get', KEYS[4])
if latched then
    return tonumber(latched)
end
local function answer(v)
    redis.call('set', KEYS[4], v, 'px', ARGV[4])
    return v
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return nil
end
local n = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if n == 0 then
    redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (n + 1))
-- The hash lives as long as the longest live read hold of any holder;
-- holds whose timeout key expired (a stuck or dead reader) do not count.
local longest = -2
for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
    if field ~= 'mode' then
        local count = tonumber(redis.call('hget', KEYS[1], field))
        for i = count, 1, -1 do
            longest = math.max(longest, redis.call('pttl', ARGV[5] .. field .. ':rwlock_timeout:' .. i))
        end
    end
end
if redis.call('hget', KEYS[1], 'mode') == 'write' then
    return answer(0)
end
if longest > 0 then
    redis.call('pexpire', KEYS[1], longest)
    return answer(0)
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[1])
return answer(1)

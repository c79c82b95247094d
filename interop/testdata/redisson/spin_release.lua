-- A spin lock unlock: the RLock release without any publish (spin
-- waiters never subscribe).
-- KEYS[1] lock hash, KEYS[2] unlock latch.
-- ARGV[1] lease ms, ARGV[2] field, ARGV[3] latch TTL ms.
local answered = redis.call('get', KEYS[2])
if answered ~= false then
    return tonumber(answered)
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return nil
end
if redis.call('hincrby', KEYS[1], ARGV[2], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('set', KEYS[2], 0, 'px', ARGV[3])
    return 0
end
redis.call('del', KEYS[1])
redis.call('set', KEYS[2], 1, 'px', ARGV[3])
return 1

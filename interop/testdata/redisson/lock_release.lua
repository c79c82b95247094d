-- An RLock unlock request. A retry of the same request (same latch key)
-- gets the first answer again.
-- KEYS[1] lock hash, KEYS[2] channel, KEYS[3] unlock latch.
-- ARGV[1] message "0", ARGV[2] lease ms re-applied while holds remain,
-- ARGV[3] field, ARGV[4] publish command, ARGV[5] latch TTL ms.
-- Reply: 1 released, 0 holds remain, nil the field holds nothing.
local answered = redis.call('get', KEYS[3])
if answered ~= false then
    return tonumber(answered)
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[3], 0, 'px', ARGV[5])
    return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1

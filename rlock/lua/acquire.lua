-- acquire.lua: take or re-enter a reentrant lock (Redisson RLock layout).
-- KEYS[1]  the lock hash (the lock name itself)
-- KEYS[2]  this attempt's cancel marker; set by cancel.lua when the caller
--          gave up on the attempt before learning its outcome
-- ARGV[1]  lease in milliseconds (PEXPIRE of the whole key)
-- ARGV[2]  holder field "<client id>:<owner id>"
-- Returns: nil when held (new hold or re-entry: the field's count is +1);
--          otherwise the lock's PTTL in ms (-1: no expiry), or -3 when the
--          attempt was cancelled before it arrived (nothing changed).
if redis.call('exists', KEYS[2]) == 1 then
    return -3
end
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return redis.call('pttl', KEYS[1])

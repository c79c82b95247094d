-- acquire.lua: take or re-enter a reentrant lock (Redisson RLock layout).
-- KEYS[1]  the lock hash (the lock name itself)
-- KEYS[2]  this attempt's marker: "h" once the attempt took its hold (a
--          re-run of the same attempt, e.g. a client retry after a lost
--          reply, then changes nothing), anything else when cancel.lua
--          cancelled it before it arrived
-- ARGV[1]  lease in milliseconds (PEXPIRE of the whole key)
-- ARGV[2]  holder field "<client id>:<owner id>"
-- Returns: nil when held (new hold or re-entry: the field's count is +1);
--          otherwise the lock's PTTL in ms (-1: no expiry), or -3 when the
--          attempt was cancelled before it arrived (nothing changed).
local marker = redis.call('get', KEYS[2])
if marker then
    if marker == 'h' then
        return nil
    end
    return -3
end
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('set', KEYS[2], 'h', 'px', 10000)
    return nil
end
return redis.call('pttl', KEYS[1])

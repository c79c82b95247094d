-- An RLock (or spin lock) attempt. The field takes the lock when nobody
-- holds it, or enters again when it already holds it.
-- KEYS[1] the lock hash.  ARGV[1] lease ms, ARGV[2] field "<uuid>:<thread>".
-- Reply: nil when held now, else the lock's PTTL.
local holds = redis.call('hexists', KEYS[1], ARGV[2]) == 1
if holds or redis.call('exists', KEYS[1]) == 0 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return redis.call('pttl', KEYS[1])

-- renew.lua: extend the lease of a lock the field still holds (watchdog;
-- Redisson's LockTask, one key per call).
-- KEYS[1]  the lock hash
-- ARGV[1]  lease in ms
-- ARGV[2]  holder field "<client id>:<owner id>"
-- Returns: 1 when renewed, 0 when the field no longer holds the lock (it
--          expired, was force-unlocked, or is someone else's): stop renewing.
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return 1
end
return 0

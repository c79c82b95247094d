-- A write lock forceUnlock: only a lock in write mode is deleted; "1".
-- KEYS[1] lock hash, KEYS[2] channel.  ARGV[1] message "1", ARGV[2] publish command.
if redis.call('hget', KEYS[1], 'mode') ~= 'write' then
    return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[2], KEYS[2], ARGV[1])
return 1

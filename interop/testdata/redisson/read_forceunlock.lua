-- A read lock forceUnlock: only a lock in read mode is deleted; "0".
-- KEYS[1] lock hash, KEYS[2] channel.  ARGV[1] message "0", ARGV[2] publish command.
if redis.call('hget', KEYS[1], 'mode') ~= 'read' then
    return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[2], KEYS[2], ARGV[1])
return 1

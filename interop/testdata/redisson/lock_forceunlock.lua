-- RLock forceUnlock: delete whoever holds it and wake a waiter.
-- KEYS[1] lock hash, KEYS[2] channel.  ARGV[1] message "0", ARGV[2] publish command.
if redis.call('del', KEYS[1]) == 0 then
    return 0
end
redis.call(ARGV[2], KEYS[2], ARGV[1])
return 1

-- A spin lock forceUnlock: a plain delete, no message.
-- KEYS[1] lock hash.
return redis.call('del', KEYS[1])

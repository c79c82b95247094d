-- A fenced lock attempt that returns the token (lockAndGetToken,
-- tryLockAndGetToken). Every acquisition, re-entries included, takes the
-- next token.
-- KEYS[1] lock hash, KEYS[2] token counter.  ARGV[1] lease ms, ARGV[2] field.
-- Reply: {-1, token} when held now, {PTTL, -1} otherwise.
local holds = redis.call('hexists', KEYS[1], ARGV[2]) == 1
if not holds and redis.call('exists', KEYS[1]) == 1 then
    return {redis.call('pttl', KEYS[1]), -1}
end
local token = redis.call('incr', KEYS[2])
redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
return {-1, token}

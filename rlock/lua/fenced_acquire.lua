-- fenced_acquire.lua: take or re-enter a fenced lock (Redisson's
-- FencedLock): the RLock layout plus a token counter incremented on every
-- acquisition, re-entries included.
-- KEYS[1]  the lock hash
-- KEYS[2]  the cancel floor (lib/cancel.lua)
-- KEYS[3]  the token counter, redisson_lock_token:{name}
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  holder field "<client id>:<owner id>"
-- ARGV[3]  this call's number
-- Returns: {holds, token} when held; otherwise the lock's PTTL in ms (-1: no
--          expiry), or -3 when the call was cancelled by a settle.
--#include cancel
--#include lease
if cancelled(KEYS[2], ARGV[2], ARGV[3]) then
    return -3
end
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local token = redis.call('incr', KEYS[3])
    local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    extend_to(ARGV[1])
    return {n, token}
end
return redis.call('pttl', KEYS[1])

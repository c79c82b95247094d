-- acquire.lua: take or re-enter a reentrant lock (Redisson's RLock, also
-- SpinLock): the same test and writes as Redisson's tryLockInnerAsync; or,
-- with ARGV[4] = "0", take a non-reentrant lock (Redisson's
-- RedissonNonReentrantLock), which refuses its holder's re-entry. A
-- re-entry extends the lease, never shortens it (lib/lease.lua).
-- KEYS[1]  the lock hash (the lock name itself)
-- KEYS[2]  the cancel floor, goredisson_cancel:{name} (lib/cancel.lua)
-- ARGV[1]  lease in milliseconds (PEXPIRE of the whole key)
-- ARGV[2]  holder field "<client id>:<owner id>"
-- ARGV[3]  this call's number
-- ARGV[4]  "1" reentrant, "0" not
-- Returns: {holds} when held (new hold or re-entry: the field's count after
--          it); otherwise the lock's PTTL in ms (-1: no expiry), or -3 when
--          the call was cancelled by a settle (nothing changed); the error
--          NON_REENTRANT_REACQUIRE for a refused re-entry, as Redisson's.
--#include cancel
--#include lease
if cancelled(KEYS[2], ARGV[2], ARGV[3]) then
    return -3
end
if redis.call('exists', KEYS[1]) == 0 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1}
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    if ARGV[4] == '0' then
        return redis.error_reply('NON_REENTRANT_REACQUIRE')
    end
    local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    extend_to(ARGV[1])
    return {n}
end
return redis.call('pttl', KEYS[1])

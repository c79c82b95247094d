-- rw_forceunlock.lua: delete a read-write lock held in the given mode,
-- whoever holds it, and wake its waiters (Redisson's forceUnlock of either
-- side: the read side publishes "0", the write side "1").
-- KEYS[1]  the lock hash
-- KEYS[2]  the channel, redisson_rwlock:{name}
-- ARGV[1]  mode: "read" or "write"
-- ARGV[2]  message to publish
-- ARGV[3]  publish command: "publish", "spublish" or "both"
-- Returns: 1 when a lock in that mode was deleted, else 0.
--#include notify
if redis.call('hget', KEYS[1], 'mode') == ARGV[1] then
    redis.call('del', KEYS[1])
    notify(ARGV[3], KEYS[2], ARGV[2])
    return 1
end
return 0
--#include notify_end

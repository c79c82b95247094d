-- forceunlock.lua: delete a lock whoever holds it and wake its waiters
-- (Redisson's RLock forceUnlock).
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel
-- ARGV[1]  unlock message ("0")
-- ARGV[2]  publish command: "publish", "spublish" or "both"
-- Returns: 1 when a lock was deleted, 0 when there was none.
--#include notify
if redis.call('del', KEYS[1]) == 1 then
    notify(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
--#include notify_end

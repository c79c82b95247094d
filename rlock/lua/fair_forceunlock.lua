-- fair_forceunlock.lua: delete a fair lock whoever holds it and wake the
-- waiter at the head of the queue (Redisson's RedissonFairLock forceUnlock).
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel (a waiter's own is this plus ":<field>")
-- KEYS[3]  the queue
-- KEYS[4]  the timeouts
-- ARGV[1]  unlock message ("0")
-- ARGV[2]  publish command: "publish", "spublish" or "both"
-- Returns: 1 when a lock was deleted, 0 when there was none.
--#include notify
--#include fair_queue
purge(KEYS[3], KEYS[4], now_ms())
if redis.call('del', KEYS[1]) == 1 then
    wake_head(KEYS[3], KEYS[2], ARGV[2], ARGV[1])
    return 1
end
return 0
--#include notify_end

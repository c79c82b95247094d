-- fair_dequeue.lua: a waiter gives up (its wait ran out, its context ended):
-- it leaves the queue at once, and if that lets the next waiter in, the
-- next waiter is woken.
-- KEYS[1]  the lock hash
-- KEYS[2]  the queue
-- KEYS[3]  the timeouts
-- KEYS[4]  the unlock channel (a waiter's own is this plus ":<field>")
-- ARGV[1]  the waiter's field
-- ARGV[2]  unlock message ("0")
-- ARGV[3]  publish command: "publish" or "spublish"
-- Returns: the number of queue entries removed (0 or 1).
--#include fair_queue
local removed = redis.call('lrem', KEYS[2], 0, ARGV[1])
redis.call('zrem', KEYS[3], ARGV[1])
purge(KEYS[2], KEYS[3], now_ms())
if removed > 0 and redis.call('exists', KEYS[1]) == 0 then
    wake_head(KEYS[2], KEYS[4], ARGV[3], ARGV[2])
end
return removed

-- fair_acquire.lua: take or re-enter a fair lock (Redisson FairLock layout:
-- the RLock hash plus a waiter queue and timeouts, see lib/fair_queue.lua).
-- The lock is free for the waiter at the head of the queue only, or for
-- anyone when the queue is empty; a waiter that cannot take it joins the tail
-- (once) and each later attempt keeps its entry alive for another waiter
-- timeout.
-- KEYS[1]  the lock hash
-- KEYS[2]  this attempt's marker (see acquire.lua)
-- KEYS[3]  the queue, redisson_lock_queue:{name}
-- KEYS[4]  the timeouts, redisson_lock_timeout:{name}
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  holder field "<client id>:<owner id>"
-- ARGV[3]  waiter timeout in ms (Redisson's threadWaitTime)
-- ARGV[4]  "1" to join the queue when the lock cannot be taken, "0" for a
--          single attempt that leaves no trace
-- Returns: nil when held (new hold or re-entry); otherwise how many ms to
--          wait at most before trying again: for the head of the queue the
--          lock's PTTL (-1: no expiry), for others the time until the head's
--          timeout; -3 when the attempt was cancelled before it arrived.
--#include fair_queue
local marker = redis.call('get', KEYS[2])
if marker then
    if marker == 'h' then
        return nil
    end
    return -3
end
local now = now_ms()
purge(KEYS[3], KEYS[4], now)
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('set', KEYS[2], 'h', 'px', 10000)
    return nil
end
local head = redis.call('lindex', KEYS[3], 0)
if redis.call('exists', KEYS[1]) == 0 and (not head or head == ARGV[2]) then
    if head then
        redis.call('lpop', KEYS[3])
    end
    redis.call('zrem', KEYS[4], ARGV[2])
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('set', KEYS[2], 'h', 'px', 10000)
    return nil
end
if ARGV[4] ~= '1' then
    return math.max(0, redis.call('pttl', KEYS[1]))
end
local alive = now + tonumber(ARGV[3])
if redis.call('zadd', KEYS[4], alive, ARGV[2]) == 1 then
    redis.call('rpush', KEYS[3], ARGV[2])
end
-- Let both keys go once the last timeout has passed, so that waiters that
-- all vanished leave nothing behind.
local last = redis.call('zrange', KEYS[4], -1, -1, 'withscores')
local keep = math.max(1, tonumber(last[2]) - now + 1)
redis.call('pexpire', KEYS[3], keep)
redis.call('pexpire', KEYS[4], keep)
head = redis.call('lindex', KEYS[3], 0)
if head == ARGV[2] then
    return redis.call('pttl', KEYS[1])
end
return math.max(1, tonumber(redis.call('zscore', KEYS[4], head)) - now)

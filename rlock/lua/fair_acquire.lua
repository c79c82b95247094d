-- fair_acquire.lua: take or re-enter a fair lock (Redisson's
-- RedissonFairLock, both of its acquire scripts; with ARGV[6] = "0" its
-- non-reentrant kind, RedissonNonReentrantFairLock), on the RLock hash plus the
-- waiter queue and timeouts of lib/fair_queue.lua. The lock is free for the
-- head of the queue only, or for anyone when the queue is empty; taking it
-- from the queue pulls every remaining timeout in by threadWaitTime. A waiter
-- that cannot take it joins the tail once, with Redisson's chained timeout.
-- goredisson's one addition: each later attempt of a queued goredisson
-- waiter pushes its own timeout up to the chain recomputed now (the timeout
-- of the waiter ahead, or now for the head, + threadWaitTime; never lower),
-- so a live waiter keeps its place however long the holders ahead of it
-- hold, while the chained arithmetic that Redisson's waiters rely on is
-- kept.
-- KEYS[1]  the lock hash
-- KEYS[2]  the cancel floor (lib/cancel.lua)
-- KEYS[3]  the queue, redisson_lock_queue:{name}
-- KEYS[4]  the timeouts, redisson_lock_timeout:{name}
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  holder field "<client id>:<owner id>"
-- ARGV[3]  this call's number
-- ARGV[4]  threadWaitTime in ms (the wait, or the client's fair wait timeout)
-- ARGV[5]  "1" to join the queue when the lock cannot be taken, "0" for a
--          single attempt that never queues
-- ARGV[6]  "1" reentrant; "0" not (Redisson's RedissonNonReentrantFairLock,
--          4.4.0): the holder taking it again is refused, in both paths
-- ARGV[7]  the holds the client counts for the holder (lib/reenter.lua)
-- Returns: {holds} when held; otherwise how many ms to wait at most before
--          trying again (the head: the lock's PTTL, -1 for no expiry; others:
--          that, or until the head's timeout if sooner), or -3 when the call
--          was cancelled; the error NON_REENTRANT_REACQUIRE for a refused
--          re-entry, as Redisson's.
--#include notify
--#include cancel
--#include lease
--#include reenter
--#include fair_queue
if cancelled(KEYS[2], ARGV[2], ARGV[3]) then
    return -3
end
local now = now_ms()
local wait = tonumber(ARGV[4])
purge(KEYS[3], KEYS[4], now)
if redis.call('exists', KEYS[1]) == 0
    and (redis.call('exists', KEYS[3]) == 0 or redis.call('lindex', KEYS[3], 0) == ARGV[2]) then
    redis.call('lpop', KEYS[3])
    redis.call('zrem', KEYS[4], ARGV[2])
    for _, waiter in ipairs(redis.call('zrange', KEYS[4], 0, -1)) do
        redis.call('zincrby', KEYS[4], -wait, waiter)
    end
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1}
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    if ARGV[6] == '0' then
        return redis.error_reply('NON_REENTRANT_REACQUIRE')
    end
    local n = reenter(ARGV[7])
    extend_to(ARGV[1])
    return {n}
end
if ARGV[5] ~= '1' then
    return math.max(0, redis.call('pttl', KEYS[1]))
end
if redis.call('zscore', KEYS[4], ARGV[2]) then
    -- A live waiter keeps at least now + wait, and at least the timeout of
    -- the waiter just ahead of it + wait: the chain Redisson's scores
    -- follow, kept up to date, so that each acquisition ahead of it, which
    -- pulls it in by wait, leaves it in the future.
    local target = now + wait
    local waiters, i = place(KEYS[3], ARGV[2])
    local ahead = waiters[i - 1]
    if ahead then
        local s = redis.call('zscore', KEYS[4], ahead)
        if s then
            target = math.max(target, tonumber(s) + wait)
        end
    end
    redis.call('zadd', KEYS[4], 'gt', target, ARGV[2])
else
    local last = redis.call('lindex', KEYS[3], -1)
    local ttl
    if last and last ~= ARGV[2] and redis.call('zscore', KEYS[4], last) then
        ttl = tonumber(redis.call('zscore', KEYS[4], last)) - now
    else
        ttl = redis.call('pttl', KEYS[1])
    end
    if redis.call('zadd', KEYS[4], ttl + wait + now, ARGV[2]) == 1 then
        redis.call('rpush', KEYS[3], ARGV[2])
    end
end
-- No expiry on the queue keys, as Redisson's: a Redisson waiter that
-- queues later (its ZADD keeps a key's TTL) must not lose its entry to a TTL
-- set from the timeouts seen here. Entries of vanished waiters are purged
-- by the next attempt on the lock; the last waiter out removes both keys.
-- The hint: the head retries when the holder's lease runs out, as
-- Redisson's queued waiters do; the others too, or when the head would be
-- purged if that comes first; while the lock is free and the head has not
-- taken it yet, soon.
local head = redis.call('lindex', KEYS[3], 0)
local pttl = redis.call('pttl', KEYS[1])
if head == ARGV[2] then
    return pttl
end
local purged = math.max(1, tonumber(redis.call('zscore', KEYS[4], head) or now) - now)
if pttl > 0 then
    return math.min(purged, pttl)
elseif pttl == -2 or pttl == 0 then
    -- Free, or expiring this very millisecond (PTTL says 0 then): soon.
    return math.min(purged, 50)
end
return purged
--#include notify_end

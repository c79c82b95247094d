-- lib/fair_queue.lua: helpers shared by the fair-lock scripts ("--#include
-- fair_queue"). The queue (a list of waiter fields in arrival order) and the
-- timeouts (a sorted set, member = waiter field, score = the millisecond
-- until which that waiter keeps its place) are Redisson's RedissonFairLock
-- layout and arithmetic: a waiter's timeout is chained to the one ahead of it
-- plus threadWaitTime, every acquisition from the queue pulls the timeouts of
-- those still waiting in by the acquirer's threadWaitTime, and a waiter that
-- gives up pulls in those behind it. Times come from the Redis server's clock
-- (TIME); Redisson passes its own clock's time, and the chained arithmetic
-- keeps the two consistent up to the clocks' offset.

-- now_ms returns the server's time in milliseconds.
local function now_ms()
    local t = redis.call('time')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- purge drops the waiters at the head of the queue whose timeout has passed:
-- they vanished without giving up. As Redisson's, it stops at a head that
-- has no timeout.
local function purge(queue, timeouts, now)
    while true do
        local head = redis.call('lindex', queue, 0)
        if not head then
            return
        end
        local score = redis.call('zscore', timeouts, head)
        if not score or tonumber(score) > now then
            return
        end
        redis.call('lpop', queue)
        redis.call('zrem', timeouts, head)
    end
end

-- wake_head publishes message on the own channel (<channel>:<field>) of the
-- waiter at the head of the queue, if any: only that waiter wakes.
local function wake_head(queue, channel, publish, message)
    local head = redis.call('lindex', queue, 0)
    if head then
        notify(publish, channel .. ':' .. head, message)
    end
end

-- place returns the queue's waiters and field's place among them (1 = the
-- head; #waiters + 1 when it is not queued).
local function place(queue, field)
    local waiters = redis.call('lrange', queue, 0, -1)
    local i = 1
    while i <= #waiters and waiters[i] ~= field do
        i = i + 1
    end
    return waiters, i
end

-- give_up removes field from the queue as Redisson's acquireFailed does: the
-- timeouts of the waiters behind it are pulled in by wait ms. goredisson also
-- wakes the new head when field was the head and the lock is free, so that
-- the next waiter does not sleep until its timeout.
local function give_up(lock, queue, timeouts, channel, field, wait, publish, message)
    local waiters, i = place(queue, field)
    for j = i + 1, #waiters do
        redis.call('zincrby', timeouts, -tonumber(wait), waiters[j])
    end
    redis.call('zrem', timeouts, field)
    redis.call('lrem', queue, 0, field)
    if i == 1 and i <= #waiters and redis.call('exists', lock) == 0 then
        wake_head(queue, channel, publish, message)
    end
end

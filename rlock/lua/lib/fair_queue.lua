-- lib/fair_queue.lua: helpers shared by the fair-lock scripts. A script's
-- line "--#include fair_queue" (right after its header) is replaced by this
-- text when the script is loaded (see scripts.go); it never runs on its own.
--
-- The queue (a list of waiter fields in arrival order) and the timeouts (a
-- sorted set, member = waiter field, score = the wall-clock millisecond until
-- which that waiter counts as alive) are Redisson's RedissonFairLock layout.
-- Times come from the Redis server's clock (TIME), not the client's, so that
-- a skewed client clock cannot purge a live waiter; scores stay absolute
-- milliseconds, as Redisson writes and reads them.

-- now_ms returns the server's time in milliseconds.
local function now_ms()
    local t = redis.call('time')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- purge drops the waiters at the head of the queue whose timeout has passed
-- (or that have none): they vanished without dequeuing.
local function purge(queue, timeouts, now)
    while true do
        local head = redis.call('lindex', queue, 0)
        if not head then
            return
        end
        local score = redis.call('zscore', timeouts, head)
        if score and tonumber(score) > now then
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
        redis.call(publish, channel .. ':' .. head, message)
    end
end

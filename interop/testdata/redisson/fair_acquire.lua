-- A fair lock attempt of a waiting call (lock(), tryLock(wait, ...)).
-- KEYS[1] lock hash, KEYS[2] queue (list of fields), KEYS[3] timeouts
-- (sorted set: field -> client-clock ms until which it keeps its place).
-- ARGV[1] lease ms, ARGV[2] field, ARGV[3] threadWaitTime ms, ARGV[4] now ms.
-- Reply: nil when held now; otherwise how long to wait for a message at
-- most: for a waiter already queued the lock's PTTL (never below 0), for
-- one just queued the time until the waiter ahead of it runs out (or the
-- lock's PTTL when nobody is ahead).
local field = ARGV[2]
local step = tonumber(ARGV[3])
local now = tonumber(ARGV[4])

-- Waiters at the head whose time ran out are dropped; nobody else's
-- timeout changes. A head without a timeout stops the purge.
while true do
    local head = redis.call('lindex', KEYS[2], 0)
    if head == false then
        break
    end
    local until_ms = redis.call('zscore', KEYS[3], head)
    if until_ms == false or tonumber(until_ms) > now then
        break
    end
    redis.call('zrem', KEYS[3], head)
    redis.call('lpop', KEYS[2])
end

-- Free, and the caller is first in line (or nobody is in line): take it,
-- and pull every remaining waiter's timeout in by one threadWaitTime.
local first = redis.call('lindex', KEYS[2], 0)
if redis.call('exists', KEYS[1]) == 0 and (first == false or first == field) then
    redis.call('lpop', KEYS[2])
    redis.call('zrem', KEYS[3], field)
    local rest = redis.call('zrange', KEYS[3], 0, -1)
    for _, waiter in ipairs(rest) do
        redis.call('zincrby', KEYS[3], -step, waiter)
    end
    redis.call('hset', KEYS[1], field, 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end

-- Re-entry.
if redis.call('hexists', KEYS[1], field) == 1 then
    redis.call('hincrby', KEYS[1], field, 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end

-- Already queued: its timeout is left as it is.
if redis.call('zscore', KEYS[3], field) ~= false then
    return math.max(0, redis.call('pttl', KEYS[1]))
end

-- Join the tail: the timeout chains on the last waiter's (or on the lock's
-- PTTL when nobody waits), plus one threadWaitTime.
local last = redis.call('lindex', KEYS[2], -1)
local ahead
if last ~= false and last ~= field then
    local last_until = redis.call('zscore', KEYS[3], last)
    if last_until ~= false then
        ahead = tonumber(last_until) - now
    end
end
if ahead == nil then
    ahead = redis.call('pttl', KEYS[1])
end
if redis.call('zadd', KEYS[3], ahead + step + now, field) == 1 then
    redis.call('rpush', KEYS[2], field)
end
return ahead

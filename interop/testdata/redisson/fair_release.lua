-- A fair lock unlock request: the last hold deletes the lock and wakes
-- only the waiter at the head of the queue, on its own channel.
-- KEYS[1] lock hash, KEYS[2] queue, KEYS[3] timeouts, KEYS[4] channel
-- (a waiter's own channel is KEYS[4] .. ':' .. field), KEYS[5] latch.
-- ARGV[1] message "0", ARGV[2] lease ms, ARGV[3] field, ARGV[4] now ms,
-- ARGV[5] publish command, ARGV[6] latch TTL ms.
-- Reply: 1 released (also when the lock was already gone: the head is
-- woken all the same), 0 holds remain, nil the field holds nothing.
local answered = redis.call('get', KEYS[5])
if answered ~= false then
    return tonumber(answered)
end
local now = tonumber(ARGV[4])
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
local function wake_head()
    local head = redis.call('lindex', KEYS[2], 0)
    if head ~= false then
        redis.call(ARGV[5], KEYS[4] .. ':' .. head, ARGV[1])
    end
end
if redis.call('exists', KEYS[1]) == 0 then
    wake_head()
    redis.call('set', KEYS[5], 1, 'px', ARGV[6])
    return 1
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[5], 0, 'px', ARGV[6])
    return 0
end
redis.call('del', KEYS[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[6])
wake_head()
return 1

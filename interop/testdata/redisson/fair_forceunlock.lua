-- A fair lock forceUnlock: purge the timed-out head waiters, delete the
-- lock and wake the head waiter.
-- KEYS[1] lock hash, KEYS[2] queue, KEYS[3] timeouts, KEYS[4] channel.
-- ARGV[1] message "0", ARGV[2] now ms, ARGV[3] publish command.
local now = tonumber(ARGV[2])
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
if redis.call('del', KEYS[1]) == 0 then
    return 0
end
local head = redis.call('lindex', KEYS[2], 0)
if head ~= false then
    redis.call(ARGV[3], KEYS[4] .. ':' .. head, ARGV[1])
end
return 1

-- A fair waiter gives up (its tryLock wait ran out): it leaves the queue,
-- and every waiter behind it moves its timeout in by the leaver's
-- threadWaitTime. Nothing is published.
-- KEYS[1] queue, KEYS[2] timeouts.  ARGV[1] field, ARGV[2] threadWaitTime ms.
local step = tonumber(ARGV[2])
local behind = false
for _, waiter in ipairs(redis.call('lrange', KEYS[1], 0, -1)) do
    if behind then
        redis.call('zincrby', KEYS[2], -step, waiter)
    elseif waiter == ARGV[1] then
        behind = true
    end
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
return nil

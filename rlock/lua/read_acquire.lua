-- read_acquire.lua: take or re-enter the read side of a read-write lock
-- (Redisson's RedissonReadLock). Every read hold n of a holder has its own
-- timeout key <prefix>:n living one lease; the hash lives at least as long.
-- KEYS[1]  the lock hash: field "mode" = "read" | "write", holder fields
-- KEYS[2]  the cancel floor (lib/cancel.lua)
-- KEYS[3]  this holder's timeout prefix: {name}:<field>:rwlock_timeout
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  reader field "<client id>:<owner id>"
-- ARGV[3]  this call's number
-- ARGV[4]  the same owner's writer field "<client id>:<owner id>:write"
-- ARGV[5]  "1" for a watchdog-managed hold: the owner's earlier read holds
--          are extended to the lease too
-- Returns: {holds} when held (this reader's count after it); otherwise the
--          hash's PTTL in ms, or -3 when the call was cancelled.
--#include cancel
if cancelled(KEYS[2], ARGV[2], ARGV[3]) then
    return -3
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'read')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[3] .. ':1', 1, 'px', ARGV[1])
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1}
end
if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[4]) == 1) then
    local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[3] .. ':' .. n, 1, 'px', ARGV[1])
    if ARGV[5] == '1' then
        -- A watchdog-managed hold: every earlier read hold of the owner
        -- lives the lease too (the watchdog renews them all), so that
        -- unlocking the newest does not leave the hash to an older, shorter
        -- one.
        for i = n - 1, 1, -1 do
            local key = KEYS[3] .. ':' .. i
            if redis.call('pttl', key) < tonumber(ARGV[1]) then
                redis.call('pexpire', key, ARGV[1])
            end
        end
    end
    local remain = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], math.max(remain, tonumber(ARGV[1])))
    return {n}
end
return redis.call('pttl', KEYS[1])

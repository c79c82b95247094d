-- read_acquire.lua: take or re-enter the read side of a read-write lock
-- (Redisson RReadWriteLock layout).
-- KEYS[1]  the lock hash: field "mode" = "read" | "write", holder fields
-- KEYS[2]  this attempt's marker (see acquire.lua)
-- KEYS[3]  this holder's read-timeout prefix: suffixName(name, field) ..
--          ":rwlock_timeout"; hold level n has its own key prefix:n
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  reader field "<client id>:<owner id>"
-- ARGV[3]  the same owner's writer field "<client id>:<owner id>:write"
-- Returns: nil when held (a new read hold: its timeout key lives ARGV[1]
--          and the hash lives at least as long); otherwise the hash's PTTL
--          in ms, or -3 when the attempt was cancelled before it arrived.
local marker = redis.call('get', KEYS[2])
if marker then
    if marker == 'h' then
        return nil
    end
    return -3
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'read')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[3] .. ':1', 1, 'px', ARGV[1])
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('set', KEYS[2], 'h', 'px', 10000)
    return nil
end
if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
    local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[3] .. ':' .. n, 1, 'px', ARGV[1])
    local remain = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], math.max(remain, tonumber(ARGV[1])))
    redis.call('set', KEYS[2], 'h', 'px', 10000)
    return nil
end
return redis.call('pttl', KEYS[1])

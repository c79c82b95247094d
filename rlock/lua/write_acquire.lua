-- write_acquire.lua: take or re-enter the write side of a read-write lock
-- (Redisson's RedissonWriteLock). A re-entry extends the key's expiry by the
-- lease (PTTL + lease), as Redisson does.
-- KEYS[1]  the lock hash: field "mode" = "read" | "write", holder fields
-- KEYS[2]  the cancel floor (lib/cancel.lua)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  writer field "<client id>:<owner id>:write"
-- ARGV[3]  this call's number
-- ARGV[4]  the holds the client counts for the holder (lib/reenter.lua)
-- Returns: {holds} when held; otherwise the hash's PTTL in ms (readers hold
--          it, or another writer), or -3 when the call was cancelled.
--#include cancel
--#include reenter
if cancelled(KEYS[2], ARGV[2], ARGV[3]) then
    return -3
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'write')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1}
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local n = reenter(ARGV[4])
    local remain = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], remain + tonumber(ARGV[1]))
    return {n}
end
return redis.call('pttl', KEYS[1])

-- write_acquire.lua: take or re-enter the write side of a read-write lock.
-- KEYS[1]  the lock hash
-- KEYS[2]  this attempt's marker (see acquire.lua)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  writer field "<client id>:<owner id>:write"
-- Returns: nil when held (mode "write", the field's count +1); otherwise the
--          hash's PTTL in ms (readers hold it, or another writer), or -3
--          when the attempt was cancelled before it arrived.
local marker = redis.call('get', KEYS[2])
if marker then
    if marker == 'h' then
        return nil
    end
    return -3
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'write')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('set', KEYS[2], 'h', 'px', 10000)
    return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('set', KEYS[2], 'h', 'px', 10000)
    return nil
end
return redis.call('pttl', KEYS[1])

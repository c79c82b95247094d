-- read_renew.lua: extend a reader's lease (watchdog): the hash and this
-- holder's own read-timeout keys, so that other readers expire on their own.
-- KEYS[1]  the lock hash
-- KEYS[2]  this holder's read-timeout prefix (see read_acquire.lua)
-- ARGV[1]  lease in ms
-- ARGV[2]  reader field
-- Returns: 1 when renewed, 0 when the field holds no read lock: stop.
local count = tonumber(redis.call('hget', KEYS[1], ARGV[2]) or '0')
if count == 0 then
    return 0
end
for i = count, 1, -1 do
    redis.call('pexpire', KEYS[2] .. ':' .. i, ARGV[1])
end
if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then
    redis.call('pexpire', KEYS[1], ARGV[1])
end
return 1

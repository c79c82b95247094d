-- read_renew.lua: extend a reader's lease (watchdog; Redisson's
-- ReadLockTask for one holder): every timeout key of the holder and the hash
-- get the lease, if the holder still holds a read lock.
-- KEYS[1]  the lock hash
-- KEYS[2]  this holder's timeout prefix: {name}:<field>:rwlock_timeout
-- ARGV[1]  lease in ms
-- ARGV[2]  reader field
-- Returns: 1 when renewed, 0 when the field holds no read lock: stop.
local count = redis.call('hget', KEYS[1], ARGV[2])
if count == false then
    return 0
end
for i = tonumber(count), 1, -1 do
    redis.call('pexpire', KEYS[2] .. ':' .. i, ARGV[1])
end
redis.call('pexpire', KEYS[1], ARGV[1])
return 1

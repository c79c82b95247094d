-- A read lock attempt. Readers share the lock; the writer of the same
-- thread may also read (downgrade). Each read hold level n has its own
-- timeout key <prefix>:n holding that hold's lease.
-- KEYS[1] lock hash, KEYS[2] this thread's timeout prefix
-- ("{name}:<field>:rwlock_timeout").
-- ARGV[1] lease ms, ARGV[2] reader field, ARGV[3] the same thread's writer field.
-- Reply: nil when held now, else the lock's PTTL.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'read')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[2] .. ':1', 1, 'px', ARGV[1])
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
local own_write = mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1
if mode ~= 'read' and not own_write then
    return redis.call('pttl', KEYS[1])
end
local level = redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('set', KEYS[2] .. ':' .. level, 1, 'px', ARGV[1])
local keep = math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1]))
redis.call('pexpire', KEYS[1], keep)
return nil

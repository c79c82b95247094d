-- A write lock attempt. Only a free lock, or the same writer again; a
-- writer's re-entry adds its lease to the lock's remaining PTTL.
-- KEYS[1] lock hash.  ARGV[1] lease ms, ARGV[2] writer field "<uuid>:<thread>:write".
-- Reply: nil when held now, else the lock's PTTL.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'write')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], redis.call('pttl', KEYS[1]) + tonumber(ARGV[1]))
    return nil
end
return redis.call('pttl', KEYS[1])

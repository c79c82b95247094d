-- A write unlock request. The last write hold deletes the lock and wakes
-- every blocked waiter with "1"; if the writer's thread still has read
-- holds, the lock turns to read mode instead and nothing is published.
-- KEYS[1] lock hash, KEYS[2] channel, KEYS[3] latch.
-- ARGV[1] message "1", ARGV[2] lease ms, ARGV[3] writer field,
-- ARGV[4] publish command, ARGV[5] latch TTL ms.
-- Reply: 1 released, 0 write holds remain, nil not held (a lock gone
-- altogether publishes "1" all the same).
local answered = redis.call('get', KEYS[3])
if answered ~= false then
    return tonumber(answered)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call(ARGV[4], KEYS[2], ARGV[1])
    redis.call('set', KEYS[3], 1, 'px', ARGV[5])
    return nil
end
if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[3], 0, 'px', ARGV[5])
    return 0
end
redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1])
    redis.call(ARGV[4], KEYS[2], ARGV[1])
else
    redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1

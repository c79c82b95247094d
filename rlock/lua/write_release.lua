-- write_release.lua: drop one write hold (Redisson's RedissonWriteLock
-- unlock). The last write hold deletes the lock and publishes "1", which
-- wakes every waiter (readers may all go in); if the writer also holds read
-- holds (a downgrade) the lock stays in read mode and, as in Redisson,
-- nothing is published (the client wakes its own waiting readers itself).
-- KEYS[1]  the lock hash            KEYS[2]  the cancel floor
-- KEYS[3]  the channel, redisson_rwlock:{name}
-- ARGV[1..5] see lib/settle.lua (ARGV[2] is the writer field)
-- ARGV[6]  lease in ms the key keeps at least while write holds remain
--          (0: as it is; lib/lease.lua)
-- ARGV[7]  publish command: "publish", "spublish" or "both"
-- ARGV[8]  message ("1")
-- Returns: see lib/settle.lua.
--#include notify
--#include cancel
--#include lease
--#include hold
local function release()
    local mode = redis.call('hget', KEYS[1], 'mode')
    if mode == false then
        notify(ARGV[7], KEYS[3], ARGV[8])
        return -1
    end
    if mode ~= 'write' then
        return -1
    end
    local n = count_down(ARGV[6])
    if n ~= 0 then
        return n
    end
    redis.call('hdel', KEYS[1], ARGV[2])
    if redis.call('hlen', KEYS[1]) == 1 then
        redis.call('del', KEYS[1])
        notify(ARGV[7], KEYS[3], ARGV[8])
    else
        redis.call('hset', KEYS[1], 'mode', 'read')
    end
    return 0
end
local left = nil
--#include settle
--#include notify_end

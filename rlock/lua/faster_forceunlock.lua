-- faster_forceunlock.lua: force-unlock a faster multilock (Redisson's
-- RedissonFasterMultiLock forceUnlockAsync): each of its values loses its
-- holder and the holder's fields, whoever holds it; the unlock message is
-- published on redisson_lock__channel:{group} in any case, as Redisson's.
-- (Redisson's script fails on a value that nobody holds; this skips it.)
-- KEYS[1]  the group hash
-- KEYS[2]  the unlock channel
-- ARGV[1]  unlock message ("0")
-- ARGV[2]  publish command: "publish", "spublish" or "both"
-- ARGV[3..] the value fields
-- Returns: 1 when any value was held, else 0.
--#include notify
--#include faster
local removed = 0
for i = 3, #ARGV do
    local v = ARGV[i]
    local holder = redis.call('hget', KEYS[1], v)
    if holder then
        redis.call('hdel', KEYS[1], v, expire_field(v, holder), count_field(v, holder))
        removed = removed + 1
    end
end
notify(ARGV[2], KEYS[2], ARGV[1])
if removed > 0 then
    return 1
end
return 0
--#include notify_end

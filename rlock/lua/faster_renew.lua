-- faster_renew.lua: renew a watchdog hold of a faster multilock (Redisson's
-- renewal/FastMultilockTask): if the holder still holds every value, each
-- value's expire_time is raised to now + lease and the key made to live at
-- least the lease. goredisson also checks that the holds have not expired
-- (Redisson renews a value still set to the holder even past its
-- expire_time).
-- KEYS[1]  the group hash
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  holder field
-- ARGV[3..] the value fields
-- Returns: 1 when renewed, 0 when the holds are gone (lost).
--#include faster
if redis.call('exists', KEYS[1]) == 0 then
    return 0
end
local now = now_ms()
local deadline = now + tonumber(ARGV[1])
for i = 3, #ARGV do
    if live_holder(KEYS[1], ARGV[i], now) ~= ARGV[2] then
        return 0
    end
end
for i = 3, #ARGV do
    local f = expire_field(ARGV[i], ARGV[2])
    if tonumber(redis.call('hget', KEYS[1], f)) < deadline then
        redis.call('hset', KEYS[1], f, deadline)
    end
end
local pttl = redis.call('pttl', KEYS[1])
if pttl >= 0 and pttl < tonumber(ARGV[1]) then
    redis.call('pexpire', KEYS[1], ARGV[1])
end
return 1

-- expire.lua: RedissonExpirable's expireAsync and expireAtAsync, on every
-- key of a lock or synchronizer at once (a fair lock's queue and timeout
-- set, a fenced lock's token counter, a PermitExpirableSemaphore's
-- {name}:timeout live and die with it, as Redisson's overrides list them).
-- KEYS[1], KEYS[2], ...  the object's keys
-- ARGV[1]  'pexpire' (ARGV[2] = time to live, ms) or
--          'pexpireat' (ARGV[2] = Unix time, ms)
-- ARGV[3]  '' or the condition: 'NX', 'XX', 'GT', 'LT' (Redis 7.0+)
-- Returns: 1 when the expiry of any key was set, else 0.
if ARGV[1] ~= 'pexpire' and ARGV[1] ~= 'pexpireat' then
    return redis.error_reply('expire.lua: unknown operation ' .. tostring(ARGV[1]))
end
local result = 0
for _, key in ipairs(KEYS) do
    local set
    if ARGV[3] ~= '' then
        set = redis.call(ARGV[1], key, ARGV[2], ARGV[3])
    else
        set = redis.call(ARGV[1], key, ARGV[2])
    end
    if set == 1 then
        result = 1
    end
end
return result

-- object.lua: the time-to-live operations Redisson's RExpirable gives a
-- synchronizer, on all of its keys at once (RedissonExpirable's
-- expireAsync and clearExpireAsync): a PermitExpirableSemaphore's counter
-- and its {name}:timeout live and die together.
-- KEYS[1], KEYS[2], ...  the synchronizer's keys
-- ARGV[1]  operation:
--          'expire'  ARGV[2]=ttl ms: PEXPIRE every key
--          'persist' PERSIST every key
-- Returns: 1 when the operation changed any key (a key that does not
--          exist is left alone), else 0.
local result = 0
for _, key in ipairs(KEYS) do
    local changed
    if ARGV[1] == 'expire' then
        changed = redis.call('pexpire', key, ARGV[2])
    elseif ARGV[1] == 'persist' then
        changed = redis.call('persist', key)
    else
        return redis.error_reply('object.lua: unknown operation ' .. tostring(ARGV[1]))
    end
    if changed == 1 then
        result = 1
    end
end
return result

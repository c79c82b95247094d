-- fenced_acquire.lua: take or re-enter a fenced lock (Redisson FencedLock):
-- the RLock layout plus a token counter incremented on every successful
-- acquisition, re-entries included.
-- KEYS[1]  the lock hash (the lock name itself)
-- KEYS[2]  this attempt's marker (see acquire.lua): "h:<token>" once held
-- KEYS[3]  the token counter, redisson_lock_token:{name}
-- ARGV[1]  lease in milliseconds (PEXPIRE of the whole key)
-- ARGV[2]  holder field "<client id>:<owner id>"
-- Returns: {1, token} when held (the field's count is +1 and token is the
--          counter's new value); otherwise {0, pttl} (-1: no expiry), or
--          {0, -3} when the attempt was cancelled before it arrived.
local marker = redis.call('get', KEYS[2])
if marker then
    if string.sub(marker, 1, 2) == 'h:' then
        return {1, tonumber(string.sub(marker, 3))}
    end
    return {0, -3}
end
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    local token = redis.call('incr', KEYS[3])
    redis.call('set', KEYS[2], 'h:' .. token, 'px', 10000)
    return {1, token}
end
return {0, redis.call('pttl', KEYS[1])}

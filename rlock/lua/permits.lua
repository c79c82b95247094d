-- permits.lua: the operations of a PermitExpirableSemaphore (Redisson's
-- RedissonPermitExpirableSemaphore): a counter of available permits under
-- the name, and the permits taken in the sorted set {name}:timeout, member
-- = the permit id (its 16 bytes, of which the id string is the hex dump),
-- score = the millisecond it expires (922337203685477: never). Expired
-- permits are swept back into the counter by every operation; changes
-- publish the permits available on redisson_sc:{name}. Times are the Redis
-- server's (TIME); Redisson uses its own clock, up to the clocks' offset.
-- KEYS[1]  the semaphore (a counter)
-- KEYS[2]  the permits taken, {name}:timeout
-- KEYS[3]  the channel, redisson_sc:{name}
-- KEYS[4]  the cancel floor, goredisson_cancel:{name} (goredisson's own: a
--          hash of permit ids whose acquire's reply was lost)
-- ARGV[1]  operation:
--          'acquire' ARGV[3]=permit id bytes, ARGV[4]=lease ms (<= 0:
--                    never expires): take one permit; returns 1 when taken;
--                    else the ms until the nearest permit expires, or -1
--                    when none will (-3: the call was cancelled by a settle)
--          'release' ARGV[3]=permit id bytes: give the permit back; returns
--                    1, or 0 when the id was unknown or had expired
--          'settle'  ARGV[3]=permit id bytes: an acquire whose reply was
--                    lost: it does nothing if it still arrives, and a permit
--                    it took is given back; returns 1 when one was
--          'available' returns the permits available
--          'set'     ARGV[3]=n: set the permits if there are none yet;
--                    returns 1 when set, else 0
-- ARGV[2]  publish command: "publish" or "spublish"
-- Returns: what each operation above says.
local never = 922337203685477
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function sweep()
    local expired = redis.call('zrangebyscore', KEYS[2], 0, now)
    if #expired > 0 then
        redis.call('zrem', KEYS[2], unpack(expired))
        local value = redis.call('incrby', KEYS[1], #expired)
        if value > 0 then
            redis.call(ARGV[2], KEYS[3], value)
        end
    end
end
local op = ARGV[1]
if op == 'acquire' then
    if redis.call('hexists', KEYS[4], ARGV[3]) == 1 then
        return -3
    end
    sweep()
    local value = redis.call('get', KEYS[1])
    if value ~= false and tonumber(value) >= 1 then
        redis.call('decrby', KEYS[1], 1)
        local expires = never
        if tonumber(ARGV[4]) > 0 then
            expires = now + tonumber(ARGV[4])
        end
        redis.call('zadd', KEYS[2], expires, ARGV[3])
        local ttl = redis.call('pttl', KEYS[1])
        if ttl > 0 then
            redis.call('pexpire', KEYS[2], ttl)
        end
        return 1
    end
    local nearest = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
    if nearest[1] ~= nil and tonumber(nearest[2]) ~= never then
        return math.max(0, tonumber(nearest[2]) - now)
    end
    return -1
elseif op == 'release' or op == 'settle' then
    if op == 'settle' then
        redis.call('hset', KEYS[4], ARGV[3], 1)
        redis.call('pexpire', KEYS[4], 60000)
    end
    local expires = redis.call('zscore', KEYS[2], ARGV[3])
    if redis.call('zrem', KEYS[2], ARGV[3]) ~= 1 then
        return 0
    end
    local value = redis.call('incrby', KEYS[1], 1)
    redis.call(ARGV[2], KEYS[3], value)
    if op == 'release' and tonumber(expires) <= now then
        return 0
    end
    return 1
elseif op == 'available' then
    sweep()
    return tonumber(redis.call('get', KEYS[1]) or '0')
elseif op == 'set' then
    if redis.call('get', KEYS[1]) == false then
        redis.call('set', KEYS[1], ARGV[3])
        redis.call(ARGV[2], KEYS[3], ARGV[3])
        return 1
    end
    return 0
end
return redis.error_reply('permits.lua: unknown operation ' .. tostring(op))

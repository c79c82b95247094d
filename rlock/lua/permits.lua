-- permits.lua: the operations of a PermitExpirableSemaphore (Redisson's
-- RedissonPermitExpirableSemaphore): a counter of available permits under
-- the name, and the permits taken in the sorted set {name}:timeout, member
-- = the permit id (its 16 bytes, of which the id string is the hex dump),
-- score = the millisecond it expires (922337203685477: never). Expired
-- permits are swept back into the counter as Redisson's operations do;
-- changes publish on redisson_sc:{name} what Redisson's publish (mostly the
-- permits now available). Times are the Redis server's (TIME); Redisson
-- uses its own clock, up to the clocks' offset.
-- KEYS[1]  the semaphore (a counter)
-- KEYS[2]  the permits taken, {name}:timeout
-- KEYS[3]  the channel, redisson_sc:{name}
-- KEYS[4]  the cancel floor, goredisson_cancel:{name} (goredisson's own: a
--          hash of the first permit id of acquires whose reply was lost)
-- ARGV[1]  operation:
--          'acquire' ARGV[3]=n, ARGV[4]=lease ms (<= 0: never expires),
--                    ARGV[5..]=the n permit ids' bytes: take n permits at
--                    once (after sweeping at most n expired ones back, as
--                    Redisson); returns 'OK' when taken (as Redisson's: not
--                    an integer, which a refusal 1 ms from the nearest
--                    expiry also is); else the ms until the nearest permit
--                    expires, or -1 when none will (-3: the call was
--                    cancelled by a settle)
--          'release' ARGV[3]=permit id bytes: give the permit back
--                    (Redisson's tryRelease(id)); returns 1, or 0 when the
--                    id was unknown, or had expired (it is put back then)
--          'releasemany' ARGV[3..]=permit ids' bytes: give them all back
--                    (Redisson's tryRelease(List)): only if every one is
--                    held and unexpired, else nothing changes; returns how
--                    many it gave back (0: none)
--          'settle'  ARGV[3..]=permit ids' bytes of an acquire whose reply
--                    was lost: it does nothing if it still arrives, and the
--                    permits it took are given back; returns how many were
--          'available' returns the permits available
--          'permits' returns the permits: available + taken (0 when the
--                    semaphore does not exist)
--          'acquired' returns the permits taken
--          'set'     ARGV[3]=n: set the permits if there are none yet;
--                    returns 1 when set, else 0
--          'setpermits' ARGV[3]=n: make the permits (available + taken)
--                    n, by adding the difference to those available;
--                    returns 1
--          'add'     ARGV[3]=n: add n available permits (n < 0 removes);
--                    returns 1
--          'update'  ARGV[3]=permit id bytes, ARGV[4]=lease ms (<= 0:
--                    never expires): set the permit's lease from now;
--                    returns 1, or 0 when it is unknown or expired
--          'leasetime' ARGV[3]=permit id bytes: returns the permit's
--                    remaining lease in ms, -1 when it never expires, -2
--                    when it is unknown or expired
-- ARGV[2]  publish command: "publish", "spublish" or "both"
-- Returns: what each operation above says.
--#include notify
local never = 922337203685477
-- Permits stay within +-(2^53-1), the integers a Lua number carries
-- exactly: a sum beyond is refused before anything is written.
local function out_of_range(v)
    if v > 9007199254740991 or v < -9007199254740991 then
        return redis.error_reply('ERR goredisson: permits out of range: ' ..
            string.format('%.0f', v) .. ' is beyond +-(2^53-1)')
    end
    return nil
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- sweep puts up to limit (-1: all) expired permits back and publishes the
-- permits then available, as Redisson's operations do first.
local function sweep(limit)
    local expired = redis.call('zrangebyscore', KEYS[2], 0, now, 'limit', 0, limit)
    if #expired > 0 then
        redis.call('zrem', KEYS[2], unpack(expired))
        local value = redis.call('incrby', KEYS[1], #expired)
        if value > 0 then
            notify(ARGV[2], KEYS[3], value)
        end
        return value
    end
    return nil
end
local function expiry(lease)
    if tonumber(lease) > 0 then
        return now + tonumber(lease)
    end
    return never
end
local function taken()
    return redis.call('zcount', KEYS[2], 0, '+inf')
end
local op = ARGV[1]
if op == 'acquire' then
    if redis.call('hexists', KEYS[4], ARGV[5]) == 1 then
        return -3
    end
    local n = tonumber(ARGV[3])
    sweep(n)
    local value = redis.call('get', KEYS[1])
    if value ~= false and tonumber(value) >= n then
        redis.call('decrby', KEYS[1], n)
        local expires = expiry(ARGV[4])
        for i = 5, #ARGV do
            redis.call('zadd', KEYS[2], expires, ARGV[i])
        end
        local ttl = redis.call('pttl', KEYS[1])
        if ttl > 0 then
            redis.call('pexpire', KEYS[2], ttl)
        end
        return 'OK'
    end
    local nearest = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
    if nearest[1] ~= nil and tonumber(nearest[2]) ~= never then
        return math.max(0, tonumber(nearest[2]) - now)
    end
    return -1
elseif op == 'release' then
    local expires = redis.call('zscore', KEYS[2], ARGV[3])
    if redis.call('zrem', KEYS[2], ARGV[3]) ~= 1 then
        return 0
    end
    local value = redis.call('incrby', KEYS[1], 1)
    notify(ARGV[2], KEYS[3], value)
    if tonumber(expires) <= now then
        return 0
    end
    return 1
elseif op == 'releasemany' then
    for i = 3, #ARGV do
        local expires = redis.call('zscore', KEYS[2], ARGV[i])
        if expires == false or tonumber(expires) <= now then
            return 0
        end
    end
    sweep(-1)
    local ids = {}
    for i = 3, #ARGV do
        table.insert(ids, ARGV[i])
    end
    local removed = redis.call('zrem', KEYS[2], unpack(ids))
    redis.call('incrby', KEYS[1], removed)
    notify(ARGV[2], KEYS[3], removed)
    return removed
elseif op == 'settle' then
    redis.call('hset', KEYS[4], ARGV[3], 1)
    redis.call('pexpire', KEYS[4], 60000)
    local ids = {}
    for i = 3, #ARGV do
        table.insert(ids, ARGV[i])
    end
    local removed = redis.call('zrem', KEYS[2], unpack(ids))
    if removed > 0 then
        local value = redis.call('incrby', KEYS[1], removed)
        notify(ARGV[2], KEYS[3], value)
    end
    return removed
elseif op == 'available' then
    local value = sweep(-1)
    if value ~= nil then
        return value
    end
    return tonumber(redis.call('get', KEYS[1]) or '0')
elseif op == 'permits' then
    sweep(-1)
    local available = redis.call('get', KEYS[1])
    if available == false then
        return 0
    end
    return tonumber(available) + taken()
elseif op == 'acquired' then
    sweep(-1)
    return taken()
elseif op == 'set' then
    if redis.call('get', KEYS[1]) == false then
        redis.call('set', KEYS[1], ARGV[3])
        notify(ARGV[2], KEYS[3], ARGV[3])
        return 1
    end
    return 0
elseif op == 'setpermits' then
    local available = redis.call('get', KEYS[1])
    if available == false then
        redis.call('set', KEYS[1], ARGV[3])
        notify(ARGV[2], KEYS[3], ARGV[3])
        return 1
    end
    local permits = taken() + tonumber(available)
    local refused = out_of_range(tonumber(ARGV[3]) - permits) or out_of_range(tonumber(ARGV[3]) - taken())
    if refused then
        return refused
    end
    if permits ~= tonumber(ARGV[3]) then
        redis.call('incrby', KEYS[1], tonumber(ARGV[3]) - permits)
        notify(ARGV[2], KEYS[3], ARGV[3])
    end
    return 1
elseif op == 'add' then
    local value = tonumber(redis.call('get', KEYS[1]) or '0')
    local refused = out_of_range(value + tonumber(ARGV[3])) or out_of_range(value + tonumber(ARGV[3]) + taken())
    if refused then
        return refused
    end
    redis.call('set', KEYS[1], value + tonumber(ARGV[3]))
    if tonumber(ARGV[3]) > 0 then
        notify(ARGV[2], KEYS[3], ARGV[3])
    end
    return 1
elseif op == 'update' then
    sweep(-1)
    if redis.call('zscore', KEYS[2], ARGV[3]) ~= false then
        redis.call('zadd', KEYS[2], expiry(ARGV[4]), ARGV[3])
        return 1
    end
    return 0
elseif op == 'leasetime' then
    sweep(-1)
    local expires = redis.call('zscore', KEYS[2], ARGV[3])
    if expires == false then
        return -2
    end
    if tonumber(expires) == never then
        return -1
    end
    return tonumber(expires) - now
end
return redis.error_reply('permits.lua: unknown operation ' .. tostring(op))
--#include notify_end

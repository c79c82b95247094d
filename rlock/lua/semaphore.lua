-- semaphore.lua: the operations of a Semaphore (Redisson's
-- RedissonSemaphore): a string counter of available permits under the name,
-- and its channel redisson_sc:{name}, on which every release, set and add
-- publishes the permits now available (a waiter wakes for each).
-- KEYS[1]  the semaphore (a counter)
-- KEYS[2]  the channel, redisson_sc:{name}
-- ARGV[1]  operation:
--          'acquire' ARGV[2]=n: take n permits if that many are available;
--                    returns 1 when taken, else 0
--          'release' ARGV[2]=n: give n permits back; returns the permits now
--                    available
--          'releaseifexists' ARGV[2]=n: as 'release' when the semaphore
--                    exists; returns 1 when it did, else 0 (and does
--                    nothing)
--          'set'     ARGV[2]=n: set the permits if the semaphore has none
--                    yet; returns 1 when set, else 0
--          'setttl'  ARGV[2]=n, ARGV[4]=ttl ms: as 'set', the key living ttl
--          'add'     ARGV[2]=n: add n permits (n < 0 removes); returns the
--                    permits now available
--          'drain'   take every available permit and set the count to 0;
--                    returns the count it found (Redisson's drainPermits:
--                    a negative count is returned as is, and reset to 0)
-- ARGV[3]  publish command: "publish", "spublish" or "both"
-- Returns: what each operation above says.
--#include notify
local op, n = ARGV[1], tonumber(ARGV[2])
-- Permits stay within ±(2^53-1), the integers a Lua number carries
-- exactly: a sum beyond is refused before anything is written.
local function out_of_range(v)
    if v > 9007199254740991 or v < -9007199254740991 then
        return redis.error_reply('ERR goredisson: permits out of range: ' ..
            string.format('%.0f', v) .. ' is beyond +-(2^53-1)')
    end
    return nil
end
if op == 'acquire' then
    local value = redis.call('get', KEYS[1])
    if value ~= false and tonumber(value) >= n then
        redis.call('decrby', KEYS[1], n)
        return 1
    end
    return 0
elseif op == 'release' or op == 'releaseifexists' then
    if op == 'releaseifexists' and redis.call('exists', KEYS[1]) == 0 then
        return 0
    end
    local refused = out_of_range(tonumber(redis.call('get', KEYS[1]) or '0') + n)
    if refused then
        return refused
    end
    local value = redis.call('incrby', KEYS[1], n)
    notify(ARGV[3], KEYS[2], value)
    if op == 'releaseifexists' then
        return 1
    end
    return value
elseif op == 'set' or op == 'setttl' then
    if redis.call('get', KEYS[1]) == false then
        if op == 'setttl' then
            redis.call('set', KEYS[1], n, 'px', ARGV[4])
        else
            redis.call('set', KEYS[1], n)
        end
        notify(ARGV[3], KEYS[2], n)
        return 1
    end
    return 0
elseif op == 'add' then
    local value = tonumber(redis.call('get', KEYS[1]) or '0') + n
    local refused = out_of_range(value)
    if refused then
        return refused
    end
    redis.call('set', KEYS[1], value)
    notify(ARGV[3], KEYS[2], value)
    return value
elseif op == 'drain' then
    local value = redis.call('get', KEYS[1])
    if value == false then
        return 0
    end
    redis.call('set', KEYS[1], 0)
    return tonumber(value)
end
return redis.error_reply('semaphore.lua: unknown operation ' .. tostring(op))
--#include notify_end

-- lib/faster.lua: helpers shared by the faster multilock scripts
-- ("--#include faster"): Redisson's RedissonFasterMultiLock layout. One hash
-- (KEYS[1], the group) holds, for each locked value's field v (the value's
-- HighwayHash, computed by the client), v = the holder's field
-- "<client id>:<owner>", and the holder's "v:<holder>:expire_time" (the
-- hold's deadline in ms) and "v:<holder>:lock_count" (its re-entries). A
-- value's hold ends at its expire_time, whatever the key's own expiry (which
-- only grows, to the longest lease in the hash). Times are the Redis
-- server's (TIME); Redisson passes its own clock's time, so Java and Go
-- agree up to the clocks' offset.

local function now_ms()
    local t = redis.call('time')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function expire_field(v, holder)
    return v .. ':' .. holder .. ':expire_time'
end

local function count_field(v, holder)
    return v .. ':' .. holder .. ':lock_count'
end

-- live_holder returns the holder of value field v whose hold has not
-- expired at now, and its deadline; nil when v is free.
local function live_holder(key, v, now)
    local holder = redis.call('hget', key, v)
    if not holder then
        return nil
    end
    local deadline = redis.call('hget', key, expire_field(v, holder))
    if deadline and tonumber(deadline) >= now then
        return holder, tonumber(deadline)
    end
    return nil
end

-- complete_holds returns how many complete holds holder has on the values
-- ARGV[first..]: the smallest lock_count over them, 0 unless it holds every
-- one of them unexpired.
local function complete_holds(key, holder, first, now)
    local n = nil
    for i = first, #ARGV do
        if live_holder(key, ARGV[i], now) ~= holder then
            return 0
        end
        local c = tonumber(redis.call('hget', key, count_field(ARGV[i], holder)) or '0')
        if n == nil or c < n then
            n = c
        end
    end
    return n or 0
end

-- extend_key makes the key live at least lease ms (it never shortens it).
local function extend_key(key, lease)
    local pttl = redis.call('pttl', key)
    if pttl > 0 and tonumber(lease) > pttl then
        redis.call('pexpire', key, lease)
    end
end

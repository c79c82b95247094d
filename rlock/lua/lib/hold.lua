-- lib/hold.lua: one holder's count in a lock hash (KEYS[1], field ARGV[2]),
-- shared by the release scripts ("--#include hold", after lib/lease.lua);
-- lib/settle.lua relies on holds().

-- holds returns the holder's current hold count (0 when it holds none).
local function holds()
    return tonumber(redis.call('hget', KEYS[1], ARGV[2]) or '0')
end

-- count_down drops one hold with Redisson's HINCRBY -1 and, while holds
-- remain, extends the key to at least lease (lib/lease.lua: 0 leaves it;
-- Redisson sets it); it returns the holds left, or -1 when the holder held
-- none. At 0 the caller does what its lock kind does with the last hold.
local function count_down(lease)
    if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
        return -1
    end
    local n = redis.call('hincrby', KEYS[1], ARGV[2], -1)
    if n > 0 then
        extend_to(lease)
    end
    return n
end

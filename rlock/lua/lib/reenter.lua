-- lib/reenter.lua: a holder's re-entry ("--#include reenter"), shared by
-- the acquire scripts: KEYS[1] the lock hash, ARGV[2] the holder's field.
--
-- reenter adds one hold, as Redisson's HINCRBY does, and returns the count.
-- known is the holds the client counts for the holder: when Redis has more
-- (holds the client took for lost, its local deadline having passed while
-- the key lived on), they are dropped (HSET known + 1), so that the
-- holder's next Unlocks free the lock instead of leaving it held.
local function reenter(known)
    local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    local want = tonumber(known) + 1
    if n > want then
        redis.call('hset', KEYS[1], ARGV[2], want)
        return want
    end
    return n
end

-- faster_read.lua: what a faster multilock's values say, read in one script
-- (Redisson's RedissonFasterMultiLock isLocked and isHeldByThread, and what
-- goredisson adds: hold count and remaining lease). Changes nothing.
-- KEYS[1]  the group hash
-- ARGV[1]  operation:
--          'locked' 1 when any value is held (unexpired) by anyone, else 0
--          'holds'  ARGV[2]=holder field: its complete holds (0 unless it
--                   holds every value)
--          'ttl'    the ms until the latest deadline among the values'
--                   holds; -2 when none is held
-- ARGV[2]  holder field (for 'holds'), else ""
-- ARGV[3..] the value fields
-- Returns: what each operation above says.
--#include faster
local now = now_ms()
local op = ARGV[1]
if op == 'holds' then
    return complete_holds(KEYS[1], ARGV[2], 3, now)
end
local latest = -1
for i = 3, #ARGV do
    local holder, deadline = live_holder(KEYS[1], ARGV[i], now)
    if holder then
        if op == 'locked' then
            return 1
        end
        if deadline > latest then
            latest = deadline
        end
    end
end
if op == 'locked' then
    return 0
elseif op == 'ttl' then
    if latest == -1 then
        return -2
    end
    return latest - now
end
return redis.error_reply('faster_read.lua: unknown operation ' .. tostring(op))

-- extend.lua: set the remaining lease of a holder's hold (Lock.Extend, a
-- fixed lease; goredisson's own, Redisson has no such call): the whole key
-- for every kind but the read side of a read-write lock, where the holder's
-- read timeout keys get the lease and the hash lives as long as the
-- longest read hold left (as Redisson's read unlock computes it).
-- KEYS[1]  the lock hash
-- KEYS[2]  the holder's read timeout prefix (read side only; else unused)
-- ARGV[1]  lease in ms
-- ARGV[2]  holder field
-- ARGV[3]  "read" for the read side, else ""
-- ARGV[4]  the key prefix of every holder's timeout keys (read side only)
-- Returns: 1 when the holder holds the lock and the lease was set, else 0.
local count = tonumber(redis.call('hget', KEYS[1], ARGV[2]) or '0')
if count < 1 then
    return 0
end
if ARGV[3] ~= 'read' then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return 1
end
for i = count, 1, -1 do
    redis.call('set', KEYS[2] .. ':' .. i, 1, 'px', ARGV[1])
end
local longest = tonumber(ARGV[1])
for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
    local n = tonumber(redis.call('hget', KEYS[1], field))
    if type(n) == 'number' and field ~= ARGV[2] then
        for i = n, 1, -1 do
            longest = math.max(longest, redis.call('pttl', ARGV[4] .. ':' .. field .. ':rwlock_timeout:' .. i))
        end
    end
end
redis.call('pexpire', KEYS[1], longest)
return 1

-- The watchdog's batched read renewal (ReadLockTask). KEYS come in pairs:
-- the lock hash and its key prefix ("{name}"). ARGV[1] lease ms, then per
-- pair: the number of reader fields renewed by this client, and the fields.
-- Each live field's timeout keys, and then the hash, get the lease again.
-- Reply: a list with 1 (some field alive) or 0 per pair.
local out = {}
local at = 2
for i = 1, #KEYS, 2 do
    local alive = false
    local fields = tonumber(ARGV[at])
    at = at + 1
    for _ = 1, fields do
        local levels = redis.call('hget', KEYS[i], ARGV[at])
        if levels ~= false then
            alive = true
            for n = tonumber(levels), 1, -1 do
                redis.call('pexpire', KEYS[i + 1] .. ':' .. ARGV[at] .. ':rwlock_timeout:' .. n, ARGV[1])
            end
        end
        at = at + 1
    end
    if alive then
        redis.call('pexpire', KEYS[i], ARGV[1])
    end
    table.insert(out, alive and 1 or 0)
end
return out

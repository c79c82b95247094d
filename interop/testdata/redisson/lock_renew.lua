-- The watchdog's batched renewal (LockTask): one field per lock key.
-- KEYS[i] lock hash.  ARGV[1] lease ms, ARGV[i+1] the field of KEYS[i].
-- Reply: a list with 1 (renewed) or 0 (the field holds nothing) per key.
local out = {}
for i, key in ipairs(KEYS) do
    local alive = redis.call('hexists', key, ARGV[i + 1]) == 1
    if alive then
        redis.call('pexpire', key, ARGV[1])
    end
    out[i] = alive and 1 or 0
end
return out

-- cancel.lua: settle an acquire attempt whose reply never came (the caller's
-- context ended, or the connection failed after the script was sent).
-- First it marks the attempt cancelled, so acquire.lua turns it into a no-op
-- should it still arrive. Then, if the attempt did take a hold (the field's
-- count is above what the caller knew it held), that hold is given back.
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel
-- KEYS[3]  the attempt's cancel marker (same key acquire.lua checks)
-- ARGV[1]  holder field "<client id>:<owner id>"
-- ARGV[2]  holds the caller knew it had before the attempt
-- ARGV[3]  unlock message ("0")
-- ARGV[4]  publish command: "publish" or "spublish"
-- ARGV[5]  marker TTL in ms (longer than any retry of the attempt)
-- Returns: 1 when the attempt had taken a hold and it was given back, else 0.
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]) or '0')
if count <= tonumber(ARGV[2]) then
    return 0
end
if count > 1 then
    redis.call('hincrby', KEYS[1], ARGV[1], -1)
    return 1
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[3])
return 1

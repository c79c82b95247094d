-- cancel.lua: settle an acquire attempt whose reply never came (the caller's
-- context ended, or the connection failed after the script was sent).
-- It marks the attempt cancelled, so that acquire.lua turns it into a no-op
-- should it still arrive; if the attempt had already taken its hold (its
-- marker says "h"), that one hold is given back. Markers of taken holds live
-- 10 s; when it is gone, a hold beyond what the caller knew it held
-- (ARGV[5]) is taken to be the attempt's.
-- KEYS[1]  the lock hash
-- KEYS[2]  the unlock channel
-- KEYS[3]  the attempt's marker (same key acquire.lua sets and checks)
-- ARGV[1]  holder field "<client id>:<owner id>"
-- ARGV[2]  unlock message ("0")
-- ARGV[3]  publish command: "publish" or "spublish"
-- ARGV[4]  marker TTL in ms (longer than any retry of the attempt)
-- ARGV[5]  holds the caller knew it had before the attempt
-- Returns: 1 when the attempt had taken a hold and it was given back, else 0.
local marker = redis.call('get', KEYS[3])
redis.call('set', KEYS[3], 'c', 'px', ARGV[4])
local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]) or '0')
if marker == 'c' or count == 0 or (marker ~= 'h' and count <= tonumber(ARGV[5])) then
    return 0
end
if count > 1 then
    redis.call('hincrby', KEYS[1], ARGV[1], -1)
    return 1
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[2])
return 1

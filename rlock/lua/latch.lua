-- latch.lua: the operations of a CountDownLatch (Redisson's
-- RedissonCountDownLatch): a counter under the name, and its channel
-- redisson_countdownlatch__channel__{name}: "0" when the count reaches
-- zero (every waiter goes on), "1" when a count is set, and, as Redisson's
-- delete does, when the latch is deleted.
-- KEYS[1]  the latch (a counter)
-- KEYS[2]  the channel
-- ARGV[1]  operation:
--          'countdown' count down by one; at zero (or below) the key is
--                      deleted, and "0" published when it reached zero;
--                      returns the count left
--          'set'       ARGV[3]=n: set the count if the latch has no key;
--                      returns 1 when set, else 0
--          'delete'    delete the latch; returns 1 when it existed (and
--                      "1" was published), else 0
-- ARGV[2]  publish command: "publish", "spublish" or "both"
-- Returns: what each operation above says.
--#include notify
local op = ARGV[1]
if op == 'countdown' then
    local v = redis.call('decr', KEYS[1])
    if v <= 0 then
        redis.call('del', KEYS[1])
    end
    if v == 0 then
        notify(ARGV[2], KEYS[2], '0')
    end
    return v
elseif op == 'set' then
    if redis.call('exists', KEYS[1]) == 0 then
        redis.call('set', KEYS[1], ARGV[3])
        notify(ARGV[2], KEYS[2], '1')
        return 1
    end
    return 0
elseif op == 'delete' then
    if redis.call('del', KEYS[1]) == 1 then
        notify(ARGV[2], KEYS[2], '1')
        return 1
    end
    return 0
end
return redis.error_reply('latch.lua: unknown operation ' .. tostring(op))
--#include notify_end

-- release.lua: drop one hold of a reentrant lock (RLock, FencedLock,
-- SpinLock); the last one deletes the lock and publishes the unlock message
-- (not for a SpinLock), as Redisson's unlockInnerAsync does (the same
-- effects with one command fewer: the last hold deletes the key without a
-- count-down first). Redisson's unlock latch is not written: a lost reply is
-- settled instead (lib/settle.lua).
-- KEYS[1]  the lock hash            KEYS[2]  the cancel floor
-- KEYS[3]  the unlock channel, redisson_lock__channel:{name}
-- ARGV[1..5] see lib/settle.lua (mode, field, call number, known holds,
--          cancel floor TTL)
-- ARGV[6]  lease in ms, re-applied while holds remain
-- ARGV[7]  publish command: "publish", "spublish", or "" (SpinLock: none)
-- ARGV[8]  unlock message ("0")
-- Returns: see lib/settle.lua.
--#include cancel
local function holds()
    return tonumber(redis.call('hget', KEYS[1], ARGV[2]) or '0')
end
local function release()
    local n = holds()
    if n == 0 then
        return -1
    end
    if n > 1 then
        redis.call('hincrby', KEYS[1], ARGV[2], -1)
        redis.call('pexpire', KEYS[1], ARGV[6])
        return n - 1
    end
    redis.call('del', KEYS[1])
    if ARGV[7] ~= '' then
        redis.call(ARGV[7], KEYS[3], ARGV[8])
    end
    return 0
end
local left = nil
--#include settle

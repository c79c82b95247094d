-- release.lua: drop one hold of a reentrant lock (RLock, FencedLock,
-- SpinLock); the last one deletes the lock and publishes the unlock message
-- (not for a SpinLock), as Redisson's unlockInnerAsync does, with the same
-- commands in the same order (HINCRBY -1, then DEL at zero), so a keyspace
-- watcher sees a release as the hincrby/del pair Redisson produces and a
-- force unlock as a bare del. Redisson's unlock latch is not written: a lost
-- reply is settled instead (lib/settle.lua).
-- KEYS[1]  the lock hash            KEYS[2]  the cancel floor
-- KEYS[3]  the unlock channel, redisson_lock__channel:{name}
-- ARGV[1..5] see lib/settle.lua (mode, field, call number, known holds,
--          cancel floor TTL)
-- ARGV[6]  lease in ms the key keeps at least while holds remain (0: as
--          it is; lib/lease.lua)
-- ARGV[7]  publish command: "publish", "spublish", or "" (SpinLock: none)
-- ARGV[8]  unlock message ("0")
-- Returns: see lib/settle.lua.
--#include notify
--#include cancel
--#include lease
--#include hold
local function release()
    local n = count_down(ARGV[6])
    if n ~= 0 then
        return n
    end
    redis.call('del', KEYS[1])
    if ARGV[7] ~= '' then
        notify(ARGV[7], KEYS[3], ARGV[8])
    end
    return 0
end
local left = nil
--#include settle
--#include notify_end

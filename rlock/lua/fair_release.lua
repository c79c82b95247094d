-- fair_release.lua: drop one hold of a fair lock (Redisson's
-- RedissonFairLock unlock); the last one deletes it and wakes only the
-- waiter at the head of the queue, on its own channel. Also the give-up of a
-- waiter that stops waiting (mode 'g', Redisson's acquireFailed plus a wake
-- of the new head when the lock is free) and the settles of lib/settle.lua.
-- Unlike Redisson, an unlock of a lock nobody holds answers "not held"
-- (Redisson answers success); both wake the head waiter.
-- KEYS[1]  the lock hash            KEYS[2]  the cancel floor
-- KEYS[3]  the unlock channel, redisson_lock__channel:{name}; a waiter's own
--          channel is this plus ":<field>"
-- KEYS[4]  the queue                KEYS[5]  the timeouts
-- ARGV[1..5] see lib/settle.lua; ARGV[1] may also be 'g': give up waiting
-- ARGV[6]  lease in ms the key keeps at least while holds remain (0: as
--          it is; lib/lease.lua)
-- ARGV[7]  publish command: "publish", "spublish" or "both"
-- ARGV[8]  unlock message ("0")
-- ARGV[9]  threadWaitTime in ms of the waiter that gives up
-- Returns: see lib/settle.lua; 0 for 'g'.
--#include notify
--#include cancel
--#include fair_queue
--#include lease
--#include hold
local function release()
    purge(KEYS[4], KEYS[5], now_ms())
    if redis.call('exists', KEYS[1]) == 0 then
        wake_head(KEYS[4], KEYS[3], ARGV[7], ARGV[8])
        return -1
    end
    local n = count_down(ARGV[6])
    if n ~= 0 then
        return n
    end
    redis.call('del', KEYS[1])
    wake_head(KEYS[4], KEYS[3], ARGV[7], ARGV[8])
    return 0
end
local function left()
    give_up(KEYS[1], KEYS[4], KEYS[5], KEYS[3], ARGV[2], ARGV[9], ARGV[7], ARGV[8])
end
if ARGV[1] == 'g' then
    left()
    return 0
end
--#include settle
--#include notify_end

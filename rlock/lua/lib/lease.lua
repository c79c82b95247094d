-- lib/lease.lua: a hold's lease on the lock key (KEYS[1]), shared by the
-- acquire and release scripts ("--#include lease").
--
-- Redisson's re-entry and release set the key's expiry to the lease they are
-- given (PEXPIRE), so a short fixed lease on a re-entry, or the last lease
-- re-applied by a partial unlock, can cut the lease an outer hold of the
-- same owner still needs, and the lock expires while its owner holds it.
-- goredisson's scripts only ever extend a holder's own key: the lease
-- covers what every remaining hold of the owner needs. (A watchdog-managed
-- hold is renewed by renew.lua, which sets the lease as Redisson's does.)

-- extend_to makes the lock key live at least ms more (ms <= 0: as long as
-- it does now). It sends PEXPIRE as Redisson's scripts do, so a keyspace
-- watcher sees the same events, with the longer of the two leases.
local function extend_to(ms)
    local target = math.max(redis.call('pttl', KEYS[1]), tonumber(ms))
    if target > 0 then
        redis.call('pexpire', KEYS[1], target)
    end
end

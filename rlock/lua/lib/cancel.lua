-- lib/cancel.lua: the cancel floor, goredisson's own key (Redisson has none).
-- A script's line "--#include cancel" is replaced by this text when the
-- script is loaded (see scripts.go); it never runs on its own.
--
-- goredisson numbers every acquire and release it sends; a client never
-- resends one (go-redis does not retry them), so each runs at most once. When
-- a reply is lost (the caller's context ended, the connection broke), the
-- client settles the call: it raises the holder's cancel floor to the call's
-- number, so that the call does nothing should it still arrive, and repairs
-- the hold count in the same script (lib/settle.lua). The floor is a hash
-- goredisson_cancel:{name}, field = holder field, value = highest cancelled
-- number; it is written only by settles and lives a minute.
--
-- A call that went out on a connection the client can close on the server
-- (CLIENT KILL ID: a lost one is fenced that way before its settle, see
-- docs/layout.md) carries its number as "f<n>" and reads no floor: the
-- uncontended acquire and release then run only Redisson's commands.

-- cancelled reports whether the call numbered n of holder field was
-- cancelled by a settle ("f<n>": fenced by its connection, never).
local function cancelled(key, field, n)
    if string.byte(n, 1) == 102 then
        return false
    end
    local floor = redis.call('hget', key, field)
    return floor ~= false and tonumber(floor) >= tonumber(n)
end

-- cancel raises the holder's floor to n (it never lowers it) for ttl ms.
local function cancel(key, field, n, ttl)
    local floor = redis.call('hget', key, field)
    if floor == false or tonumber(floor) < tonumber(n) then
        redis.call('hset', key, field, n)
    end
    redis.call('pexpire', key, ttl)
end

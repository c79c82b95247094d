-- lib/notify.lua: publishing that cannot undo a script's reply. A script
-- that publishes starts with "--#include notify" (before its other
-- includes) and ends with "--#include notify_end": its body then runs as a
-- function, and notify() publishes through redis.pcall, so that a publish
-- the server refuses (an ACL user without the channel: "ERR The user
-- executing the script can't publish to the channel ...") neither aborts
-- the script after its writes nor turns their reply into an error. The
-- reply is then {'goredisson:unpublished', '<channel>: <error>', reply};
-- the client takes the reply out of it and logs a warning (see op.finish).
local unpublished = nil

-- publish_one publishes message on channel with cmd; a refusal is
-- recorded, not raised.
local function publish_one(cmd, channel, message)
    local r = redis.pcall(cmd, channel, message)
    if type(r) == 'table' and r.err and unpublished == nil then
        unpublished = channel .. ': ' .. r.err
    end
end

-- notify publishes message on channel with cmd: PUBLISH, SPUBLISH, or
-- "both": PUBLISH then SPUBLISH (for listeners of either kind; the two
-- copies reach a subscriber of both kinds next to each other).
local function notify(cmd, channel, message)
    if cmd == 'both' then
        publish_one('publish', channel, message)
        publish_one('spublish', channel, message)
        return
    end
    publish_one(cmd, channel, message)
end

local reply = (function()

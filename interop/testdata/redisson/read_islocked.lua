-- The read side's isLocked: read mode, or write mode with read holds
-- besides the writer's field ("mode" + writer + at least one more).
-- KEYS[1] lock hash.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == 'read' or (mode == 'write' and redis.call('hlen', KEYS[1]) > 2) then
    return 1
end
return 0

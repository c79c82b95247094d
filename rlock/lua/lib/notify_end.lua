-- lib/notify_end.lua: the end of a script that included lib/notify.lua.
end)()
if unpublished ~= nil then
    return {'goredisson:unpublished', unpublished, reply}
end
return reply

-- lib/settle.lua: the dispatcher that ends every release script (included
-- last, with "--#include settle"). It uses holds() of lib/hold.lua, and
-- the including script defines:
--   release()  drop one hold as the lock kind's unlock does; returns the
--              holds the holder has left, or -1 when it held none
--   left()     what a caller that did not get the lock leaves behind
--              (a fair lock's queue entry), undone; nil for other kinds
-- and relies on lib/cancel.lua. Arguments shared by every release script:
--   KEYS[1]  the lock hash         KEYS[2]  the cancel floor
--   ARGV[1]  mode: 'r' release; 'a' settle an acquire whose reply was lost;
--            'u' settle a release whose reply was lost
--   ARGV[2]  holder field          ARGV[3]  call number (of this release,
--            or of the lost call being settled)
--   ARGV[4]  holds the client knew the holder had before the lost call
--   ARGV[5]  cancel floor TTL in ms
-- Returns, for 'r': holds left (>= 0), -1 when not held, -3 when this
-- release was cancelled by a settle; for 'a': 1 when the lost acquire had
-- taken a hold and it was given back, else 0; for 'u': holds left after the
-- lost release took effect (it is run now if it had not run), -1 when the
-- holder held none.
local mode = ARGV[1]
if mode == 'r' then
    if cancelled(KEYS[2], ARGV[2], ARGV[3]) then
        return -3
    end
    return release()
end
cancel(KEYS[2], ARGV[2], ARGV[3], ARGV[5])
local have, known = holds(), tonumber(ARGV[4])
if mode == 'a' then
    if have > known then
        release()
        return 1
    end
    if left then
        left()
    end
    return 0
end
if have > 0 and have == known then
    return release()
end
if have == 0 then
    return -1
end
return have

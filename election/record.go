package election

import (
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The leader key holds one record, a string: a header line, then the value
// (which may hold newlines):
//
//	<state> <epoch> <term> <lease ms> <holder>\n<value>
//
// state is L (a leader in office), P (a candidate that holds the lock and
// waits out its predecessor), R (the leader resigned) or E (the leader's
// context ended and it said so); epoch is a random id chosen when the key
// is made (it changes when Redis loses the key); term counts the leaders of
// the epoch (P, R and E keep the last leader's number); lease is, for L,
// the leader's watchdog timeout and, for P, the lease still to be waited
// out; holder is the candidate's lock owner ("ctx:election:<id>"), whose
// hash field in the lock ends with it.
const (
	stateLeader   = 'L'
	statePending  = 'P'
	stateResigned = 'R'
	stateEnded    = 'E'
)

// record is a parsed leader record.
type record struct {
	state  byte
	epoch  string
	term   int64
	lease  time.Duration
	holder string
	value  string
	raw    string
}

// String formats the record as the key holds it.
func (r record) String() string {
	return string(r.state) + " " + r.epoch + " " + strconv.FormatInt(r.term, 10) + " " +
		strconv.FormatInt(r.lease.Milliseconds(), 10) + " " + r.holder + "\n" + r.value
}

// with returns the record in another state, with another term and lease,
// formatted.
func (r record) with(state byte, term int64, lease time.Duration) record {
	r.state, r.term, r.lease = state, term, lease
	r.raw = r.String()
	return r
}

// parseRecord parses what the leader key holds; ok is false for anything
// else (the format of an older goredisson, or not a record at all).
func parseRecord(raw string) (r record, ok bool) {
	header, value, found := strings.Cut(raw, "\n")
	f := strings.Split(header, " ")
	if !found || len(f) != 5 || len(f[0]) != 1 || !strings.Contains("LPRE", f[0]) || f[1] == "" || f[4] == "" {
		return record{}, false
	}
	term, err1 := strconv.ParseInt(f[2], 10, 64)
	ms, err2 := strconv.ParseInt(f[3], 10, 64)
	if err1 != nil || err2 != nil || term < 0 || ms < 0 {
		return record{}, false
	}
	return record{state: f[0][0], epoch: f[1], term: term, lease: time.Duration(ms) * time.Millisecond,
		holder: f[4], value: value, raw: raw}, true
}

// takeScript marks the leader key pending for a candidate that has just
// taken the lock, and publishes the mark: the previous term has ended.
// The mark keeps the epoch and term of what it replaces and says how long
// the candidate waits: the lease of the leader it replaces, the wait of a
// pending candidate it replaces (which never led: what that one waited for
// is still to be waited for), nothing after a Resign or an end the leader
// told (or the empty mark of an older goredisson's Resign), and ARGV[4]
// (the longest lease the candidate knows of) when there is no record.
// KEYS[1]: the leader key. ARGV: holder, value, the epoch of a new key,
// the wait without a record in ms, the channel. It returns the mark.
var takeScript = redis.NewScript(`
local prev = redis.call('get', KEYS[1])
local epoch, term, wait = ARGV[3], '0', tonumber(ARGV[4])
if prev == '' then
  wait = 0
elseif prev then
  local s, e, t, l = string.match(prev, '^([LPRE]) (%S+) (%d+) (%d+) %S+\n')
  if s then
    epoch, term = e, t
    if s == 'R' or s == 'E' then wait = 0 else wait = tonumber(l) end
  end
end
local rec = 'P ' .. epoch .. ' ' .. term .. ' ' .. string.format('%d', wait) .. ' ' .. ARGV[1] .. '\n' .. ARGV[2]
redis.call('set', KEYS[1], rec)
redis.call('publish', ARGV[5], rec)
return rec`)

// swapScript replaces the record ARGV[1] by ARGV[2] and publishes the new
// one on ARGV[3], if the key still holds ARGV[1]: 1 if it did, else 0.
var swapScript = redis.NewScript(`
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('set', KEYS[1], ARGV[2])
redis.call('publish', ARGV[3], ARGV[2])
return 1`)

// readScript returns the leader key's record; with a second key, the lock
// of a *Lock or *FencedLock, only while the record's holder has a field in
// the lock's hash (a leader record whose holder lost the lock is no
// leader's): the lock and the record read at one instant.
var readScript = redis.NewScript(`
local rec = redis.call('get', KEYS[1])
if not rec or #KEYS < 2 then return rec end
local holder = string.match(rec, '^L %S+ %d+ %d+ (%S+)\n')
if not holder then return rec end
local mark = ':' .. holder
for _, f in ipairs(redis.call('hkeys', KEYS[2])) do
  local i = string.find(f, mark, 1, true)
  if i then
    local after = string.sub(f, i + #mark, i + #mark)
    if after == '' or after == ':' then return rec end
  end
end
return false`)

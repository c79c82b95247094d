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
//	<state> <epoch> <term> <lease ms> <holder> <server>\n<value>
//
// state is L (a leader in office), P (a candidate that holds the lock and
// waits out its predecessor), R (the leader resigned) or E (the leader's
// context ended and it said so); epoch is a random id chosen when the key
// is made (and when a candidate cannot trust what it finds: it changes
// when Redis lost the key or may have rolled it back); term counts the
// leaders of the epoch (P, R and E keep the last leader's number); lease
// is, for L, the leader's watchdog timeout and, for P, the lease still to
// be waited out; holder is the candidate's lock owner
// ("ctx:election:<id>"), whose hash field in the lock ends with it; server
// is the identity of the Redis process that wrote the record (serverLua),
// "-" when the Redis user may not run INFO.
const (
	stateLeader   = 'L'
	statePending  = 'P'
	stateResigned = 'R'
	stateEnded    = 'E'
)

// unknownServer is the server field of a record written where INFO was
// refused: it matches no server, not even the one that wrote it.
const unknownServer = "-"

// record is a parsed leader record.
type record struct {
	state  byte
	epoch  string
	term   int64
	lease  time.Duration
	holder string
	server string // "" in a record of the format without it
	value  string
	raw    string
}

// head is the record's header line without its server field: what a
// script completes with the server that writes it.
func (r record) head() string {
	return string(r.state) + " " + r.epoch + " " + strconv.FormatInt(r.term, 10) + " " +
		strconv.FormatInt(r.lease.Milliseconds(), 10) + " " + r.holder
}

// String formats the record as the key holds it.
func (r record) String() string {
	h := r.head()
	if r.server != "" {
		h += " " + r.server
	}
	return h + "\n" + r.value
}

// with returns the record in another state, with another term and lease,
// formatted (its server is the one that wrote r, until a script writes it).
func (r record) with(state byte, term int64, lease time.Duration) record {
	r.state, r.term, r.lease = state, term, lease
	r.raw = r.String()
	return r
}

// parseRecord parses what the leader key holds; ok is false for anything
// else (the format of an older goredisson, or not a record at all). A
// header without the server field (this format before it had one) parses
// with server "".
func parseRecord(raw string) (r record, ok bool) {
	header, value, found := strings.Cut(raw, "\n")
	f := strings.Split(header, " ")
	if !found || len(f) < 5 || len(f) > 6 || len(f[0]) != 1 || !strings.Contains("LPRE", f[0]) || f[1] == "" || f[4] == "" {
		return record{}, false
	}
	term, err1 := strconv.ParseInt(f[2], 10, 64)
	ms, err2 := strconv.ParseInt(f[3], 10, 64)
	if err1 != nil || err2 != nil || term < 0 || ms < 0 || len(f) == 6 && f[5] == "" {
		return record{}, false
	}
	r = record{state: f[0][0], epoch: f[1], term: term, lease: time.Duration(ms) * time.Millisecond,
		holder: f[4], value: value, raw: raw}
	if len(f) == 6 {
		r.server = f[5]
	}
	return r, true
}

// serverLua defines server(), the identity of the Redis process that runs
// the script and of the data it serves: the first 20 hex digits of its
// run_id (new at every start, so a restart that loaded an older RDB or AOF
// is another server) and of its master_replid (new at every promotion, so
// a failover, or a former master that resynced from a replica and was
// promoted again, is another server too). On a Redis Cluster the script
// runs on the master of the key's slot: its own identity. "-" when INFO is
// refused (an ACL user without +info): such a record matches no server.
// publish(channel, message) publishes with redis.pcall, so that a refused
// PUBLISH (an ACL user without the channel) neither aborts the script
// after its write nor turns its reply into an error: it returns the
// refusal ("" when published).
const serverLua = `
local function server()
  local s = redis.pcall('info', 'server')
  local r = redis.pcall('info', 'replication')
  if type(s) ~= 'string' or type(r) ~= 'string' then return '-' end
  local run = string.match(s, 'run_id:(%x+)')
  local rep = string.match(r, 'master_replid:(%x+)')
  if not run or not rep then return '-' end
  return string.sub(run, 1, 20) .. string.sub(rep, 1, 20)
end
local function publish(channel, message)
  local r = redis.pcall('publish', channel, message)
  if type(r) == 'table' and r.err then return channel .. ': ' .. r.err end
  return ''
end
`

// takeScript marks the leader key pending for a candidate that has just
// taken the lock, and publishes the mark: the previous term has ended.
// The mark says how long the candidate waits. A record this server wrote
// (its server field is this server's identity) is trusted: the mark keeps
// its epoch and term and waits the lease of the leader it replaces, the
// wait of a pending candidate it replaces (which never led: what that one
// waited for is still to be waited for), nothing after a Resign or an end
// the leader told. Anything else is treated as no record: a new epoch, and
// a wait of ARGV[4] (the longest lease the candidate knows of), or the
// lease a leader or pending record names if longer. That covers a record
// of another server process or of data replaced since: Redis restarted
// from an older RDB or AOF, or failed over to a replica that had not
// received the last writes, may hold an older record (a Resign, a shorter
// lease) while the real leader's context is live. KEYS[1]: the leader
// key. ARGV: holder, value, the epoch of a new key, the wait without a
// record in ms, the channel. It returns the mark and the refusal of its
// publish ("" if published).
var takeScript = redis.NewScript(serverLua + `
local cur = server()
local prev = redis.call('get', KEYS[1])
local epoch, term, wait = ARGV[3], '0', tonumber(ARGV[4])
if prev then
  local s, e, t, l, srv = string.match(prev, '^([LPRE]) (%S+) (%d+) (%d+) %S+ ?(%S*)\n')
  if s and srv == cur and cur ~= '-' then
    epoch, term = e, t
    if s == 'R' or s == 'E' then wait = 0 else wait = tonumber(l) end
  elseif s == 'L' or s == 'P' then
    wait = math.max(wait, tonumber(l))
  end
end
local rec = 'P ' .. epoch .. ' ' .. term .. ' ' .. string.format('%d', wait) .. ' ' .. ARGV[1] .. ' ' .. cur .. '\n' .. ARGV[2]
redis.call('set', KEYS[1], rec)
return {rec, publish(ARGV[5], rec)}`)

// swapScript replaces the record ARGV[1] by the record of header ARGV[2]
// (without its server field: this server's is added) and value ARGV[3],
// and publishes it on ARGV[4], if the key still holds ARGV[1]. It returns
// the record written ("" if the key held another) and the refusal of its
// publish.
var swapScript = redis.NewScript(serverLua + `
if redis.call('get', KEYS[1]) ~= ARGV[1] then return {'', ''} end
local rec = ARGV[2] .. ' ' .. server() .. '\n' .. ARGV[3]
redis.call('set', KEYS[1], rec)
return {rec, publish(ARGV[4], rec)}`)

// readScript returns the leader key's record; with a second key, the lock
// of a *Lock or *FencedLock, only while the record's holder has a field in
// the lock's hash (a leader record whose holder lost the lock is no
// leader's): the lock and the record read at one instant.
var readScript = redis.NewScript(`
local rec = redis.call('get', KEYS[1])
if not rec or #KEYS < 2 then return rec end
local holder = string.match(rec, '^L %S+ %d+ %d+ (%S+)[ \n]')
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

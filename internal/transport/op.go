package transport

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/goredisson/goredisson/internal/inline"
	"github.com/redis/go-redis/v9"
)

// Script is one Lua script as sent to Redis (rlock embeds them).
type Script struct {
	Name   string
	Src    string // the source, includes expanded
	SHA    string // SHA1 of Src, for EVALSHA
	ShaArg any    // SHA, boxed once
	// Synced marks the scripts replica sync follows (see replica.go).
	Synced bool
}

// Op is one command on its way to Redis and, once done is closed, its
// outcome.
type Op struct {
	Ctx context.Context
	S   *Script // nil for a plain command in Line
	// Line is the command: EVALSHA, the SHA1, the number of keys, the keys
	// and the arguments for a script (see command); the arguments alone for
	// a plain command.
	Line []any
	args [16]any // Line's storage when it fits
	// Sync asks for replica sync (set for acquire and release scripts, see
	// replica.go); SyncWant is the replica count a WAIT after it asked
	// for (0: none was sent) and Synced WAIT's count.
	Sync     bool
	SyncWant int
	Synced   int64

	// Routing on a Redis Cluster (see Sender.after): first is when the op
	// was first sent, redirects how many times it was sent on, target the
	// node a redirection named (empty: the slot's owner), asking that it
	// goes after ASKING.
	first     time.Time
	redirects int
	target    string
	asking    bool
	// batched marks an op of SubmitAll: it never goes inline, where the
	// ops of one SubmitAll would go one round trip at a time.
	batched bool
	// cut is set when the op was sent inline and ctx's end or Close
	// interrupted its I/O (see batcher.runInline).
	cut bool
	// floorAt is the index in Line of a call number the script reads the
	// cancel floor with (0: none, see MarkFloor); fence names the
	// connection the op last went out on with that number as "f<n>",
	// reading no floor (nil: it read the floor, or was not sent).
	floorAt int
	fence   *Fence
	// key routes a plain command (see RouteTo).
	key string
	// state says whose the op is while it waits for a flusher: opFree (its
	// caller may withdraw it), opTaken (the flusher's: it is being written,
	// or its outcome recorded), opWithdrawn (its caller's, never written:
	// see claim.go).
	state atomic.Int32

	raw   []byte // the raw reply
	small [64]byte
	V     any // the parsed reply (a ReplyError for an error reply)
	// unpublished is set when the script's publish was refused (see
	// lib/notify.lua): "<channel>: <error>".
	unpublished string
	// probed is set once a key refusal was looked into (see
	// Config.NameRefusedKeys).
	probed bool
	Err    error // set when no reply was read: the outcome is unknown unless notSent(Err)
	// done is closed when the outcome is known. It is made when the op is
	// submitted (see Sender.submit), unless the op goes inline: it is then
	// done before submit returns, and shares closedDone.
	done chan struct{}
}

// Done returns the channel closed when the op's outcome is known (nil
// before it was submitted).
func (o *Op) Done() <-chan struct{} { return o.done }

// closedDone is the done of every op sent inline.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// markDone closes done (for an op sent inline, done is closedDone already).
func (o *Op) markDone() {
	if o.done == nil {
		o.done = closedDone
		return
	}
	if o.done != closedDone {
		close(o.done)
	}
}

// Write collects the raw reply (RawWriteToCmd writes to it).
func (o *Op) Write(p []byte) (int, error) {
	o.raw = append(o.raw, p...)
	return len(p), nil
}

// NewOp returns an op for a plain command.
func NewOp(ctx context.Context, args ...any) *Op {
	o := &Op{Ctx: ctx, Line: args}
	o.raw = o.small[:0]
	return o
}

// NewScriptOp returns an op that runs s with keys (boxed) and args, as one
// line built once.
func NewScriptOp(ctx context.Context, s *Script, keys []any, args ...any) *Op {
	o := &Op{Ctx: ctx, S: s}
	line := o.args[:0]
	if n := 3 + len(keys) + len(args); n > len(o.args) {
		line = make([]any, 0, n)
	}
	line = append(line, "evalsha", s.ShaArg, len(keys))
	line = append(line, keys...)
	o.Line = append(line, args...)
	o.raw = o.small[:0]
	return o
}

// Fence names a connection on its server (see inline.Fence).
type Fence = inline.Fence

// FenceMode says which connections learn their Fence (see inline.FenceMode).
type FenceMode = inline.FenceMode

// The fence modes (inline's).
const (
	FenceOff     = inline.FenceOff
	FenceOwnAddr = inline.FenceOwnAddr
	FenceAnyAddr = inline.FenceAnyAddr
)

// MarkFloor says that argument arg (0-based, after the keys) of the
// script op is a call number its script reads the cancel floor with
// (lib/cancel.lua): when the op goes out on a connection the Client can
// fence (CLIENT KILL), it is sent as "f<n>" and the script reads no floor;
// Fenced then names that connection, which must be fenced before the
// call is settled should its reply be lost.
func (o *Op) MarkFloor(arg int) {
	if n, ok := o.Line[2].(int); ok && o.S != nil {
		o.floorAt = 3 + n + arg
	}
}

// Fenced returns the connection the op went out on reading no cancel
// floor (nil: it read the floor, or never went out that way).
func (o *Op) Fenced() *Fence { return o.fence }

// RouteTo routes the plain command o to the node that serves key on a
// Redis Cluster (a CLIENT KILL to the node of a lock's key).
func (o *Op) RouteTo(key string) *Op {
	o.key = key
	return o
}

// command returns the go-redis command for the op (see line).
func (o *Op) command(eval bool) *redis.RawWriteToCmd {
	o.raw = o.small[:0]
	return redis.NewRawWriteToCmd(o.Ctx, o, o.line(eval)...)
}

// line returns the op's command line: for a script EVALSHA, or EVAL with
// the source when eval is set (or the script has no SHA).
func (o *Op) line(eval bool) []any {
	if o.S != nil && (eval || o.S.SHA == "") {
		return append([]any{"eval", o.S.Src}, o.Line[2:]...)
	}
	return o.Line
}

// keylessCommands are the plain commands this package sends that have no
// key (routed to any node).
var keylessCommands = map[string]bool{"script": true, "pubsub": true, "info": true, "wait": true, "ping": true, "cluster": true}

// RouteKey returns the key that picks the op's node on a Redis Cluster:
// a script's first key, a plain command's first argument.
func (o *Op) RouteKey() (string, bool) {
	if o.key != "" {
		return o.key, true
	}
	if o.S != nil {
		if len(o.Line) > 3 {
			if n, ok := o.Line[2].(int); ok && n > 0 {
				k, ok := o.Line[3].(string)
				return k, ok
			}
		}
		return "", false
	}
	if len(o.Line) < 2 {
		return "", false
	}
	if name, ok := o.Line[0].(string); !ok || keylessCommands[name] {
		return "", false
	}
	k, ok := o.Line[1].(string)
	return k, ok
}

// finish records the command's outcome from its go-redis result, unless
// its caller withdrew it (see take).
func (o *Op) finish(err error) {
	if !o.take() {
		return
	}
	o.V, o.Err, o.unpublished = nil, err, ""
	if err != nil {
		return
	}
	o.V, o.Err = ParseReply(o.raw)
	// A script whose publish was refused (lib/notify.lua) wraps its reply.
	if a, ok := o.V.([]any); ok && len(a) >= 2 && o.S != nil {
		if mark, _ := a[0].(string); mark == unpublishedMark {
			o.unpublished, _ = a[1].(string)
			o.V = nil
			if len(a) > 2 {
				o.V = a[2]
			}
		}
	}
}

// unpublishedMark starts the reply of a script whose publish was refused.
const unpublishedMark = "goredisson:unpublished"

// NoScript reports whether the op came back NOSCRIPT.
func (o *Op) NoScript() bool {
	e, ok := o.V.(ReplyError)
	return o.Err == nil && ok && e.NoScript()
}

// KeyRefused reports whether the op came back refused by an ACL for one of
// its keys: at the call ("NOPERM ... keys", Valkey "NOPERM ... a key"), or
// inside a script (Redis "... can't access at least one of the keys",
// Valkey "ACL failure in script: ... a key"). Neither says which key.
func (o *Op) KeyRefused() bool {
	e, ok := o.V.(ReplyError)
	if o.Err != nil || !ok {
		return false
	}
	msg := string(e)
	return (HasPrefix(msg, "NOPERM") && strings.Contains(msg, "key")) ||
		strings.Contains(msg, "can't access at least one of the keys") ||
		(strings.Contains(msg, "ACL failure in script") && strings.Contains(msg, "key"))
}

// Keys returns the keys the op names: a script's declared keys, a plain
// command's first argument.
func (o *Op) Keys() []string {
	var out []string
	if o.S != nil {
		if len(o.Line) > 3 {
			if n, ok := o.Line[2].(int); ok {
				for _, k := range o.Line[3:min(3+n, len(o.Line))] {
					if s, ok := k.(string); ok {
						out = append(out, s)
					}
				}
			}
		}
		return out
	}
	if k, ok := o.RouteKey(); ok {
		out = append(out, k)
	}
	return out
}

// KillOp returns the op that fences the connection f names on the node
// serving key: CLIENT KILL ID <id> ADDR <addr> SKIPME yes (both filters
// must match; the connection sending it is never killed). Its reply is
// the number of connections closed, 0 or 1: either way the server runs
// nothing more that came on that connection (see docs/internals.md).
func KillOp(ctx context.Context, key string, f *Fence) *Op {
	return NewOp(ctx, "client", "kill", "id", f.ID, "addr", f.Addr, "skipme", "yes").RouteTo(key)
}

// FirstSent returns when the op was first handed to a batcher (zero: never).
func (o *Op) FirstSent() time.Time { return o.first }

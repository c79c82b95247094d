package rlock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// op is one command on its way to Redis and, once done is closed, its
// outcome.
type op struct {
	ctx context.Context
	s   *script // nil for a plain command in line
	// line is the command: EVALSHA, the SHA1, the number of keys, the keys
	// and the arguments for a script (see command); the arguments alone for
	// a plain command.
	line []any
	args [16]any // line's storage when it fits
	// sync asks for replica sync (set for acquire and release scripts, see
	// replica.go); syncWant is the replica count a WAIT after it asked
	// for (0: none was sent) and synced WAIT's count.
	sync     bool
	syncWant int
	synced   int64

	// Routing on a Redis Cluster (see sender.after): first is when the op
	// was first sent, redirects how many times it was sent on, target the
	// node a redirection named (empty: the slot's owner), asking that it
	// goes after ASKING.
	first     time.Time
	redirects int
	target    string
	asking    bool
	// cut is set when the op was sent inline and ctx's end or Close
	// interrupted its I/O (see batcher.runInline).
	cut bool

	raw   []byte // the raw reply
	small [64]byte
	v     any // the parsed reply (a replyError for an error reply)
	// unpublished is set when the script's publish was refused (see
	// lib/notify.lua): "<channel>: <error>".
	unpublished string
	// probed is set once a key refusal was looked into (see
	// Client.nameRefusedKeys).
	probed bool
	err    error // set when no reply was read: the outcome is unknown unless notSent(err)
	// done is closed when the outcome is known. It is made when the op is
	// submitted (see sender.submit), unless the op goes inline: it is then
	// done before submit returns, and shares closedDone.
	done chan struct{}
}

// closedDone is the done of every op sent inline.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// markDone closes done (for an op sent inline, done is closedDone already).
func (o *op) markDone() {
	if o.done == nil {
		o.done = closedDone
		return
	}
	if o.done != closedDone {
		close(o.done)
	}
}

// Write collects the raw reply (RawWriteToCmd writes to it).
func (o *op) Write(p []byte) (int, error) {
	o.raw = append(o.raw, p...)
	return len(p), nil
}

// newOp returns an op for a plain command.
func newOp(ctx context.Context, args ...any) *op {
	o := &op{ctx: ctx, line: args}
	o.raw = o.small[:0]
	return o
}

// newScriptOp returns an op that runs s with keys (boxed) and args, as one
// line built once.
func newScriptOp(ctx context.Context, s *script, keys []any, args ...any) *op {
	o := &op{ctx: ctx, s: s}
	line := o.args[:0]
	if n := 3 + len(keys) + len(args); n > len(o.args) {
		line = make([]any, 0, n)
	}
	line = append(line, "evalsha", s.shaArg, len(keys))
	line = append(line, keys...)
	o.line = append(line, args...)
	o.raw = o.small[:0]
	return o
}

// command returns the go-redis command for the op: for a script EVALSHA,
// or EVAL with the source when eval is set.
func (o *op) command(eval bool) *redis.RawWriteToCmd {
	o.raw = o.small[:0]
	if o.s != nil && (eval || o.s.sha == "") {
		line := append([]any{"eval", o.s.src}, o.line[2:]...)
		return redis.NewRawWriteToCmd(o.ctx, o, line...)
	}
	return redis.NewRawWriteToCmd(o.ctx, o, o.line...)
}

// keylessCommands are the plain commands this package sends that have no
// key (routed to any node).
var keylessCommands = map[string]bool{"script": true, "pubsub": true, "info": true, "wait": true, "ping": true, "cluster": true}

// routeKey returns the key that picks the op's node on a Redis Cluster:
// a script's first key, a plain command's first argument.
func (o *op) routeKey() (string, bool) {
	if o.s != nil {
		if len(o.line) > 3 {
			if n, ok := o.line[2].(int); ok && n > 0 {
				k, ok := o.line[3].(string)
				return k, ok
			}
		}
		return "", false
	}
	if len(o.line) < 2 {
		return "", false
	}
	if name, ok := o.line[0].(string); !ok || keylessCommands[name] {
		return "", false
	}
	k, ok := o.line[1].(string)
	return k, ok
}

// finish records the command's outcome from its go-redis result.
func (o *op) finish(err error) {
	o.v, o.err, o.unpublished = nil, err, ""
	if err != nil {
		return
	}
	o.v, o.err = parseReply(o.raw)
	// A script whose publish was refused (lib/notify.lua) wraps its reply.
	if a, ok := o.v.([]any); ok && len(a) >= 2 && o.s != nil {
		if mark, _ := a[0].(string); mark == unpublishedMark {
			o.unpublished, _ = a[1].(string)
			o.v = nil
			if len(a) > 2 {
				o.v = a[2]
			}
		}
	}
}

// unpublishedMark starts the reply of a script whose publish was refused.
const unpublishedMark = "goredisson:unpublished"

// noScript reports whether the op came back NOSCRIPT.
func (o *op) noScript() bool {
	e, ok := o.v.(replyError)
	return o.err == nil && ok && e.noScript()
}

// outcome classifies a done op.
type outcome int

const (
	// replied: a reply was read (o.v, possibly a replyError).
	replied outcome = iota
	// notRun: the command certainly did not run: never sent, or refused
	// before it ran (NOSCRIPT, MOVED, LOADING, ...).
	notRun
	// unknown: sent, and no reply read; it may have run, or may still run.
	unknown
)

func (o *op) outcome() outcome {
	switch {
	case o.err != nil && notSent(o.err):
		return notRun
	case o.err != nil:
		return unknown
	}
	if e, ok := o.v.(replyError); ok && e.notRun() {
		return notRun
	}
	return replied
}

// replyErr returns the error of a done op: its transport error, or the
// error reply of Redis, or nil.
func (o *op) replyErr() error {
	if o.err != nil {
		return o.err
	}
	if e, ok := o.v.(replyError); ok {
		return e
	}
	return nil
}

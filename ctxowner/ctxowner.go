// Package ctxowner decides who owns a lock hold.
//
// A goredisson lock is reentrant per owner, like a Java ReentrantLock is per
// thread. The owner of a call is the owner carried by its context when there is
// one (attached with New or WithID), otherwise the calling goroutine. Context
// owners are the idiomatic choice in Go: the owner travels with the context to
// every goroutine that receives it, so a critical section may fan out work and
// still unlock from another goroutine. Goroutine owners exist for code ported
// from Redisson, where the thread is the owner.
//
// Owner ids are opaque, non-empty text. Goroutine owners are the goroutine's
// decimal number (as Redisson uses the thread id); context owners are reported
// by Of with the prefix "ctx:" so that they never collide with a goroutine
// owner, whatever id the caller chose.
package ctxowner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
)

// ContextPrefix starts every owner id that Of derives from a context owner.
// Goroutine owners are plain decimal numbers and never start with it.
const ContextPrefix = "ctx:"

type ownerKey struct{}

// owner is a context owner as stored under ownerKey: its id and, made once,
// the id Of reports (ContextPrefix + id), so that Of costs no allocation.
type owner struct{ id, of string }

func newOwner(id string) *owner {
	of := ContextPrefix + id
	return &owner{id: of[len(ContextPrefix):], of: of}
}

// pinned is an owner id resolved by Pin, stored under ownerKey and returned
// by Of verbatim.
type pinned string

// processTag and counter make the ids of New unique within this process and,
// with overwhelming likelihood, across processes. They are the package's only
// state: processTag is set once at start-up, counter only ever increases.
var (
	processTag = newProcessTag()
	counter    atomic.Uint64
)

func newProcessTag() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; a fixed tag
		// still leaves ids unique within the process.
		return "000000000000"
	}
	return hex.EncodeToString(b[:])
}

// New returns a copy of ctx carrying a fresh owner, unique in this process.
// Every lock call made with the returned context (or a context derived from
// it, in any goroutine) acts for that owner.
func New(ctx context.Context) context.Context {
	of := ContextPrefix + processTag + "-" + strconv.FormatUint(counter.Add(1), 10)
	return context.WithValue(ctx, ownerKey{}, &owner{id: of[len(ContextPrefix):], of: of})
}

// WithID returns a copy of ctx carrying the explicit owner id. An empty id
// attaches nothing and returns ctx unchanged. Two contexts with the same id
// are the same owner: use it to hand a hold over to another process of the
// same client id, or in tests.
func WithID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, ownerKey{}, newOwner(id))
}

// From reports the owner id that ctx carries, as given to WithID or made by
// New, and whether it carries one.
func From(ctx context.Context) (id string, ok bool) {
	if ctx == nil {
		return "", false
	}
	switch v := ctx.Value(ownerKey{}).(type) {
	case *owner:
		return v.id, true
	case pinned:
		// A pinned context owner is still that owner; a pinned goroutine
		// owner is not a context owner.
		return strings.CutPrefix(string(v), ContextPrefix)
	}
	return "", false
}

// Of returns the owner id a lock uses for a call made with ctx: ContextPrefix
// followed by the context's owner id when ctx carries one, otherwise the
// calling goroutine's number in decimal (a read of the goroutine's own
// trace header, a few microseconds; a context owner costs a context lookup).
// Call it on the goroutine that makes the lock call.
func Of(ctx context.Context) string {
	if ctx != nil {
		switch v := ctx.Value(ownerKey{}).(type) {
		case pinned:
			return string(v)
		case *owner:
			return v.of
		}
	}
	return strconv.FormatUint(goroutineID(), 10)
}

// Pin returns a copy of ctx whose owner is fixed to Of(ctx) as seen by the
// calling goroutine: lock calls made with the returned context act for the
// same owner on every goroutine, even when ctx carries no owner and the owner
// is the calling goroutine. A goroutine owner keeps its plain number, so the
// hash field stays the one Redisson writes for a thread. MultiLock and
// RedLock pin the owner before they lock several locks at once; so can code
// that hands a goroutine-owned critical section to helper goroutines.
func Pin(ctx context.Context) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithValue(ctx, ownerKey{}, pinned(Of(ctx)))
}

// goroutineID returns the number of the calling goroutine, as the runtime
// prints it in stack traces. It reads the first line of the goroutine's own
// trace (a few microseconds, see BenchmarkOfGoroutineOwner); context owners
// avoid this cost altogether.
func goroutineID() uint64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	// The trace starts with "goroutine <id> [".
	const head = len("goroutine ")
	var id uint64
	for _, c := range buf[head:n] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

// Middleware gives every request its own owner: the handler and every
// goroutine it starts with the request's context own what they lock, and
// nothing else does. A request whose context already carries an owner (an
// outer middleware attached one) keeps it. Attach an owner at every entry
// point: HTTP handlers, consumers of a queue, jobs.
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := From(r.Context()); !ok {
			r = r.WithContext(New(r.Context()))
		}
		next.ServeHTTP(w, r)
	})
}

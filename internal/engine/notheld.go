package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/goredisson/goredisson/inspect"
	"github.com/goredisson/goredisson/internal/inspectaux"
)

// notHeldReadTimeout bounds the read of who holds a lock that an owner was
// told it does not hold (only on that failure path).
const notHeldReadTimeout = time.Second

// maxNamedHolders is how many holders an ErrNotHeld names (a read lock may
// have many).
const maxNamedHolders = 3

// notHeldError is ErrNotHeld for one owner on one lock: it names the
// caller's owner (as ctxowner.Of reports it) and who holds the lock, as read
// off Redis right after the refusal.
type notHeldError struct {
	owner  string // the caller's owner: "15", "ctx:job-7"
	holder string // "nobody holds it", `held by owner "ctx:job-8" of this client`, ...
}

// Error reads `lock not held by this owner (owner "ctx:job-7"; nobody holds it)`.
func (e *notHeldError) Error() string {
	return fmt.Sprintf("%s (owner %q; %s)", ErrNotHeld.Error(), e.owner, e.holder)
}

// Is makes the error ErrNotHeld for errors.Is.
func (e *notHeldError) Is(target error) bool { return target == ErrNotHeld }

// NotHeld returns the ErrNotHeld of the owner whose hash field is field on
// this lock, naming that owner and who holds the lock. It reads the lock
// off Redis once more (a failure path: the calls that succeed never read),
// within ctx and notHeldReadTimeout.
func (h *Handle) NotHeld(ctx context.Context, field string) error {
	e := &notHeldError{owner: h.ownerOf(field)}
	if !h.kind.Inspectable() {
		e.holder = "who holds its values is not read (a faster multilock)"
		return e
	}
	rctx, cancel := context.WithTimeout(ctx, notHeldReadTimeout)
	defer cancel()
	info, err := h.Inspect(rctx)
	if err != nil {
		e.holder = "who holds it could not be read: " + err.Error()
		return e
	}
	e.holder = h.describeHolders(info)
	return e
}

// ownerOf returns the owner part of a hash field of this Client on this
// lock ("<client id>:<owner>", ":write" after it for a writer).
func (h *Handle) ownerOf(field string) string {
	owner := strings.TrimPrefix(field, h.c.id+":")
	return strings.TrimSuffix(owner, h.suffix())
}

// Inspect reads the lock's state as Inspect does.
func (h *Handle) Inspect(ctx context.Context) (*inspect.Info, error) {
	if h.Aux() != h.name {
		// The fair queue and timeouts are under another name (Redisson
		// before 3.52 under a NameMapper).
		v, err := inspectaux.Lock(ctx, h.c.rdb, h.name, h.Aux())
		if err != nil {
			return nil, err
		}
		return v.(*inspect.Info), nil
	}
	return inspect.Lock(ctx, h.c.rdb, h.name)
}

// describeHolders says who holds the lock in info, for an ErrNotHeld.
func (h *Handle) describeHolders(info *inspect.Info) string {
	switch {
	case info.Kind == inspect.KindForeign:
		return "its key is not a lock: " + info.Reason
	case info.Kind.IsSynchronizer():
		return fmt.Sprintf("its key is a %s, not a lock", info.Kind)
	case len(info.Holders) == 0:
		return "nobody holds it"
	}
	var b strings.Builder
	b.WriteString("held by ")
	if len(info.Holders) > 1 {
		b.WriteString(strconv.Itoa(len(info.Holders)) + " owners: ")
	}
	for i, hd := range info.Holders {
		if i == maxNamedHolders {
			fmt.Fprintf(&b, " and %d more", len(info.Holders)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(h.describeField(hd.Field))
	}
	return b.String()
}

// describeField names the owner of a holder field and its Client: this
// one, or another (a goredisson Client or a Redisson instance) by its id.
func (h *Handle) describeField(field string) string {
	role := ""
	if f, ok := strings.CutSuffix(field, ":write"); ok {
		field, role = f, " (the writer)"
	}
	if owner, ok := strings.CutPrefix(field, h.c.id+":"); ok {
		return fmt.Sprintf("owner %q of this client%s", owner, role)
	}
	if len(field) > 36 && field[36] == ':' {
		if _, err := uuid.Parse(field[:36]); err == nil {
			return fmt.Sprintf("owner %q of another client, %s%s", field[37:], field[:36], role)
		}
	}
	return fmt.Sprintf("field %q of another client%s", field, role)
}

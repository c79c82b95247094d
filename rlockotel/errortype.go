package rlockotel

import (
	"context"
	"errors"
	"net"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/goredisson/goredisson/rlock"
)

// sentinels name the errors of rlock and context in error.type.
var sentinels = []struct {
	err  error
	name string
}{
	{rlock.ErrNotHeld, "not_held"},
	{rlock.ErrLockLost, "lock_lost"},
	{rlock.ErrClosed, "closed"},
	{rlock.ErrInvalidArgument, "invalid_argument"},
	{rlock.ErrReplicaSync, "replica_sync"},
	{rlock.ErrNoQuorum, "no_quorum"},
	{rlock.ErrBusy, "busy"},
	{context.Canceled, "canceled"},
	{context.DeadlineExceeded, "deadline_exceeded"},
}

// redisError is what go-redis's error replies implement (redis.Error).
type redisError interface {
	error
	RedisError()
}

// errorType is the error.type attribute of err (see the package
// documentation for its values).
func errorType(err error) attribute.KeyValue {
	return semconv.ErrorTypeKey.String(errorTypeName(err))
}

// errorTypeName is a low-cardinality name of what err is.
func errorTypeName(err error) string {
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	var re redisError
	if errors.As(err, &re) {
		return redisCode(re.Error())
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	c := cause(err)
	switch name := semconv.ErrorType(c).Value.AsString(); name {
	case "*errors.errorString", "*fmt.wrapErrors", "*errors.joinError", "*rlock.Error":
		return semconv.ErrorTypeOther.Value.AsString()
	default:
		return name
	}
}

// redisCode is the error code of a Redis error reply: its first word when
// that is upper case, as Redis's codes are ("ERR", "READONLY", ...), else
// "redis".
func redisCode(msg string) string {
	code, _, _ := strings.Cut(msg, " ")
	if code == "" || len(code) > 32 || strings.ContainsFunc(code, notCodeRune) {
		return "redis"
	}
	return code
}

// notCodeRune reports a rune no Redis error code has.
func notCodeRune(r rune) bool {
	return (r < 'A' || r > 'Z') && r != '_' && r != '-'
}

// cause is err below rlock's *Error wrappers.
func cause(err error) error {
	var le *rlock.Error
	for errors.As(err, &le) && le.Err != nil {
		err = le.Err
	}
	return err
}

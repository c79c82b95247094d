package probe

import (
	"errors"
	"strings"

	"github.com/goredisson/goredisson/rlock"
)

var (
	// ErrNotConfigured is Start's error when neither Config.ClassPath nor
	// the GOREDISSON_REDISSON_CLASSPATH environment variable names a
	// Redisson class path: the specs that need the probe should skip.
	ErrNotConfigured = errors.New("probe: no Redisson class path: set " + ClassPathEnv + " to your Redisson jar and its dependencies")
	// ErrClosed is the error of a call after Close, or once the JVM has
	// exited (the error then shows the end of its standard error).
	ErrClosed = errors.New("probe: closed")
	// ErrIllegalMonitorState matches a Java IllegalMonitorStateException
	// (an unlock of a lock the thread does not hold).
	ErrIllegalMonitorState = errors.New("IllegalMonitorStateException")
	// ErrIllegalArgument matches a Java IllegalArgumentException (among
	// others, a release of a permit id that is not held).
	ErrIllegalArgument = errors.New("IllegalArgumentException")
)

// Exception is one Java exception of a JavaError's cause chain.
type Exception struct {
	Class   string // the simple class name, "IllegalMonitorStateException"
	Message string
}

// JavaError is an exception the Redisson call threw, with its causes.
type JavaError struct {
	Op     string      // the probe's verb and object: `unlock write "doc"`
	Chain  []Exception // the exception, then its causes
	Thread string      // the Java thread's name in Probe.Thread
}

// Error implements error: `probe: unlock write "doc" on thread "w1":
// IllegalMonitorStateException: attempt to unlock lock, ...`.
func (e *JavaError) Error() string {
	var b strings.Builder
	b.WriteString("probe: " + e.Op)
	if e.Thread != "" {
		b.WriteString(" on thread \"" + e.Thread + "\"")
	}
	for i, x := range e.Chain {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(" <- ")
		}
		b.WriteString(x.Class + ": " + x.Message)
	}
	return b.String()
}

// Is reports whether the chain holds the exception target stands for:
// ErrIllegalMonitorState and rlock.ErrNotHeld for an
// IllegalMonitorStateException, ErrIllegalArgument for an
// IllegalArgumentException, errors.ErrUnsupported for a method or type the
// Redisson release on the class path lacks, and for an
// UnsupportedOperationException (a MultiLock's isLocked).
func (e *JavaError) Is(target error) bool {
	var class string
	switch target {
	case ErrIllegalMonitorState, rlock.ErrNotHeld:
		class = "IllegalMonitorStateException"
	case ErrIllegalArgument:
		class = "IllegalArgumentException"
	case errors.ErrUnsupported:
		class = "Unsupported"
	default:
		return false
	}
	for _, x := range e.Chain {
		if x.Class == class || (target == errors.ErrUnsupported && x.Class == "UnsupportedOperationException") {
			return true
		}
	}
	return false
}

// parseJavaError reads the probe's "<Class>: <message>[ <- <Class>:
// <message>]..." into a chain.
func parseJavaError(text string) []Exception {
	var chain []Exception
	for part := range strings.SplitSeq(text, " <- ") {
		class, msg, _ := strings.Cut(part, ": ")
		chain = append(chain, Exception{Class: class, Message: msg})
	}
	return chain
}

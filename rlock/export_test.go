package rlock

import (
	"time"

	"github.com/goredisson/goredisson/internal/engine"
)

// ScriptSource exposes an embedded script's text, as sent to Redis, to the
// package's external tests and benchmarks.
func ScriptSource(name string) string {
	src, err := engine.ScriptSource(name)
	if err != nil {
		panic(err)
	}
	return src
}

// specServerAddr is the address of the Ginkgo suite's redis-server, for the
// package's internal specs (set by the suite, see SetSpecServer).
var specServerAddr string

// SetSpecServer tells the internal specs where the suite's redis-server is.
func SetSpecServer(addr string) { specServerAddr = addr }

// withQueuePause bounds a queued waiter's first wait (100 ms by default),
// for the internal specs that need a lost wake to show.
func withQueuePause(d time.Duration) Option {
	return func(o *options) { o.QueuePause = d }
}

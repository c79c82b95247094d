package rlock

// ScriptSource exposes an embedded script's text, as sent to Redis, to the
// package's external tests and benchmarks.
func ScriptSource(name string) string { return mustScript(name).Src }

// specServerAddr is the address of the Ginkgo suite's redis-server, for the
// package's internal specs (set by the suite, see SetSpecServer).
var specServerAddr string

// SetSpecServer tells the internal specs where the suite's redis-server is.
func SetSpecServer(addr string) { specServerAddr = addr }

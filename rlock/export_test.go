package rlock

// ScriptSource exposes an embedded script's text, as sent to Redis, to the
// package's external tests and benchmarks.
func ScriptSource(name string) string { return mustScript(name).src }

package engine

import (
	"fmt"
	"strings"

	"github.com/goredisson/goredisson/internal/transport"
	"github.com/goredisson/goredisson/rlock/lua"
)

// script is one embedded Lua script as sent to Redis.
// (transport.Script: Src is lua/<name>.lua with its includes expanded,
// SHA precomputed in scriptSHA). Synced marks the scripts replica sync
// follows (see replica.go): those Redisson runs with syncedEval (the locks'
// acquire, release, renewal and force unlock, the semaphores'; not the
// latch's). A caller checks the outcome (op.Unsynced) where Redisson fails
// the call: acquire and release.

// scripts are the embedded scripts by name, filled once at start-up by
// mustScript and never changed after: the test that every file of lua/ is
// loaded reads it.
var scripts = map[string]*transport.Script{}

// The scripts, loaded once from rlock/lua at start-up and never changed.
// Each runs as EVALSHA, and as EVAL with its source when the server answers
// NOSCRIPT (see exec.go).
var (
	acquireScript       = syncedScript("acquire")
	fencedScript        = syncedScript("fenced_acquire")
	releaseScript       = syncedScript("release")
	renewScript         = syncedScript("renew")
	forceUnlockScript   = syncedScript("forceunlock")
	readAcquireScript   = syncedScript("read_acquire")
	writeAcquireScript  = syncedScript("write_acquire")
	readReleaseScript   = syncedScript("read_release")
	writeReleaseScript  = syncedScript("write_release")
	readRenewScript     = syncedScript("read_renew")
	rwForceUnlockScript = syncedScript("rw_forceunlock")
	fairAcquireScript   = syncedScript("fair_acquire")
	fairReleaseScript   = syncedScript("fair_release")
	fairForceScript     = syncedScript("fair_forceunlock")
	semaphoreScript     = syncedScript("semaphore")
	permitsScript       = syncedScript("permits")
	latchScript         = mustScript("latch")
	extendScript        = mustScript("extend")
	expireScript        = mustScript("expire")
	objectScript        = mustScript("object")
	fasterAcquireScript = mustScript("faster_acquire")
	fasterReleaseScript = mustScript("faster_release")
	fasterRenewScript   = mustScript("faster_renew")
	fasterForceScript   = mustScript("faster_forceunlock")
	fasterReadScript    = mustScript("faster_read")
)

// syncedScript is mustScript for a script replica sync follows.
func syncedScript(name string) *transport.Script {
	s := mustScript(name)
	s.Synced = true
	return s
}

// mustScript loads an embedded script. Its SHA1 is not computed here but
// read from scriptSHA (script_digests.go), which a test checks against the
// sources: computing a SHA-1 at start-up would panic in a program run with
// GODEBUG=fips140=only, and every program that imports rlock would.
func mustScript(name string) *transport.Script {
	src, err := ScriptSource(name)
	if err != nil {
		panic(fmt.Sprintf("goredisson: embedded script %s: %v", name, err))
	}
	// A script without a digest (script_digests.go not regenerated after
	// an edit: TestScriptDigests fails then) is sent by EVAL, with its
	// source, every time.
	sha := scriptSHA[name]
	s := &transport.Script{Name: name, Src: src, SHA: sha, ShaArg: sha}
	scripts[name] = s
	return s
}

// includePrefix starts a line that a script replaces by lua/lib/<name>.lua:
// Redis scripts cannot share code, so shared helpers are inserted as text.
const includePrefix = "--#include "

// ScriptSource returns the text of lua/<name>.lua with its include lines
// expanded: the exact source sent to Redis.
func ScriptSource(name string) (string, error) {
	src, err := lua.FS.ReadFile(name + ".lua")
	if err != nil {
		return "", err
	}
	return expandIncludes(string(src), func(lib string) ([]byte, error) {
		return lua.FS.ReadFile("lib/" + lib + ".lua")
	})
}

// expandIncludes replaces every include line of src by the library read()
// returns for its name.
func expandIncludes(src string, read func(lib string) ([]byte, error)) (string, error) {
	var b strings.Builder
	for _, line := range strings.SplitAfter(src, "\n") {
		lib, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), includePrefix)
		if !ok {
			b.WriteString(line)
			continue
		}
		inc, err := read(strings.TrimSpace(lib))
		if err != nil {
			return "", fmt.Errorf("include %q: %w", strings.TrimSpace(lib), err)
		}
		b.Write(inc)
	}
	return b.String(), nil
}

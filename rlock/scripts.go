package rlock

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua lua/lib/*.lua
var luaFS embed.FS

// Scripts, loaded once from rlock/lua at start-up and never changed. Each runs
// as EVALSHA, falling back to EVAL when the server answers NOSCRIPT.
var (
	acquireScript       = mustScript("acquire")
	releaseScript       = mustScript("release")
	renewScript         = mustScript("renew")
	forceUnlockScript   = mustScript("forceunlock")
	cancelScript        = mustScript("cancel")
	fencedScript        = mustScript("fenced_acquire")
	readAcquireScript   = mustScript("read_acquire")
	writeAcquireScript  = mustScript("write_acquire")
	readReleaseScript   = mustScript("read_release")
	writeReleaseScript  = mustScript("write_release")
	readRenewScript     = mustScript("read_renew")
	rwForceUnlockScript = mustScript("rw_forceunlock")
	fairAcquireScript   = mustScript("fair_acquire")
	fairReleaseScript   = mustScript("fair_release")
	fairDequeueScript   = mustScript("fair_dequeue")
	fairForceScript     = mustScript("fair_forceunlock")
)

func mustScript(name string) *redis.Script {
	src, err := scriptSource(name)
	if err != nil {
		panic(fmt.Sprintf("rlock: embedded script %s: %v", name, err))
	}
	return redis.NewScript(src)
}

// includePrefix starts a line that a script replaces by lua/lib/<name>.lua:
// Redis scripts cannot share code, so shared helpers are inserted as text.
const includePrefix = "--#include "

// scriptSource returns the text of lua/<name>.lua with its include lines
// expanded: the exact source sent to Redis.
func scriptSource(name string) (string, error) {
	src, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(string(src), "\n") {
		lib, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), includePrefix)
		if !ok {
			b.WriteString(line)
			continue
		}
		inc, err := luaFS.ReadFile("lua/lib/" + strings.TrimSpace(lib) + ".lua")
		if err != nil {
			return "", err
		}
		b.Write(inc)
	}
	return b.String(), nil
}

// Scripts returns the embedded Lua sources by operation name (acquire,
// release, renew, forceunlock, cancel, ...), as sent to Redis (shared
// helpers inserted), with their SHA1 digests, so that
// operators can pre-load or audit them.
func Scripts() map[string]Script {
	out := make(map[string]Script)
	entries, _ := luaFS.ReadDir("lua")
	for _, e := range entries {
		if e.IsDir() {
			continue // lua/lib: helpers included by the scripts
		}
		name := strings.TrimSuffix(e.Name(), ".lua")
		src, err := scriptSource(name)
		if err != nil {
			continue // unreachable: mustScript loaded every script at start-up
		}
		out[name] = Script{Source: src, SHA1: redis.NewScript(src).Hash()}
	}
	return out
}

// Script is one embedded Lua script.
type Script struct {
	Source string
	SHA1   string
}

// isNoScript reports whether err is Redis's NOSCRIPT reply.
func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// isServerReply reports whether err is an error reply from Redis: the command
// reached the server and its outcome is known (it failed). Any other error
// (timeout, cancelled context, broken connection) leaves the outcome unknown.
func isServerReply(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && !errors.Is(err, redis.Nil)
}

// notSent reports whether err proves that a command never reached Redis: no
// connection could be made or taken from the pool. Its outcome is known.
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed)
}

// evalBatch runs one script over many key sets in one pipeline and returns
// the replies in order. With loadSrc (the script's source) set, SCRIPT LOAD
// goes first in the same pipeline, so that a script the server has not
// seen yet costs no extra round trip. Scripts still missing from the server's cache (a restart
// flushed it, or a cluster node other than the one that loaded it) are
// loaded and the affected calls run again.
func evalBatch(ctx context.Context, rdb redis.UniversalClient, s *redis.Script, keys [][]string, args [][]any, loadSrc string) ([]*redis.Cmd, error) {
	run := func(idx []int) ([]*redis.Cmd, error) {
		pipe := rdb.Pipeline()
		if loadSrc != "" {
			// Script.Load on a go-redis pipeline sends nothing useful
			// (its reply is lost and the EVALSHAs still fail); Do works.
			pipe.Do(ctx, "script", "load", loadSrc)
			loadSrc = ""
		}
		cmds := make([]*redis.Cmd, len(idx))
		for i, j := range idx {
			cmds[i] = s.EvalSha(ctx, pipe, keys[j], args[j]...)
		}
		_, err := pipe.Exec(ctx)
		if err != nil && !errors.Is(err, redis.Nil) && !isServerReply(err) {
			return nil, err
		}
		return cmds, nil
	}
	all := make([]int, len(keys))
	for i := range all {
		all[i] = i
	}
	cmds, err := run(all)
	if err != nil {
		return nil, err
	}
	var missing []int
	for i, c := range cmds {
		if isNoScript(c.Err()) {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return cmds, nil
	}
	if err := s.Load(ctx, rdb).Err(); err != nil {
		return nil, err
	}
	again, err := run(missing)
	if err != nil {
		return nil, err
	}
	for i, j := range missing {
		cmds[j] = again[i]
	}
	return cmds, nil
}

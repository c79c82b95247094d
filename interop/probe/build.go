package probe

import (
	"context"
	"crypto/sha256"
	_ "embed" // the probe's Java source
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

//go:embed java/RedissonProbe.java
var javaSource []byte

// JavaSource returns the probe program's Java source (RedissonProbe.java),
// for a porter who builds it with their own tool instead.
func JavaSource() []byte { return append([]byte(nil), javaSource...) }

// compile returns a directory holding RedissonProbe.class compiled against
// cfg.ClassPath: the cached one when the source, the class path and its
// entries' sizes and times are unchanged, else a new one. Concurrent starts
// (parallel test processes) each compile into a directory of their own and
// the first to rename it into place wins.
func compile(ctx context.Context, cfg Config) (string, error) {
	base := cfg.CacheDir
	if base == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		base = filepath.Join(dir, "goredisson-probe")
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("probe: cache directory: %w", err)
	}
	javac, err := javaTool(cfg, "javac")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(base, cacheKey(cfg.ClassPath, javac))
	if _, err := os.Stat(filepath.Join(dir, "RedissonProbe.class")); err == nil {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(base, "build-")
	if err != nil {
		return "", fmt.Errorf("probe: cache directory: %w", err)
	}
	defer os.RemoveAll(tmp) // nothing left once renamed
	src := filepath.Join(tmp, "RedissonProbe.java")
	if err := os.WriteFile(src, javaSource, 0o644); err != nil {
		return "", fmt.Errorf("probe: %w", err)
	}
	out, err := exec.CommandContext(ctx, javac, "-nowarn", "-encoding", "UTF-8", "-d", tmp, "-cp", cfg.ClassPath, src).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("probe: javac RedissonProbe.java against %s=%s: %w: %s", ClassPathEnv, cfg.ClassPath, err, strings.TrimSpace(string(out)))
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "RedissonProbe.class")); serr == nil {
			return dir, nil // another process was first
		}
		return "", fmt.Errorf("probe: cache directory: %w", err)
	}
	return dir, nil
}

// cacheKey hashes what the compiled classes depend on.
func cacheKey(classPath, javac string) string {
	h := sha256.New()
	h.Write(javaSource)
	fmt.Fprintf(h, "\x00%s\x00%s\x00%s", javac, runtime.GOOS, classPath)
	for _, e := range filepath.SplitList(classPath) {
		if fi, err := os.Stat(e); err == nil {
			fmt.Fprintf(h, "\x00%s %d %d", e, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:20]
}

// javaTool finds bin/<name> under Config.JavaHome, $JAVA_HOME, or on PATH.
func javaTool(cfg Config, name string) (string, error) {
	for _, home := range []string{cfg.JavaHome, os.Getenv("JAVA_HOME")} {
		if home == "" {
			continue
		}
		p := filepath.Join(home, "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("probe: %s not found (set JAVA_HOME or Config.JavaHome, or put a JDK on PATH): %w", name, err)
	}
	return p, nil
}

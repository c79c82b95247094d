package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// The real Redisson's rows run in java/RedissonBench.java, the bench's own
// Java program, compiled at bench time against the class path of a
// Redisson build named by REDISSON_PROBE: the interop probe's run-probe.sh
// (built offline by ../shared/tools/redisson-probe/build.sh; neither
// Redisson nor anything built from it is part of this repository). Without
// REDISSON_PROBE, or without javac, the Redisson rows are skipped with a
// line saying so.

// redissonProbeEnv names the probe's run-probe.sh.
const redissonProbeEnv = "REDISSON_PROBE"

var (
	probeClassPathRE = regexp.MustCompile(`-cp\s+(?:"([^"]+)"|(\S+))`)
	probeVersionRE   = regexp.MustCompile(`-Dprobe\.redisson="([^"]*)"`)
)

// javaBench is RedissonBench compiled against a Redisson build.
type javaBench struct {
	java, classPath, version string
	dir                      string // its classes, removed by close
}

// compileRedissonBench compiles java/RedissonBench.java against the class
// path of $REDISSON_PROBE; skip says why the Redisson rows cannot run here.
func compileRedissonBench() (jb *javaBench, skip string, err error) {
	script := os.Getenv(redissonProbeEnv)
	if script == "" {
		return nil, redissonProbeEnv + " is not set (point it at the Redisson probe's run-probe.sh, see ../shared/tools/redisson-probe)", nil
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		return nil, "javac is not installed", nil
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, "java is not installed", nil
	}
	text, err := os.ReadFile(script)
	if err != nil {
		return nil, "", fmt.Errorf("%s=%s: %w", redissonProbeEnv, script, err)
	}
	m := probeClassPathRE.FindStringSubmatch(string(text))
	if m == nil {
		return nil, "", fmt.Errorf("no -cp argument in %s", script)
	}
	cp := m[1] + m[2]
	if classes := filepath.Join(filepath.Dir(script), "classes"); !strings.Contains(":"+cp+":", ":"+classes+":") {
		cp = classes + ":" + cp
	}
	version := "Redisson classes of " + script
	if v := probeVersionRE.FindStringSubmatch(string(text)); v != nil {
		version = "Redisson " + v[1]
	}
	src, err := javaSource()
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "redissonbench-")
	if err != nil {
		return nil, "", err
	}
	if out, err := exec.Command(javac, "-nowarn", "-d", dir, "-cp", cp, src).CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", fmt.Errorf("javac RedissonBench.java: %w: %s", err, out)
	}
	return &javaBench{java: java, classPath: dir + ":" + cp, version: version, dir: dir}, "", nil
}

// javaSource finds java/RedissonBench.java next to this source file (go
// run from bench/) or in the working directory.
func javaSource() (string, error) {
	var dirs []string
	if _, file, _, ok := runtime.Caller(0); ok {
		dirs = append(dirs, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		dirs = append(dirs, wd, filepath.Join(wd, "bench"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "java", "RedissonBench.java")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("java/RedissonBench.java not found (run the bench from bench/)")
}

// start runs RedissonBench against the Redis at addr; watchdog is its
// lockWatchdogTimeout (0: Redisson's default, 30 s).
func (jb *javaBench) start(name, addr string, watchdog time.Duration) (*worker, error) {
	args := []string{"-Xss512k", "-Dorg.slf4j.simpleLogger.defaultLogLevel=error", "-cp", jb.classPath, "RedissonBench", "redis://" + addr}
	if watchdog > 0 {
		args = append(args, strconv.FormatInt(watchdog.Milliseconds(), 10))
	}
	return startWorker(name, exec.Command(jb.java, args...), 60*time.Second)
}

func (jb *javaBench) close() { _ = os.RemoveAll(jb.dir) }

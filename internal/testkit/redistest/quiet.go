package redistest

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// WaitQuiet waits until the server rdb talks to has run no command but the
// looker's own INFO for a second (four looks 250 ms apart, at most two
// commands between two looks): what a benchmark's clients were to send
// (attempts, subscriptions) has been sent. It fails after within.
func WaitQuiet(rdb *redis.Client, within time.Duration) error {
	last, still := int64(-1), 0
	for deadline := time.Now().Add(within); still < 4; {
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: Redis did not go quiet within %v", within)
		}
		time.Sleep(250 * time.Millisecond)
		info, err := rdb.Info(context.Background(), "stats").Result()
		if err != nil {
			return err
		}
		var cmds int64
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
				cmds, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		if last >= 0 && cmds-last <= 2 {
			still++
		} else {
			still = 0
		}
		last = cmds
	}
	return nil
}

// MemAfterGC returns the process's memory statistics after two garbage
// collections (the second frees what the first's finalizers left).
func MemAfterGC() runtime.MemStats {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m
}

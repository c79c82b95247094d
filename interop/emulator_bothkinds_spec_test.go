package interop_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/goredisson/goredisson/rlock"
)

// goClientOptions are put before the options of every goredisson client a
// spec makes (env.goClient), and listenSharded makes world.listen hear
// sharded messages (SSUBSCRIBE) instead of classic ones: the both-kinds run
// of the emulator suite sets them for its specs.
var (
	goClientOptions []rlock.Option
	listenSharded   bool
)

// The emulator suite again, with goredisson publishing and listening both
// ways (rlock.PubSubBoth, what WithRedissonVersion 3.22.0 to 3.27.x gives
// on a Cluster) and the emulated Redisson of each kind: classic, as a start
// that drew classic pub/sub, and sharded (SPUBLISH, SSUBSCRIBE), as one
// that drew sharded. One server serves both kinds here as a Cluster's
// master does (cluster_bothkinds_spec_test.go in the module root runs the
// mechanism on a Cluster).
var _ = Describe("goredisson with both kinds of pub/sub and the Redisson emulator", func() {
	for _, sharded := range []bool{false, true} {
		title := "the emulator on classic pub/sub"
		if sharded {
			title = "the emulator on sharded pub/sub"
		}
		Context(title, func() {
			BeforeEach(func() {
				goClientOptions = []rlock.Option{rlock.WithPubSubMode(rlock.PubSubBoth)}
				listenSharded = sharded
				DeferCleanup(func() { goClientOptions, listenSharded = nil, false })
			})
			interopSpecs(func(e *env) redissonSide {
				opts := []emuOption{emuWatchdog(javaWatchdog * time.Millisecond)}
				if sharded {
					opts = append(opts, emuSharded())
				}
				return e.newEmuSide(opts...)
			}, false)
		})
	}
})

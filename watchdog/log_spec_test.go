package watchdog_test

import (
	"bytes"
	"errors"
	"log/slog"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/watchdog"
)

// logBuffer is an io.Writer safe for the Scheduler's goroutine and the spec.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var _ = Describe("Scheduler logs", func() {
	var (
		out *logBuffer
		rec *recorder
		s   *watchdog.Scheduler
	)
	const lease = 600 * time.Millisecond
	BeforeEach(func() {
		out = &logBuffer{}
		rec = &recorder{status: map[string]watchdog.Status{}}
		log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
		s = watchdog.New(rec.renew, lease, watchdog.WithLogger(log))
		DeferCleanup(s.Close)
	})

	It("a fixed lease that ends as asked at Debug, not as a warning", func() {
		e := s.Add(watchdog.Lease{Key: "fixed", Field: "f"}, watchdog.Deadline(time.Now(), 300*time.Millisecond), false)
		Eventually(e.Lost()).WithTimeout(3 * time.Second).Should(BeClosed())
		Eventually(out.String).Should(ContainSubstring("key=fixed"))
		Expect(out.String()).To(ContainSubstring("level=DEBUG"))
		Expect(out.String()).NotTo(ContainSubstring("level=WARN"))
	})

	It("a watchdog lease that could not be renewed in time as a warning", func() {
		rec.fail(errors.New("redis down"))
		e := s.Add(watchdog.Lease{Key: "renewed", Field: "f"}, watchdog.Deadline(time.Now(), lease), true)
		Eventually(e.Lost()).WithTimeout(3 * time.Second).Should(BeClosed())
		Eventually(out.String).Should(MatchRegexp(`level=WARN msg="goredisson: lock lease ran out without a confirmed renewal; the lock is lost" key=renewed`))
	})
})

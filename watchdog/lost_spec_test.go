package watchdog_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/watchdog"
)

// An entry's Lost channel is made only when asked for: asked before or
// after the loss, it is closed by it, and IsLost agrees with it.
var _ = Describe("Entry.Lost made on demand", func() {
	var s *watchdog.Scheduler
	BeforeEach(func() {
		rec := &recorder{status: map[string]watchdog.Status{}}
		s = watchdog.New(rec.renew, 30*time.Second)
		DeferCleanup(s.Close)
	})
	add := func() *watchdog.Entry {
		return s.Add(watchdog.Lease{Key: "k", Field: "f"}, watchdog.Deadline(time.Now(), 30*time.Second), true)
	}

	It("closes a channel asked for before the loss", func() {
		e := add()
		lost := e.Lost()
		Expect(lost).NotTo(BeClosed())
		Expect(e.IsLost()).To(BeFalse())
		Expect(e.Lost()).To(Equal(lost), "one channel")
		e.Lose()
		Expect(lost).To(BeClosed())
		Expect(e.IsLost()).To(BeTrue())
	})

	It("hands a closed channel when asked after the loss", func() {
		e := add()
		e.Lose()
		Expect(e.IsLost()).To(BeTrue())
		Expect(e.Lost()).To(BeClosed())
	})

	It("is not lost once stopped, and lost with ErrClosed at Close", func() {
		stopped, watched := add(), add()
		stopped.Stop()
		s.Close()
		Expect(stopped.IsLost()).To(BeFalse())
		Expect(stopped.Lost()).NotTo(BeClosed())
		Expect(watched.IsLost()).To(BeTrue())
		Expect(watched.Lost()).To(BeClosed())
		Expect(watched.Err()).To(MatchError(watchdog.ErrClosed))
	})

	It("is lost at once when added to a closed Scheduler", func() {
		s.Close()
		e := add()
		Expect(e.IsLost()).To(BeTrue())
		Expect(e.Lost()).To(BeClosed())
	})
})

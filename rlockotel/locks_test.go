package rlockotel_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.opentelemetry.io/otel/codes"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlockotel"
)

// The attribute keys a metric may have.
var metricKeys = []string{"goredisson.lock.kind", "goredisson.lock.operation", "goredisson.lock.outcome", "error.type"}

var _ = Describe("Observer on real locks", func() {
	var (
		w  *world
		bg context.Context
	)
	BeforeEach(func() {
		w = newWorld()
		bg = context.Background()
	})

	It("records the wait and contention of a contended lock", func() {
		client := w.client()
		holder, waiter := ctxowner.New(bg), ctxowner.New(bg)
		lock := client.NewFairLock("orders:42")
		Expect(lock.Lock(holder)).To(Succeed())

		ok, err := lock.TryLock(waiter, 200*time.Millisecond, 0)
		Expect(ok, err).To(BeFalse())
		busy := m{"goredisson.lock.kind": "fairlock", "goredisson.lock.operation": "trylock", "goredisson.lock.outcome": "busy"}
		Expect(w.total(rlockotel.WaitDurationName, busy)).To(BeEquivalentTo(1))
		Expect(w.sum(rlockotel.WaitDurationName, busy)).To(BeNumerically(">=", 0.2))
		tryAttrs := m{"goredisson.lock.kind": "fairlock", "goredisson.lock.operation": "trylock"}
		Expect(w.total(rlockotel.ContentionName, tryAttrs)).To(BeNumerically(">=", 2), "every attempt of a TryLock that ran out found the lock taken")
		Expect(w.total(rlockotel.AcquisitionsName, tryAttrs)).To(BeZero())

		waited := make(chan error, 1)
		go func() { waited <- lock.Lock(waiter) }()
		// The waiter is in the fair lock's queue: its first attempt found
		// the lock taken.
		Eventually(func() int64 { return w.raw.LLen(bg, "redisson_lock_queue:{orders:42}").Val() }).
			WithTimeout(5 * time.Second).Should(BeEquivalentTo(1))
		Expect(lock.Unlock(holder)).To(Succeed())
		Eventually(waited).WithTimeout(5 * time.Second).Should(Receive(Succeed()))
		Expect(lock.Unlock(waiter)).To(Succeed())

		lockAttrs := m{"goredisson.lock.kind": "fairlock", "goredisson.lock.operation": "lock"}
		Expect(w.total(rlockotel.AcquisitionsName, lockAttrs)).To(BeEquivalentTo(2))
		Expect(w.total(rlockotel.ContentionName, lockAttrs)).To(BeNumerically(">=", 1))
		Expect(w.total(rlockotel.WaitDurationName, m{"goredisson.lock.operation": "lock", "goredisson.lock.outcome": "acquired"})).To(BeEquivalentTo(2))

		tries := w.ended("goredisson trylock")
		Expect(tries).To(HaveLen(1))
		Expect(tries[0].Status().Code).To(Equal(codes.Unset), "a TryLock whose wait ran out is no error")
		Expect(spanAttrs(tries[0])).To(And(
			HaveKeyWithValue("goredisson.lock.name", "orders:42"),
			HaveKeyWithValue("goredisson.lock.kind", "fairlock"),
			HaveKeyWithValue("goredisson.lock.acquired", "false"),
			HaveKeyWithValue("goredisson.lock.attempts", Not(BeElementOf("0", "1"))),
			Not(HaveKey("error.type"))))
		Expect(tries[0].EndTime().Sub(tries[0].StartTime())).To(BeNumerically(">=", 200*time.Millisecond))
		Expect(w.ended("goredisson lock")).To(HaveLen(2))
	})

	It("records how long a lock was held when its last hold is given back", func() {
		client := w.client()
		owner := ctxowner.New(bg)
		lock := client.NewLock("reports:daily")
		start := time.Now()
		Expect(lock.Lock(owner)).To(Succeed())
		Expect(lock.Lock(owner)).To(Succeed())
		Expect(lock.Unlock(owner)).To(Succeed())
		Expect(w.total(rlockotel.HoldDurationName, nil)).To(BeZero(), "one hold is left")
		Expect(lock.Unlock(owner)).To(Succeed())
		elapsed := time.Since(start)

		held := m{"goredisson.lock.kind": "lock", "goredisson.lock.operation": "unlock"}
		Expect(w.total(rlockotel.HoldDurationName, held)).To(BeEquivalentTo(1))
		Expect(w.sum(rlockotel.HoldDurationName, held)).To(And(BeNumerically(">", 0), BeNumerically("<=", elapsed.Seconds())))

		unlocks := w.ended("goredisson unlock")
		Expect(unlocks).To(HaveLen(2))
		Expect(spanAttrs(unlocks[0])).NotTo(HaveKey("goredisson.lock.hold.duration"))
		Expect(spanAttrs(unlocks[1])).To(HaveKey("goredisson.lock.hold.duration"))
		Expect(w.total(rlockotel.ErrorsName, nil)).To(BeZero())
	})

	It("records a force-unlocked hold as lost, and the owner's late unlock as an error", func() {
		client := w.client(rlock.WithWatchdogTimeout(time.Second))
		owner := ctxowner.New(bg)
		lock := client.NewLock("jobs:7")
		Expect(lock.Lock(owner)).To(Succeed())
		Expect(lock.ForceUnlock(bg)).To(BeTrue())

		lost := m{"goredisson.lock.kind": "lock", "error.type": "lock_lost"}
		Eventually(func() int64 { return w.total(rlockotel.LostName, lost) }).WithTimeout(5 * time.Second).Should(BeEquivalentTo(1))
		// The loss is recorded on the watchdog's goroutine, the counter
		// before the hold time: a collect in between sees only the first.
		Eventually(func() int64 { return w.total(rlockotel.HoldDurationName, m{"goredisson.lock.operation": "lost"}) }).
			WithTimeout(5 * time.Second).Should(BeEquivalentTo(1))

		Expect(lock.Unlock(owner)).To(MatchError(rlock.ErrNotHeld))
		Expect(w.total(rlockotel.ErrorsName, m{"goredisson.lock.operation": "unlock", "error.type": "not_held"})).To(BeEquivalentTo(1))
		Expect(w.total(rlockotel.HoldDurationName, nil)).To(BeEquivalentTo(1), "the hold was recorded once, at its loss")

		spans := w.ended("goredisson lost")
		Expect(spans).To(HaveLen(1))
		Expect(spans[0].Parent().IsValid()).To(BeFalse(), "a loss is found by the watchdog, outside any call")
		Expect(spans[0].Status().Code).To(Equal(codes.Error))
		Expect(spanAttrs(spans[0])).To(And(
			HaveKeyWithValue("goredisson.lock.name", "jobs:7"),
			HaveKeyWithValue("error.type", "lock_lost"),
			HaveKey("goredisson.lock.hold.duration")))
	})

	It("gives failures their error.type", func() {
		client := w.client()
		owner := ctxowner.New(bg)

		Expect(w.raw.Set(bg, "cart:1", "not a lock", 0).Err()).To(Succeed())
		Expect(client.NewLock("cart:1").Lock(owner)).To(MatchError(ContainSubstring("WRONGTYPE")))
		Expect(w.total(rlockotel.ErrorsName, m{"goredisson.lock.operation": "lock", "error.type": "WRONGTYPE"})).To(BeEquivalentTo(1))
		Expect(w.total(rlockotel.WaitDurationName, m{"goredisson.lock.outcome": "error", "error.type": "WRONGTYPE"})).To(BeEquivalentTo(1))
		failed := w.ended("goredisson lock")
		Expect(failed).To(HaveLen(1))
		Expect(failed[0].Status().Code).To(Equal(codes.Error))
		Expect(spanAttrs(failed[0])).To(HaveKeyWithValue("error.type", "WRONGTYPE"))
		Expect(failed[0].Events()).To(ContainElement(HaveField("Name", "exception")))

		busy := client.NewLock("cart:2")
		Expect(busy.Lock(owner)).To(Succeed())
		waitCtx, cancel := context.WithTimeout(ctxowner.New(bg), 300*time.Millisecond)
		defer cancel()
		Expect(busy.Lock(waitCtx)).To(MatchError(context.DeadlineExceeded))
		Expect(w.total(rlockotel.ErrorsName, m{"goredisson.lock.operation": "lock", "error.type": "deadline_exceeded"})).To(BeEquivalentTo(1))

		Expect(client.NewLock("cart:3").Unlock(owner)).To(MatchError(rlock.ErrNotHeld))
		Expect(w.total(rlockotel.ErrorsName, m{"goredisson.lock.operation": "unlock", "error.type": "not_held"})).To(BeEquivalentTo(1))
		Expect(w.total(rlockotel.ErrorsName, nil)).To(BeEquivalentTo(3))
	})

	It("keeps lock names out of metric attributes", func() {
		client := w.client(rlock.WithWatchdogTimeout(time.Second))
		owner, other := ctxowner.New(bg), ctxowner.New(bg)
		for _, name := range []string{"secret-a", "secret-b", "secret-c"} {
			l := client.NewLock(name)
			Expect(l.Lock(owner)).To(Succeed())
			Expect(l.TryLock(other, 0, 0)).To(BeFalse())
			Expect(l.Unlock(owner)).To(Succeed())
			Expect(l.Unlock(owner)).To(MatchError(rlock.ErrNotHeld))
		}
		fenced := client.NewFencedLock("secret-d")
		_, err := fenced.LockToken(owner)
		Expect(err).NotTo(HaveOccurred())
		Expect(fenced.ForceUnlock(bg)).To(BeTrue())
		Eventually(func() int64 { return w.total(rlockotel.LostName, nil) }).WithTimeout(5 * time.Second).Should(BeEquivalentTo(1))

		metrics := w.collect()
		Expect(metrics).To(HaveLen(8), "every instrument recorded")
		for name := range metrics {
			for _, p := range w.points(name) {
				Expect(metricKeys).To(ContainElements(keys(p.Attrs)), name)
				for _, v := range p.Attrs {
					Expect(v).NotTo(ContainSubstring("secret"), name)
				}
			}
		}
		Expect(w.ended("goredisson locktoken")).To(HaveLen(1))
		Expect(spanAttrs(w.ended("goredisson locktoken")[0])).To(HaveKeyWithValue("goredisson.lock.name", "secret-d"))
	})

	It("makes the spans children of the caller's span, within the call", func() {
		client := w.client()
		ctx, parent := w.tp.Tracer("test").Start(ctxowner.New(bg), "handle order")
		lock := client.NewLock("orders:43")
		before := time.Now()
		Expect(lock.Lock(ctx)).To(Succeed())
		Expect(lock.Unlock(ctx)).To(Succeed())
		after := time.Now()
		parent.End()

		for _, name := range []string{"goredisson lock", "goredisson unlock"} {
			spans := w.ended(name)
			Expect(spans).To(HaveLen(1), name)
			s := spans[0]
			Expect(s.Parent().SpanID()).To(Equal(parent.SpanContext().SpanID()), name)
			Expect(s.SpanContext().TraceID()).To(Equal(parent.SpanContext().TraceID()), name)
			Expect(s.StartTime()).To(BeTemporally(">=", before), name)
			Expect(s.EndTime()).To(And(BeTemporally(">=", s.StartTime()), BeTemporally("<=", after)), name)
			Expect(s.InstrumentationScope().Name).To(Equal(rlockotel.ScopeName))
		}
	})
})

// keys returns a map's keys.
func keys(mp map[string]string) []string {
	var out []string
	for k := range mp {
		out = append(out, k)
	}
	return out
}

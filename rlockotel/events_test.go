package rlockotel_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlockotel"
)

// replyErr is an error reply of Redis as go-redis types them (redis.Error).
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// The Observer's rules on events made up to the point, where real locks
// cannot give the exact numbers or the rare errors.
var _ = Describe("Observer on events", func() {
	var (
		w     *world
		start time.Time
	)
	BeforeEach(func() {
		w = newWorld()
		start = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	})

	It("spans exactly the event's start and duration", func() {
		w.obs.Observe(context.Background(), rlock.Event{Op: "lock", Kind: "lock", Lock: "a", Start: start,
			Duration: 1500 * time.Millisecond, Attempts: 3, Acquired: true})
		spans := w.ended("goredisson lock")
		Expect(spans).To(HaveLen(1))
		Expect(spans[0].StartTime()).To(BeTemporally("==", start))
		Expect(spans[0].EndTime()).To(BeTemporally("==", start.Add(1500*time.Millisecond)))
		Expect(spanAttrs(spans[0])).To(Equal(m{"goredisson.lock.kind": "lock", "goredisson.lock.name": "a",
			"goredisson.lock.operation": "lock", "goredisson.lock.attempts": "3", "goredisson.lock.acquired": "true"}))
		Expect(w.sum(rlockotel.WaitDurationName, m{"goredisson.lock.outcome": "acquired"})).To(BeNumerically("~", 1.5, 1e-9))
	})

	DescribeTable("counts the attempts that found the lock taken",
		func(e rlock.Event, contended int) {
			e.Op, e.Kind, e.Lock, e.Start = "trylock", "spinlock", "a", start
			w.obs.Observe(context.Background(), e)
			Expect(w.total(rlockotel.ContentionName, m{"goredisson.lock.kind": "spinlock"})).To(BeEquivalentTo(contended))
		},
		Entry("acquired at once: none", rlock.Event{Attempts: 1, Acquired: true}, 0),
		Entry("acquired at the third attempt: two", rlock.Event{Attempts: 3, Contended: 2, Acquired: true}, 2),
		Entry("a wait that ran out: all", rlock.Event{Attempts: 4, Contended: 4}, 4),
		Entry("a failed attempt after a busy one: one", rlock.Event{Attempts: 2, Contended: 1, Err: errors.New("boom")}, 1),
		Entry("a wait whose ctx ended after busy attempts: those", rlock.Event{Attempts: 3, Contended: 3, Err: context.Canceled}, 3),
		Entry("failed before any attempt: none", rlock.Event{Err: rlock.ErrClosed}, 0),
	)

	DescribeTable("names errors by error.type",
		func(err error, want string) {
			w.obs.Observe(context.Background(), rlock.Event{Op: "unlock", Kind: "lock", Lock: "a", Start: start, Err: err})
			Expect(w.points(rlockotel.ErrorsName)).To(ConsistOf(HaveField("Attrs", m{
				"goredisson.lock.kind": "lock", "goredisson.lock.operation": "unlock", "error.type": want})))
			spans := w.ended("goredisson unlock")
			Expect(spans).To(HaveLen(1))
			Expect(spans[0].Status()).To(HaveField("Code", codes.Error))
			Expect(spanAttrs(spans[0])).To(HaveKeyWithValue("error.type", want))
		},
		Entry("ErrNotHeld", &rlock.Error{Op: "unlock", Lock: "a", Err: rlock.ErrNotHeld}, "not_held"),
		Entry("ErrLockLost", rlock.ErrLockLost, "lock_lost"),
		Entry("ErrClosed", &rlock.Error{Op: "unlock", Lock: "a", Err: rlock.ErrClosed}, "closed"),
		Entry("ErrInvalidArgument, wrapped", fmt.Errorf("%w: lease 5µs", rlock.ErrInvalidArgument), "invalid_argument"),
		Entry("ErrReplicaSync", rlock.ErrReplicaSync, "replica_sync"),
		Entry("ErrNoQuorum", rlock.ErrNoQuorum, "no_quorum"),
		Entry("context.Canceled", &rlock.Error{Op: "unlock", Lock: "a", Err: context.Canceled}, "canceled"),
		Entry("context.DeadlineExceeded", context.DeadlineExceeded, "deadline_exceeded"),
		Entry("a Redis error reply", &rlock.Error{Op: "unlock", Lock: "a", Err: replyErr("READONLY You can't write against a read only replica.")}, "READONLY"),
		Entry("a Redis error reply without a code", replyErr("something odd"), "redis"),
		Entry("a network timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, "timeout"),
		Entry("another network error", &rlock.Error{Op: "unlock", Lock: "a", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, "*net.OpError"),
		Entry("an anonymous error", &rlock.Error{Op: "unlock", Lock: "a", Err: errors.New("boom")}, "_OTHER"),
	)

	It("reports a loss with its hold time, as a root span", func() {
		w.obs.Observe(context.Background(), rlock.Event{Op: "lost", Kind: "writelock", Lock: "catalog", Start: start,
			Held: 2 * time.Second, Err: rlock.ErrClosed})
		Expect(w.points(rlockotel.LostName)).To(ConsistOf(HaveField("Attrs", m{"goredisson.lock.kind": "writelock", "error.type": "closed"})))
		Expect(w.sum(rlockotel.HoldDurationName, m{"goredisson.lock.operation": "lost"})).To(BeNumerically("~", 2, 1e-9))
		Expect(w.points(rlockotel.ErrorsName)).To(BeEmpty(), "a loss is counted in lost, not in errors")
		spans := w.ended("goredisson lost")
		Expect(spans).To(HaveLen(1))
		Expect(spans[0].Parent().IsValid()).To(BeFalse())
		Expect(spans[0].StartTime()).To(BeTemporally("==", spans[0].EndTime()))
	})

	It("gives an operation it does not know a span, and counts its failures", func() {
		w.obs.Observe(context.Background(), rlock.Event{Op: "forceunlock", Kind: "lock", Lock: "a", Start: start, Err: rlock.ErrClosed})
		Expect(w.ended("goredisson forceunlock")).To(HaveLen(1))
		Expect(w.total(rlockotel.ErrorsName, m{"goredisson.lock.operation": "forceunlock"})).To(BeEquivalentTo(1))
		Expect(w.points(rlockotel.WaitDurationName)).To(BeEmpty())
	})
})

var _ = Describe("NewObserver's options", func() {
	event := rlock.Event{Op: "unlock", Kind: "lock", Lock: "a", Start: time.Now(), Held: time.Second}

	It("records no spans WithTracing(false)", func() {
		w := newWorld(rlockotel.WithTracing(false))
		w.obs.Observe(context.Background(), event)
		Expect(w.spans.Ended()).To(BeEmpty())
		Expect(w.total(rlockotel.HoldDurationName, nil)).To(BeEquivalentTo(1))
	})

	It("records no metrics WithMetrics(false)", func() {
		w := newWorld(rlockotel.WithMetrics(false))
		w.obs.Observe(context.Background(), event)
		Expect(w.collect()).To(BeEmpty())
		Expect(w.spans.Ended()).To(HaveLen(1))
	})

	It("adds WithAttributes to every measurement and span", func() {
		w := newWorld(rlockotel.WithAttributes(attribute.String("app.component", "billing")))
		w.obs.Observe(context.Background(), event)
		Expect(w.points(rlockotel.HoldDurationName)).To(ConsistOf(HaveField("Attrs", HaveKeyWithValue("app.component", "billing"))))
		Expect(spanAttrs(w.spans.Ended()[0])).To(HaveKeyWithValue("app.component", "billing"))
	})

	It("uses the global providers by default", func() {
		w := newWorld()
		prevMP, prevTP := otel.GetMeterProvider(), otel.GetTracerProvider()
		DeferCleanup(func() {
			otel.SetMeterProvider(prevMP)
			otel.SetTracerProvider(prevTP)
		})
		otel.SetMeterProvider(w.mp)
		otel.SetTracerProvider(w.tp)
		obs, err := rlockotel.NewObserver()
		Expect(err).NotTo(HaveOccurred())
		obs.Observe(context.Background(), event)
		Expect(w.total(rlockotel.HoldDurationName, nil)).To(BeEquivalentTo(1))
		Expect(w.spans.Ended()).To(HaveLen(1))
	})

	It("refuses nil providers", func() {
		_, err := rlockotel.NewObserver(rlockotel.WithMeterProvider(nil))
		Expect(err).To(MatchError(ContainSubstring("nil MeterProvider")))
		_, err = rlockotel.NewObserver(rlockotel.WithTracerProvider(nil))
		Expect(err).To(MatchError(ContainSubstring("nil TracerProvider")))
	})

	It("advises histogram buckets in seconds", func() {
		w := newWorld()
		w.obs.Observe(context.Background(), event)
		rm := w.collect()[rlockotel.HoldDurationName]
		Expect(rm.Unit).To(Equal("s"))
		Expect(rm.Data).To(HaveField("DataPoints", ContainElement(HaveField("Bounds", ContainElements(0.001, 1.0, 3600.0)))))
	})
})

package rlock_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// syncBuffer is a log sink safe for the Client's goroutines and the spec.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// bufferLogger returns a logger writing text records at Debug and above to
// a buffer.
func bufferLogger() (*slog.Logger, *syncBuffer) {
	out := &syncBuffer{}
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug})), out
}

var _ = Describe("RedLock over 1 or 2 masters, as Redisson accepts it", func() {
	const warning = "gives no more safety than a single lock"
	var ctx context.Context
	BeforeEach(func() {
		spectest.NewEnv()
		ctx = ctxowner.New(context.Background())
	})

	It("over one master: quorum 1, locks and unlocks, and warns once per Client", func() {
		log, out := bufferLogger()
		c := spectest.ClientOn(spectest.Server().Addr, rlock.WithLogger(log))
		name := spectest.UniqueName("red-one")
		r, err := rlock.NewRedLock(c.NewLock(name))
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Quorum()).To(Equal(1))
		Expect(r.Lock(ctx)).To(Succeed())
		Expect(c.NewLock(name).IsLocked(ctx)).To(BeTrue())
		Expect(r.Unlock(ctx)).To(Succeed())
		_, err = rlock.NewRedLock(c.NewLock(name + ":again"))
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Count(out.String(), warning)).To(Equal(1), out.String())
		Expect(out.String()).To(ContainSubstring("level=WARN"))
	})

	It("over two masters: quorum 2 (both), as Redisson's N/2+1", func() {
		other := spectest.StartServers(1)[0]
		log, out := bufferLogger()
		c1 := spectest.ClientOn(spectest.Server().Addr, rlock.WithLogger(log))
		c2 := spectest.ClientOn(other.Addr)
		name := spectest.UniqueName("red-two")
		r, err := rlock.NewRedLock(c1.NewLock(name), c2.NewLock(name))
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Quorum()).To(Equal(2))
		Expect(r.Lock(ctx)).To(Succeed())
		Expect(c1.NewLock(name).IsLocked(ctx)).To(BeTrue())
		Expect(c2.NewLock(name).IsLocked(ctx)).To(BeTrue())
		Expect(r.Unlock(ctx)).To(Succeed())

		// One master held by someone else: no quorum of 2.
		Expect(c2.NewLock(name).Lock(ctxowner.New(context.Background()))).To(Succeed())
		ok, err := r.TryLock(ctx, 0, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeFalse())
		Expect(c1.NewLock(name).IsLocked(ctx)).To(BeFalse(), "the granted half was given back")
		Expect(strings.Count(out.String(), warning)).To(Equal(1), out.String())
	})

	It("still refuses an empty list", func() {
		_, err := rlock.NewRedLock()
		Expect(err).To(MatchError(rlock.ErrInvalidArgument))
	})
})

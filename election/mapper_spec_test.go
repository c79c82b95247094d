package election_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/goredisson/goredisson/election"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

var _ = Describe("Election under a NameMapper", func() {
	It("keeps two tenants' elections on the same name apart: separate leader keys and leaders", func() {
		e := spectest.NewEnv()
		ctx := context.Background()
		name := spectest.UniqueName("sched")
		tenant := func(prefix string) *rlock.Client {
			return e.Client(rlock.WithWatchdogTimeout(lease), rlock.WithNameMapper(
				func(n string) string { return prefix + n },
				func(k string) string { return strings.TrimPrefix(k, prefix) }))
		}
		l1, l2 := tenant("t1:").NewLock(name), tenant("t2:").NewLock(name)
		Expect(rlock.KeyOf(l1)).To(Equal("t1:" + name))
		el1, err := election.New(e.Raw, l1, election.WithMaxLease(lease))
		Expect(err).NotTo(HaveOccurred())
		el2, err := election.New(e.Raw, l2, election.WithMaxLease(lease))
		Expect(err).NotTo(HaveOccurred())

		_, err = el1.Campaign(ctx, "one")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = el1.Resign(context.Background()) })
		cctx, cancel := context.WithTimeout(ctx, 10*lease)
		defer cancel()
		_, err = el2.Campaign(cctx, "two")
		Expect(err).NotTo(HaveOccurred(), "tenant 2 leads its own election")
		DeferCleanup(func() { _ = el2.Resign(context.Background()) })

		Expect(el1.Leader(ctx)).To(Equal("one"))
		Expect(el2.Leader(ctx)).To(Equal("two"))
		Expect(e.Raw.Exists(ctx, "t1:"+name+":leader", "t2:"+name+":leader").Val()).To(BeEquivalentTo(2))
		Expect(e.Raw.Exists(ctx, name+":leader").Val()).To(BeZero(), "no key under the unmapped name")
	})
})

package election_test

import (
	"context"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/election"
	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// The specs' shared steps (only the API election had before issue 39, so
// that the specs written for it run on the code before it too).

// candidate returns a candidate in the election on name, on a Client of
// e with the given watchdog timeout, and that Client.
func candidate(e *spectest.Env, name string, timeout time.Duration, opts ...election.Option) (*election.Election, *rlock.Client) {
	GinkgoHelper()
	c := e.Client(rlock.WithWatchdogTimeout(timeout))
	el, err := election.New(e.Raw, c.NewLock(name), opts...)
	Expect(err).NotTo(HaveOccurred())
	return el, c
}

// leadsAtOnce makes the key say, as this Redis process would have written
// it, that the last leader resigned, so that the next leader leads without
// a wait.
func leadsAtOnce(rdb *redis.Client, name string) {
	GinkgoHelper()
	Expect(election.MarkResigned(context.Background(), rdb, name+":leader")).To(Succeed())
}

// won is what a campaign that returned saw at that instant.
type won struct {
	at      time.Time
	prevErr error // the previous leader's context's Err, read at once
}

// campaignIn campaigns in a goroutine; at its return it reads prev.Err()
// at once (the observation point where two leaders would show) and sends
// what it saw.
func campaignIn(ctx context.Context, el *election.Election, value string, prev context.Context) <-chan won {
	ch := make(chan won, 1)
	go func() {
		defer GinkgoRecover()
		_, err := el.Campaign(ctx, value)
		w := won{at: time.Now(), prevErr: prev.Err()}
		Expect(err).NotTo(HaveOccurred())
		ch <- w
	}()
	return ch
}

// helperAt reads a helper's next line, "leader <ns>" or "lost <ns> ...",
// checks that it starts with prefix and returns its time.
func helperAt(h *spectest.HelperProc, prefix string) time.Time {
	GinkgoHelper()
	var line string
	Eventually(h.Lines).WithTimeout(20 * time.Second).Should(Receive(&line))
	f := strings.Fields(line)
	Expect(f[0]).To(Equal(prefix), line)
	ns, err := strconv.ParseInt(f[1], 10, 64)
	Expect(err).NotTo(HaveOccurred())
	return time.Unix(0, ns)
}

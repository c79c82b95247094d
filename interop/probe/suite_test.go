package probe_test

import (
	"fmt"
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/testkit/suite"
	"github.com/goredisson/goredisson/interop/probe"
	"github.com/goredisson/goredisson/interop/probe/probetest"
	"github.com/goredisson/goredisson/rlocktest"
)

// The specs labelled redisson drive the real Redisson through the probe:
// they run when GOREDISSON_REDISSON_CLASSPATH names a Redisson jar and its
// dependencies, and are left out in one line otherwise (CI has no
// Redisson).
func TestProbe(t *testing.T) {
	var filters []string
	if os.Getenv(probe.ClassPathEnv) == "" {
		fmt.Println(probetest.SkipMessage)
		filters = append(filters, "!redisson")
	}
	suite.Run(t, "probe", filters...)
}

// srv is the suite's redis-server.
var srv *rlocktest.Server

var _ = BeforeSuite(func() {
	var err error
	srv, err = rlocktest.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(srv.Close)
})

// rdb returns a client of the suite's server, closed at cleanup.
func rdb() *redis.Client {
	c := srv.Client()
	DeferCleanup(c.Close)
	return c
}

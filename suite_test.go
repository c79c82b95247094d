package goredisson_test

import (
	"testing"

	"github.com/goredisson/goredisson/internal/testkit/suite"

	. "github.com/onsi/ginkgo/v2"

	"github.com/goredisson/goredisson/internal/testkit/spectest"
)

// What crosses packages, specified against real redis-server processes that
// the suites start on free loopback ports and stop by pid: faults, outages,
// bounds, Redis Cluster and Sentinel. Each package's own behaviour is
// specified beside its code (rlock's in rlock/).

func TestGoredisson(t *testing.T) {
	suite.RunParallel(t, "goredisson", 4)
}

var _ = BeforeSuite(spectest.StartServer)

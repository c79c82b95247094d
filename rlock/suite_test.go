package rlock_test

import (
	"testing"

	"github.com/goredisson/goredisson/internal/testkit/suite"

	. "github.com/onsi/ginkgo/v2"

	"github.com/goredisson/goredisson/internal/testkit/spectest"
	"github.com/goredisson/goredisson/rlock"
)

// rlock's behaviour, specified against real redis-server processes that the
// suite starts on free loopback ports and stops by pid. The package's
// internal specs (package rlock, *_internal_test.go) run in this suite too:
// one test binary has one Ginkgo suite.

func TestRlock(t *testing.T) {
	suite.RunParallel(t, "rlock", 8)
}

var _ = BeforeSuite(func() {
	spectest.StartServer()
	rlock.SetSpecServer(spectest.Server().Addr)
})

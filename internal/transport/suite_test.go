package transport

import (
	"testing"

	"github.com/goredisson/goredisson/internal/testkit/suite"
)

// The transport's specs run as every package's do (internal/testkit/suite): -short
// leaves out those on a Cluster or Sentinel, and the suite is spread over
// two processes.
func TestTransport(t *testing.T) {
	suite.RunParallel(t, "transport", 2)
}

// Package suite runs the repository's Ginkgo suites the same way in every
// package: `go test -short` leaves out the specs labelled slow, fault,
// cluster, sentinel or redisson (the edit loop), every run leaves out those
// labelled timing unless GOREDISSON_TIMING=1, and any -ginkgo.label-filter
// given is kept (and'ed with that).
//
// Both set Gomega's default Eventually timeout to EventuallyTimeout: the
// specs run on loaded 2-core machines, where Gomega's own default (1 s)
// is shorter than the scheduling noise a goroutine's exit or a round trip
// meets. A spec that bounds how soon something must happen says so with
// WithTimeout.
//
// RunParallel also spreads a suite's specs over several processes of the
// test binary (see shard.go): `go test` runs a package's one Ginkgo suite
// in one process, spec after spec, and most of our specs wait on a lease or
// a wake-up rather than use a CPU.
package suite

import (
	"os"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"
)

// ShortFilter is the label filter that -short adds.
const ShortFilter = "!slow && !fault && !cluster && !sentinel && !redisson"

// TimingFilter leaves out, unless TimingEnv is 1, the specs labelled timing:
// bounds of a few milliseconds that hold on a machine nothing else loads,
// and that a loaded machine's scheduling delays break. Each such spec has a
// twin in the default run with a bound that holds under load.
const TimingFilter = "!timing"

// TimingEnv names the environment variable that, set to 1, runs the specs
// labelled timing.
const TimingEnv = "GOREDISSON_TIMING"

// EventuallyTimeout is the default timeout of Gomega's Eventually in the
// suites Run and RunParallel run.
const EventuallyTimeout = 10 * time.Second

// Run runs the package's Ginkgo suite under t in this process; filters are
// label filters the package adds (and'ed with the command line's and
// -short's, and TimingFilter unless TimingEnv is 1).
func Run(t *testing.T, description string, filters ...string) {
	suiteConfig, reporterConfig := configuration(filters)
	ginkgo.RunSpecs(t, description, suiteConfig, reporterConfig)
}

// configuration is Ginkgo's configuration from the command line with the
// package's filters and -short's added.
func configuration(filters []string) (types.SuiteConfig, types.ReporterConfig) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	gomega.SetDefaultEventuallyTimeout(EventuallyTimeout)
	suiteConfig, reporterConfig := ginkgo.GinkgoConfiguration()
	if testing.Short() {
		filters = append(filters, ShortFilter)
	}
	if os.Getenv(TimingEnv) != "1" {
		filters = append(filters, TimingFilter)
	}
	for _, f := range filters {
		if suiteConfig.LabelFilter == "" {
			suiteConfig.LabelFilter = f
		} else {
			suiteConfig.LabelFilter = "(" + suiteConfig.LabelFilter + ") && (" + f + ")"
		}
	}
	return suiteConfig, reporterConfig
}

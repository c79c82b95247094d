// Package suite runs the repository's Ginkgo suites the same way in every
// package: `go test -short` leaves out the specs labelled slow, fault,
// cluster, sentinel or redisson (the edit loop), and any
// -ginkgo.label-filter given is kept (and'ed with that).
package suite

import (
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// ShortFilter is the label filter that -short adds.
const ShortFilter = "!slow && !fault && !cluster && !sentinel && !redisson"

// Run runs the package's Ginkgo suite under t; filters are label filters
// the package adds (and'ed with the command line's and -short's).
func Run(t *testing.T, description string, filters ...string) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	suiteConfig, reporterConfig := ginkgo.GinkgoConfiguration()
	if testing.Short() {
		filters = append(filters, ShortFilter)
	}
	for _, f := range filters {
		if suiteConfig.LabelFilter == "" {
			suiteConfig.LabelFilter = f
		} else {
			suiteConfig.LabelFilter = "(" + suiteConfig.LabelFilter + ") && (" + f + ")"
		}
	}
	ginkgo.RunSpecs(t, description, suiteConfig, reporterConfig)
}

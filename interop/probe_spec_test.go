package interop_test

import (
	. "github.com/onsi/ginkgo/v2"
)

// The probe suite: the real Redisson, built from its source. Label
// "redisson"; skipped (one line) when REDISSON_PROBE is not set.
var _ = Describe("goredisson and the real Redisson", Label("redisson"), func() {
	interopSpecs(realRedisson, true)

	// The facts the emulator suite holds goredisson to, checked on
	// Redisson itself.
	Context("Redisson's messages", func() {
		var w *world
		BeforeEach(func() { w = newWorld(realRedisson) })
		for _, c := range msgCases {
			It(c.what, func() { publishes(w, c.msgCase, true) })
		}
	})
})

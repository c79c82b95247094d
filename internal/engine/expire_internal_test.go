package engine

import (
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The suite's servers are Redis 7.0+; what a Redis 6 server answers to
// PEXPIRETIME and to a conditional PEXPIRE in a script is specified here by
// its error text (Redis 6.2.14's).
var _ = Describe("an expiry call on a server older than Redis 7.0", func() {
	DescribeTable("is errors.ErrUnsupported, naming the version it needs",
		func(reply string) {
			err := needsRedis7(errors.New(reply), "an expire condition")
			Expect(err).To(MatchError(errors.ErrUnsupported))
			Expect(err.Error()).To(ContainSubstring("needs Redis 7.0 or later"))
			Expect(err.Error()).To(ContainSubstring(reply), "the server's reply is kept")
		},
		Entry("PEXPIRETIME", "ERR unknown command `pexpiretime`, with args beginning with: `x-lock`, "),
		Entry("PEXPIRE NX in a script", "ERR Error running script (call to f_0d2a): @user_script:17: @user_script: 17: Wrong number of args calling Redis command From Lua script"),
		Entry("PEXPIRE NX", "ERR wrong number of arguments for 'pexpire' command"),
	)

	It("keeps other errors as they are", func() {
		other := errors.New("LOADING Redis is loading the dataset in memory")
		Expect(needsRedis7(other, "PEXPIRETIME")).To(BeIdenticalTo(other))
		Expect(needsRedis7(nil, "PEXPIRETIME")).To(Succeed())
	})
})

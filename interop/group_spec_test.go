package interop_test

import (
	. "github.com/onsi/ginkgo/v2"
)

// Redisson's RedissonMultiLock, RedissonRedLock, RedissonNonReentrantLock,
// RedissonNonReentrantFairLock and RedissonFasterMultiLock, driven through
// testdata/GroupProbe.java, and goredisson's MultiLock, RedLock,
// NewNonReentrantLock, NewNonReentrantFairLock and NewFasterMultiLock, over
// locks of one Client on one server.
// Label "redisson"; skipped (one line) when REDISSON_PROBE is not set or
// javac is missing.
var _ = Describe("goredisson and the real Redisson's MultiLock, RedLock and NonReentrantLock", Label("redisson"), func() {
	var s *groupWorld
	BeforeEach(func() { s = newGroupWorld() })

	Context("MultiLock", func() {
		DescribeTable("held over {a,b} by one client excludes the other's MultiLock over {a,b} and its lock on b; the other's waiter is woken by the unlock within a second (a missed message would cost its TTL)",
			func(javaHolds bool) { multiExcludes(s, javaHolds) },
			Entry("Redisson holds, goredisson waits", true),
			Entry("goredisson holds, Redisson waits", false),
		)
		DescribeTable("fails while b is held by the other client's lock, and gives a back",
			func(javaHolds bool) { multiGivesBack(s, javaHolds) },
			Entry("Redisson holds b, goredisson's MultiLock", true),
			Entry("goredisson holds b, Redisson's MultiLock", false),
		)
	})

	Context("RedLock over 3 names on one server", func() {
		DescribeTable("held by one client makes the other's short tryLock fail, and its waiting tryLock succeed at the unlock",
			func(javaHolds bool) { redExcludes(s, javaHolds) },
			Entry("Redisson holds, goredisson waits", true),
			Entry("goredisson holds, Redisson waits", false),
		)
		DescribeTable("is granted by a majority the other client left free, and fails, giving back what it got, without one",
			func(javaHolds bool) { redQuorum(s, javaHolds) },
			Entry("Redisson holds plain locks, goredisson's RedLock", true),
			Entry("goredisson holds plain locks, Redisson's RedLock", false),
		)
	})

	Context("NonReentrantFairLock", func() {
		DescribeTable("is one hash field holding once, refuses its holder's re-entry on each client, and queues both clients' waiters in one fair queue, woken in order",
			func(javaHolds bool) { nonReentrantFair(s, javaHolds) },
			Entry("Redisson holds, goredisson's waiter queues first", true),
			Entry("goredisson holds, Redisson's waiter queues first", false),
		)
	})

	Context("FasterMultiLock (getMultiLock(group, values))", func() {
		DescribeTable("held by one client is Redisson's group hash with the same value fields, excludes the other's lock on any of its values, and its unlock wakes the other's waiter within 200 ms",
			func(javaHolds bool) { fasterExcludes(s, javaHolds) },
			Entry("Redisson holds, goredisson waits", true),
			Entry("goredisson holds, Redisson waits", false),
		)
		DescribeTable("a value one client holds the other force-unlocks",
			func(javaHolds bool) { fasterForce(s, javaHolds) },
			Entry("Redisson holds, goredisson forces", true),
			Entry("goredisson holds, Redisson forces", false),
		)
	})

	Context("NonReentrantLock", func() {
		DescribeTable("is one hash field holding once, refuses its holder's re-entry on each client, and excludes the other client until the unlock wakes its waiter",
			func(javaHolds bool) { nonReentrant(s, javaHolds) },
			Entry("Redisson holds, goredisson waits", true),
			Entry("goredisson holds, Redisson waits", false),
		)
	})
})

package interop_test

import (
	. "github.com/onsi/ginkgo/v2"
)

// interopSpecs declares the scenarios between goredisson and one Redisson
// side (the real client or the emulator). heavy adds the slow ones that
// repeat for every lock type what one or two types already show.
func interopSpecs(side func(e *env) redissonSide, heavy bool) {
	var w *world
	BeforeEach(func() { w = newWorld(side) })

	for _, k := range exclusive {
		Context(k.title, func() {
			It("shares hold counts through the hash, and each client is excluded by and cannot unlock the other's hold", func() {
				holdCountsAcross(w, k)
			})
			DescribeTable("wakes the other client's waiter within a second (a missed message would cost its TTL)",
				func(javaHolds, force bool) { wakeAcross(w, k, javaHolds, force) }, Label("slow"),
				Entry("Redisson unlocks, goredisson waits", true, false),
				Entry("goredisson unlocks, Redisson waits", false, false),
				Entry("Redisson force-unlocks, goredisson waits", true, true),
				Entry("goredisson force-unlocks, Redisson waits", false, true),
			)
			DescribeTable("lets a fixed lease run out: the other client's waiter gets the lock then, and the late unlock is refused",
				func(javaHolds bool) { leaseExpiryAcross(w, k, javaHolds) }, Label("slow"),
				Entry("Redisson's lease", true),
				Entry("goredisson's lease", false),
			)
			It("writes the lock with the same commands, as a keyspace watcher sees them: take, re-enter, release twice, take, force unlock", func() {
				keyspaceAlike(w, k)
			})
			if heavy || k.cmd == kLock.cmd || k.cmd == kWrite.cmd {
				DescribeTable("keeps a watchdog lease (3 s) renewed past itself, excluding the other client",
					func(javaHolds bool) { watchdogAcross(w, k, javaHolds) }, Label("slow"),
					Entry("Redisson holds", true),
					Entry("goredisson holds", false),
				)
			}
		})
	}

	Context("ReadWriteLock (read)", func() {
		It("writes the lock with the same commands, as a keyspace watcher sees them: take, re-enter, release twice, take, force unlock", func() {
			keyspaceAlike(w, kRead)
		})
		It("shares the lock between both clients' readers, each seeing the other's read hold count in the hash, and keeps both clients' writers out", func() {
			readHoldsAcross(w)
		})
		DescribeTable("wakes the other client's writer within a second (a missed message would cost its TTL)",
			func(javaHolds, force bool) { wakeAcross(w, kRead, javaHolds, force) },
			Entry("Redisson's last reader unlocks, goredisson writer waits", true, false),
			Entry("goredisson's last reader unlocks, Redisson writer waits", false, false),
			Entry("Redisson read force unlock, goredisson writer waits", true, true),
			Entry("goredisson read force unlock, Redisson writer waits", false, true),
		)
		DescribeTable("lets a reader's fixed lease run out: the other client's writer gets the lock then",
			func(javaHolds bool) { leaseExpiryAcross(w, kRead, javaHolds) }, Label("slow"),
			Entry("Redisson's reader", true),
			Entry("goredisson's reader", false),
		)
		DescribeTable("force-unlocks only a lock held in the side's own mode (testForceUnlock)",
			func(javaHolds bool) { rwForceUnlockModes(w, javaHolds) },
			Entry("Redisson holds, goredisson force-unlocks", true),
			Entry("goredisson holds, Redisson force-unlocks", false),
		)
		DescribeTable("renews a reader's watchdog lease (3 s) past itself, excluding the other client's writer",
			func(javaHolds bool) { watchdogAcross(w, kRead, javaHolds) }, Label("slow"),
			Entry("Redisson reads", true),
			Entry("goredisson reads", false),
		)
	})

	Context("FairLock's shared queue", func() {
		DescribeTable("serves a mixed queue in arrival order (go1, java2, go3, java4), each within a second (a missed message would cost its TTL) of the release before it",
			func(javaHolds bool) { fairFIFO(w, javaHolds) },
			Entry("Redisson holds first", true),
			Entry("goredisson holds first", false),
		)
		It("chains each new waiter's timeout on the last one's (+ threadWaitTime) and moves the rest in by threadWaitTime on every acquisition from the queue, whichever client queues or acquires", func() {
			fairChain(w)
		})
		DescribeTable("a waiter that gives up moves only those behind it in, by its own threadWaitTime (its wait)",
			func(goGivesUp bool) { fairGiveUp(w, goGivesUp) }, Label("slow"),
			Entry("goredisson gives up between Redisson waiters", true),
			Entry("Redisson gives up between goredisson waiters", false),
		)
		DescribeTable("a short tryLock on a lock the other client holds fails and leaves no waiter behind (testTryLockNonDelayed)",
			func(javaHolds bool) { fairTryLockLeavesNothing(w, javaHolds) },
			Entry("Redisson holds", true),
			Entry("goredisson holds", false),
		)
		It("hands the lock on in arrival order as 1 s leases run out, alternating clients (testLeaseTimeout)", Label("slow"), func() {
			fairLeaseChain(w)
		})
	})

	Context("ReadWriteLock", func() {
		DescribeTable("a write unlock wakes every waiting reader of the other client at once, each within a second (a missed message would cost its TTL)",
			func(javaWriter, force bool) { readersAtOnce(w, javaWriter, force) },
			Entry("goredisson writer unlocks, 3 Redisson readers wait", false, false),
			Entry("Redisson writer unlocks, 3 goredisson readers wait", true, false),
			Entry("goredisson writer is force-unlocked, 3 Redisson readers wait", false, true),
			Entry("Redisson writer is force-unlocked, 3 goredisson readers wait", true, true),
		)
		DescribeTable("a write unlock lets readers of both clients in at once (testWriteRead)",
			func(javaWriter bool) { mixedReaders(w, javaWriter) },
			Entry("Redisson writer", true),
			Entry("goredisson writer", false),
		)
		DescribeTable("the read side reports locked while the writer also holds a read lock, on both clients (testReadLockIsLocked, testWR)",
			func(javaHolds bool) { readSideLocked(w, javaHolds) },
			Entry("Redisson writes and reads", true),
			Entry("goredisson writes and reads", false),
		)
		DescribeTable("a writer that also reads: the read side is locked for both clients, the write unlock keeps read mode silently (testWriteReadReentrancy, testReadLockIsLocked)", Label("slow"),
			func(javaHolds bool) { downgrade(w, javaHolds) },
			Entry("Redisson writes and reads", true),
			Entry("goredisson writes and reads", false),
		)
		DescribeTable("a write re-entry extends the lease to the remaining PTTL plus the new lease",
			func(java bool) { writeReentryLease(w, java) },
			Entry("Redisson", true),
			Entry("goredisson", false),
		)
		DescribeTable("a reader whose lease ran out does not block writers after the other client's last read unlock (testMultiInstanceReadLockZombieCleanup)",
			func(javaZombie bool) { zombieReader(w, javaZombie) }, Label("slow"),
			Entry("Redisson's reader ran out", true),
			Entry("goredisson's reader ran out", false),
		)
	})

	Context("FencedLock", func() {
		It("issues strictly increasing tokens across both clients, re-entries and waits included (testTokenIncrease)", func() {
			tokensAcross(w)
		})
	})
}

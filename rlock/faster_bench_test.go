package rlock_test

import (
	"strconv"
	"testing"

	"github.com/goredisson/goredisson/internal/layout"
	"github.com/goredisson/goredisson/rlock"
)

// BenchmarkWaitingFasterMultiLock is BenchmarkWaitingWriters for a
// FasterMultiLock: 150 owners block on a group whose values the benchmark
// holds; it unlocks, and each owner takes its lock once (rounds=1) or three
// times, locking again at once after its unlock (rounds=3), and gives it
// back. scripts/hand-off counts the EVALSHA and EVAL calls Redis served from
// the benchmark's unlock to the last owner's, as BenchmarkWaitingWriters
// does (2 is the floor: one acquire, one release). The cases: every owner on
// the same values of one Client ("same"); the owners split over two
// Clients ("same/2clients": each Client's waiter tries on an unlock, one
// wins, so 3 is the floor); the owners on three overlapping value sets of
// one group in one Client ("3sets": an unlock wakes a waiter per set).
//
//	go test -run '^$' -bench WaitingFasterMultiLock -benchtime 3x -count 3 ./rlock
func BenchmarkWaitingFasterMultiLock(b *testing.B) {
	const owners = 150
	same := [][]string{{"Jack_001", "Mary_002"}}
	sets := [][]string{{"Jack_001", "Mary_002"}, {"Mary_002", "Ann_003"}, {"Ann_003", "Jack_001"}}
	for _, rounds := range []int{1, 3} {
		r := "/rounds=" + strconv.Itoa(rounds)
		b.Run("same"+r, func(b *testing.B) { benchFaster(b, owners, rounds, 1, same) })
		b.Run("same/2clients"+r, func(b *testing.B) { benchFaster(b, owners, rounds, 2, same) })
		b.Run("3sets"+r, func(b *testing.B) { benchFaster(b, owners, rounds, 1, sets) })
	}
}

// benchFaster runs the owners (owner i on Client i%clients, values
// sets[i%len(sets)]) against a holder of every value of the group.
func benchFaster(b *testing.B, owners, rounds, clients int, sets [][]string) {
	const group = "bench:faster"
	var cs []*rlock.Client
	for range clients {
		c, _ := newBenchClient(b, 16)
		cs = append(cs, c)
	}
	var all []string
	for _, s := range sets {
		all = append(all, s...)
	}
	locks := make([]rlock.Locker, owners)
	for i := range locks {
		locks[i] = cs[i%clients].NewFasterMultiLock(group, sets[i%len(sets)]...)
	}
	channel := layout.Channel(group)
	drainHandoffs(b, owners, rounds, cs[0].NewFasterMultiLock(group, all...), func(i int) rlock.Locker { return locks[i] },
		func() int {
			n := 0
			for _, c := range cs {
				n += rlock.BlockedWaiters(c, channel)
			}
			return n
		})
}

package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/layout"
)

// Kept permits: a PermitExpirableSemaphore of one permit, taken with
// TryAcquireKept (trylock wd) or AcquireKept (lock) and given back with the
// KeptPermit's Release (unlock). With one permit a kept permit is an
// exclusive hold that the watchdog renews, so the lock model applies as it
// is: a permit leaves Redis only after its LostContext ended, no
// LostContext is live while another owner holds the permit, a revoked
// permit is told within its bound, a stopped holder's looks see the loss.
// Conservation (held + available never more than was set, over any number
// of permits) is TestPermits's (permits.go). Redis's side is the timeout
// sorted set: a permit id with its expiry, held while that is in the
// future by Redis's clock.

// keptPermits is the number of permits a kept sequence's semaphore has.
const keptPermits = 1

// setPermits gives a kept sequence's semaphore its permit, at the start
// and after FLUSHALL or a restart lost it.
func (r *seqRun) setPermits() error {
	if r.q.Kind != keptKind {
		return nil
	}
	c, err := r.env.checkerClient()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sem := c.NewPermitExpirableSemaphore(r.lock)
	for {
		// Right after a restart the first call may meet the connection the
		// server closed (a lane's kept connection is peeked only after
		// inline.PeekIdle idle): EOF, as an application's call would. This
		// is the checker's own set-up, so it tries again; a second
		// TrySetPermits is harmless (false once the permit is set).
		if _, err = sem.TrySetPermits(ctx, keptPermits); err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// keptObs is the semaphore as Redis has it.
type keptObs struct {
	qs, qr  time.Time
	now     time.Time            // Redis's clock (TIME)
	permits map[string]time.Time // held permits (unexpired) by id: their expiry
	avail   string               // permits available (the semaphore's value)
}

// readKept reads the semaphore in one transaction.
func (r *seqRun) readKept(ctx context.Context) (keptObs, error) {
	var o keptObs
	var tm *redis.TimeCmd
	var zs *redis.ZSliceCmd
	var av *redis.StringCmd
	o.qs = time.Now()
	_, err := r.env.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		tm = p.Time(ctx)
		zs = p.ZRangeWithScores(ctx, layout.PermitTimeouts(r.lock), 0, -1)
		av = p.Get(ctx, r.lock)
		return nil
	})
	o.qr = time.Now()
	if err != nil && err != redis.Nil {
		return o, err
	}
	o.now, o.avail = tm.Val(), av.Val()
	o.permits = map[string]time.Time{}
	for _, z := range zs.Val() {
		exp := time.UnixMilli(int64(z.Score))
		if exp.After(o.now) {
			o.permits[hex.EncodeToString([]byte(z.Member.(string)))] = exp
		}
	}
	return o, nil
}

// observeKept is observe for kept permits: an owner's count is the number
// of its permits held in Redis, the PTTL that of the holder's permit. A
// permit of nobody known is the hold of an owner's lost TryAcquireKept,
// when one is pending.
func (r *seqRun) observeKept() (observation, error) {
	var ob observation
	var ko keptObs
	var err error
	for range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ko, err = r.readKept(ctx)
		cancel()
		if err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return ob, fmt.Errorf("reading the semaphore: %w", err)
	}
	ob.qs, ob.qr, ob.pttl = ko.qs, ko.qr, -2*time.Nanosecond
	ob.counts = make([]int, len(r.owners))
	for id, exp := range ko.permits {
		i, ok := r.byField[id]
		if !ok {
			i, ok = r.lostOwner()
		}
		if !ok {
			ob.unknown = append(ob.unknown, "permit "+id)
			continue
		}
		r.byField[id] = i
		ob.counts[i]++
		if !slices.Contains(ob.holders, i) {
			ob.holders = append(ob.holders, i)
		}
		ob.pttl = exp.Sub(ko.now)
	}
	slices.Sort(ob.holders)
	ob.lc, err = r.lcs()
	return ob, err
}

// lostOwner is the owner whose lost call is pending, if any.
func (r *seqRun) lostOwner() (int, bool) {
	for i, q := range r.owners {
		if q.lost.pending() {
			return i, true
		}
	}
	return 0, false
}

// notePermit records the id of a permit an owner acquired.
func (r *seqRun) notePermit(i int, rep reply) {
	if r.q.Kind == keptKind && rep.ID != "" && rep.OK {
		r.byField[rep.ID] = i
	}
}

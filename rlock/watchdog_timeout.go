package rlock

import "time"

// WatchdogTimeout returns the longest watchdog lease a hold of l can be
// given: its Client's WithWatchdogTimeout for a *Lock or *FencedLock, the
// longest of its locks' for a MultiLock or RedLock. ok is false for a
// Locker of another package (or a group holding one). A holder's
// LostContext ends no later than this after its last confirmed renewal
// (watchdog.Deadline), which is what package election records so that a
// successor can wait out a leader on another timeout.
func WatchdogTimeout(l Locker) (d time.Duration, ok bool) {
	switch x := l.(type) {
	case watchdogLeased:
		return x.watchdogLease(), true
	case interface{ group() *group }:
		g := x.group()
		if g == nil {
			return 0, false
		}
		for _, m := range g.locks {
			md, mok := WatchdogTimeout(m)
			if !mok {
				return 0, false
			}
			d = max(d, md)
		}
		return d, len(g.locks) > 0
	}
	return 0, false
}

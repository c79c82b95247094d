package rlock

import "time"

// WatchdogTimeout returns l's watchdog lease; false for a foreign Locker.
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

package rlock

// KeyOf returns the Redis key of a *Lock or *FencedLock, else l.Name().
func KeyOf(l Locker) string {
	switch x := l.(type) {
	case *Lock:
		if x != nil {
			return x.h.Key()
		}
	case *FencedLock:
		if x != nil {
			return x.handle().Key()
		}
	}
	if l == nil {
		return ""
	}
	return l.Name()
}

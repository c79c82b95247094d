package pubsub

// Names the package's external tests use.

// ErrUnsupported is errUnsupported.
var ErrUnsupported = errUnsupported

// WithLinger is withLinger.
var WithLinger = withLinger

// Channels returns the subscribed channels and how many Subs each has.
func (h *Hub) Channels() map[string]int { return h.channelCounts() }

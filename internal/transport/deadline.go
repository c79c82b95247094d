package transport

import "context"

// DeadlineOnly marks a context that, while a call runs on it, ends only at
// its deadline (its cancel is called once the call returned): the inline
// lane bounds the call's I/O by the deadline instead of watching it.
type DeadlineOnly struct{ context.Context }

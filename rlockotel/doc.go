// Package rlockotel reports what goredisson's locks do to OpenTelemetry:
// metrics and spans, from the core module's hook rlock.Observer.
//
//	obs, err := rlockotel.NewObserver() // the global MeterProvider and TracerProvider
//	if err != nil { ... }
//	client, err := rlock.NewClient(rdb, rlock.WithObserver(obs))
//
// It is a module of its own (github.com/goredisson/goredisson/rlockotel), so
// the core module depends on no OpenTelemetry package.
//
// # Metrics
//
// No convention of OpenTelemetry covers locks, so the instruments live in
// the goredisson.lock namespace and follow the general naming rules:
// durations are histograms in seconds, counts of things are counters with a
// {thing} unit, what is going on now is an UpDownCounter named count in its
// namespace (as db.client.connection.count), and failures carry the
// standard error.type attribute.
//
//	goredisson.lock.wait.duration  histogram  s              how long acquisitions waited
//	goredisson.lock.acquisitions   counter    {acquisition}  holds taken
//	goredisson.lock.contention     counter    {attempt}      acquisition attempts that found the lock taken
//	goredisson.lock.hold.duration  histogram  s              how long owners held a lock: until they released
//	                                                         their last hold, or lost it
//	goredisson.lock.lost           counter    {hold}         holds lost (lease ran out, force-unlocked, Client closed)
//	goredisson.lock.errors         counter    {error}        operations that failed, by error.type
//	goredisson.lock.wait.count     updown     {wait}         acquisitions (and latch awaits) in progress:
//	                                                         goroutines waiting now
//	goredisson.lock.hold.count     updown     {hold}         locks held now: one per owner holding a lock,
//	                                                         whatever its re-entry count
//
// Their attributes:
//
//	goredisson.lock.kind       every instrument: "lock", "fairlock", "spinlock", "fencedlock",
//	                           "readlock", "writelock" (and the synchronizers' kinds)
//	goredisson.lock.name       every instrument, only with WithLockName: the lock's name as
//	                           its normaliser returns it (NormalizeLockName: "orders:*")
//	goredisson.lock.operation  every instrument but lost and the two counts: the event's Op ("lock", "trylock",
//	                           "locktoken", "trylocktoken", "unlock", ...; "lost" on
//	                           hold.duration for a hold that was lost)
//	goredisson.lock.outcome    wait.duration: "acquired", "busy" (a TryLock whose wait ran
//	                           out) or "error"
//	error.type                 errors, lost, and wait.duration when the outcome is "error"
//
// The acquisitions are the events of Op "lock", "trylock", "locktoken",
// "trylocktoken", "acquire" and "tryacquire"; the releases "unlock" and
// "release". A release that failed records no hold time (after a loss the
// owner's Unlock fails with rlock.ErrNotHeld: the "lost" event recorded the
// hold, up to the loss). Other Ops get a span and, when they fail, a count
// in errors.
//
// The gauges follow rlock's "wait", "hold" and "free" events (see
// rlock.Event): wait.count goes up when an acquisition of a lock or a
// semaphore, or a latch's Await, begins and down when it ends, however it
// ends; hold.count goes up when an owner's first hold of a lock is taken and
// down when its last hold is given back or the hold is lost (lease run out,
// force-unlocked, Client closed). Both are back at zero once nothing waits
// or is held. Semaphore permits are not holds (anyone may release them).
//
// The lock's name is not a metric attribute unless asked for: names are
// unbounded user input, and every name would make a time series of its own.
// WithLockName adds it, folded by a normaliser (NormalizeLockName by
// default: ids and numbers become "*"). Spans always carry it as it is.
//
// Contention counts, for an acquisition that took the lock or failed, its
// attempts but the last; for one whose wait ran out, all of them. (When a
// context ends during a wait, its last attempt found the lock taken too, but
// the event cannot tell that from a context that ended during an attempt:
// the count errs low.)
//
// error.type is, for errors of package rlock and context, a fixed word:
//
//	rlock.ErrNotHeld          not_held
//	rlock.ErrLockLost         lock_lost
//	rlock.ErrClosed           closed
//	rlock.ErrInvalidArgument  invalid_argument
//	rlock.ErrReplicaSync      replica_sync
//	rlock.ErrNoQuorum         no_quorum
//	rlock.ErrBusy             busy
//	context.Canceled          canceled
//	context.DeadlineExceeded  deadline_exceeded
//
// For an error reply of Redis it is the reply's error code, as
// db.response.status_code has it in OpenTelemetry's Redis conventions
// ("ERR", "READONLY", "NOSCRIPT", "LOADING", ...); for a network timeout
// "timeout"; for anything else the Go type of the cause (e.g.
// "*net.OpError"), or "_OTHER" when the cause is an anonymous error.
//
// # Spans
//
// Every operation is a span named "goredisson " + Op ("goredisson lock",
// "goredisson trylock", "goredisson unlock", ...), of kind internal, child of
// the span in the operation's context, from the operation's start to its end
// (for an acquisition, its wait). Its attributes: goredisson.lock.kind,
// goredisson.lock.name, goredisson.lock.operation, and for acquisitions
// goredisson.lock.attempts and goredisson.lock.acquired; when a last hold was
// given back, goredisson.lock.hold.duration (seconds, a double). rlock's
// marks "wait", "hold" and "free" are not operations and make no span. A failed
// operation has status Error, error.type, and the error recorded as an
// exception event; a TryLock whose wait ran out is no error (acquired false).
//
// A lost hold is a span of its own, "goredisson lost": the watchdog finds
// the loss outside any call of the owner, so there is no operation to hang it
// on, and rlock reports it with context.Background(). It is a root span of
// zero length at the moment of detection, with status Error and error.type
// lock_lost (or closed when the Client closed under the hold); search for it
// by goredisson.lock.name.
package rlockotel

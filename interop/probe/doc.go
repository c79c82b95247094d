// Package probe is goredisson's proof kit: it runs the real Redisson client
// of a porter's own Java build in a JVM beside the test process, so that a
// Go port's test suite can make the Go side and the Java side contend on the
// same lock, semaphore and latch names in the porter's own CI.
//
// The Java side is a program shipped as source in this package
// (java/RedissonProbe.java, embedded). Start compiles it with javac against
// the class path the porter gives (their Redisson jar and its dependencies,
// as their build tool fetched them: Config.ClassPath, or the
// GOREDISSON_REDISSON_CLASSPATH environment variable), caches the class
// files, runs it with java, and waits until its RedissonClient is connected.
// No build of Redisson comes with this package.
//
// Every Java call runs on a named Java thread (Probe.Thread), one per
// owner, because Redisson binds a lock hold to its thread: a Thread's
// NewLock, NewFairLock, NewReadWriteLock, NewSpinLock, NewFencedLock,
// NewMultiLock, NewRedLock, NewNonReentrantLock, NewSemaphore,
// NewPermitExpirableSemaphore and NewCountDownLatch return the Java objects
// with goredisson's method names (a Lock is an rlock.Locker), so one scenario
// can run with either client on either side. Calls take a context: when it
// ends the Java call is cancelled (its thread interrupted) and the call
// returns the context's error. Unlock, Release and CountDown are cleanup,
// as goredisson's: an ended context does not stop them.
//
// Durations are Redisson's milliseconds: a lease <= 0 is Redisson's -1 (the
// watchdog for a lock; a permit that never expires), and a positive lease
// below 1ms an error (Redisson would make it 0: a lock that expires at
// once); a wait is truncated to whole milliseconds, as Redisson's TimeUnit
// conversion does, and one <= 0 or below 1ms is one attempt.
//
// Java exceptions come back as a *JavaError: errors.Is(err,
// rlock.ErrNotHeld) and errors.Is(err, ErrIllegalMonitorState) hold for
// IllegalMonitorStateException, ErrIllegalArgument for
// IllegalArgumentException (a permit id already released), and
// errors.ErrUnsupported for a method the porter's Redisson release lacks.
//
// Package probetest has the Ginkgo side: Start skips a spec in one line
// when no class path is configured, NewClient configures goredisson as the
// probe's Redisson is (release, NameMapper, sharded pub/sub), and the
// helpers check exclusion and wake-ups in both directions.
package probe

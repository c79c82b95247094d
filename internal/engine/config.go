package engine

import (
	"log/slog"
	"time"

	"github.com/goredisson/goredisson/internal/transport"
)

// Config is what a Client's options set for its engine (rlock's With*
// options say what each means; docs/api.md).
type Config struct {
	WatchdogTimeout time.Duration // the lease of a watchdog-managed hold
	ClientID        string        // the first half of every hash field
	Logger          *slog.Logger
	Sharded         Sharded       // how messages are published and waited for
	Spin            Backoff       // a spin lock's retry schedule
	FairWait        time.Duration // a fair waiter's default threadWaitTime
	// SyncSet records that WithReplicaSync chose the replica sync: none
	// when SyncReplicas is 0, else WAIT SyncReplicas within SyncTimeout;
	// unset, the deployment decides (see replica.go).
	SyncSet      bool
	SyncReplicas int
	SyncTimeout  time.Duration
	Observer     Observer // nil: none
	Retry        RetryPolicy
	// Register and ClientName are the Client's registration (registry.go).
	Register   bool
	ClientName string
	// Version is the Java side's Redisson release (zero: the newest);
	// MapName and UnmapName its NameMapper (nil: none). See names.go.
	Version            Version
	MapName, UnmapName func(string) string
	// QueuePause bounds a queued waiter's first wait (0: queuePause; see
	// waitSpec.queue). Only specs that need a lost wake to show set it.
	QueuePause time.Duration
	// Fence says which connections' calls read no cancel floor, a lost
	// one being fenced by a CLIENT KILL before its settle (fence.go):
	// transport.FenceOwnAddr (the default, rlock.FenceAuto), FenceAnyAddr
	// (rlock.FenceByID) or FenceOff, every call reads the floor
	// (rlock.FenceFloor).
	Fence transport.FenceMode
}

// Defaults of the settings (Redisson's, where it has them).
const (
	DefaultWatchdogTimeout     = 30 * time.Second // lockWatchdogTimeout
	defaultFairLockWaitTimeout = 5 * time.Minute  // fairLockWaitTimeout
	defaultSyncTimeout         = time.Second      // slavesSyncTimeout
)

// DefaultConfig returns the settings of a Client made with no options, but
// its ClientID (the caller draws one).
func DefaultConfig() Config {
	return Config{
		WatchdogTimeout: DefaultWatchdogTimeout,
		Logger:          slog.Default(),
		Spin:            Backoff{Initial: time.Millisecond, Max: 128 * time.Millisecond},
		FairWait:        defaultFairLockWaitTimeout,
		SyncTimeout:     defaultSyncTimeout,
		Retry:           DefaultRetry,
		Register:        true,
		Fence:           transport.FenceOwnAddr,
	}
}

// Backoff is a spin lock's retry schedule: pauses drawn from 0 to a bound
// that doubles from Initial up to Max.
type Backoff struct{ Initial, Max time.Duration }

// Version is a Redisson release, major.minor.patch; the zero value is the
// newest layout.
type Version struct{ Major, Minor, Patch int }

// Less reports whether v is a release before major.minor.patch (never for
// the zero Version, the newest).
func (v Version) Less(major, minor, patch int) bool {
	if v == (Version{}) {
		return false
	}
	switch {
	case v.Major != major:
		return v.Major < major
	case v.Minor != minor:
		return v.Minor < minor
	}
	return v.Patch < patch
}

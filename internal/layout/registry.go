package layout

import (
	"regexp"
	"strings"
)

// clientPrefix is goredisson's own (Redisson writes no key that starts with
// "goredisson_"): a Client's registration.
const clientPrefix = "goredisson_client"

// ClientKey is the registration of the Client with the given id:
// goredisson_client:{<id>}, a string holding a ClientRecord as JSON with a
// TTL, in the id's own Cluster slot.
func ClientKey(id string) string { return PrefixName(clientPrefix, id) }

// ClientRecord is what a Client registers under ClientKey: enough to trace
// a holder field "<id>:<owner>" to a process.
type ClientRecord struct {
	ID      string `json:"id"`
	Name    string `json:"name,omitempty"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Started string `json:"started"` // RFC 3339, the Client's creation
	Lib     string `json:"lib"`     // "goredisson"
}

var readTimeoutKey = regexp.MustCompile(`:rwlock_timeout:\d+$`)

// Auxiliary reports whether key, by its name alone, is one of the keys that
// Redisson and goredisson keep beside a lock or synchronizer (a token, a
// fair lock's queue and timeouts, a reader's timeout, a permit semaphore's
// permits, an unlock latch, a cancel floor, a Client's registration), which
// a listing shows with its owner rather than on its own.
func Auxiliary(key string) bool {
	for _, p := range []string{tokenPrefix, queuePrefix, timeoutPrefix, cancelPrefix, clientPrefix, "redisson_unlock_latch"} {
		if strings.HasPrefix(key, p+":") {
			return true
		}
	}
	if readTimeoutKey.MatchString(key) {
		return true
	}
	// {name}:timeout (or name:timeout for a name with a hash tag).
	return strings.HasSuffix(key, ":timeout") && strings.Contains(key, "{")
}

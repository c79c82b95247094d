package pubsub

import "testing"

// sameHost must name a node as go-redis's slot map does (newClusterState:
// a loopback IP in a node's CLUSTER SLOTS answer stands for the host the
// node was reached at), or the owner a dropping node names is not found
// among go-redis's node clients and the channel goes back to the old node.
func TestSameHost(t *testing.T) {
	cases := []struct{ owner, via, want string }{
		{"127.0.0.1:7001", "127.0.0.1:7000", "127.0.0.1:7001"},
		{"127.0.0.1:7001", "10.0.0.5:7000", "10.0.0.5:7001"},
		{"127.0.0.1:7001", ":7000", ":7001"}, // go-redis with a ClusterSlots func (no origin host)
		{":7001", "10.0.0.5:7000", ":7001"},
		{"127.0.0.1:0", "10.0.0.5:6379", "10.0.0.5:6379"}, // TLS-only cluster
		{"10.0.0.6:7001", "10.0.0.5:7000", "10.0.0.6:7001"},
		{"localhost:7001", "127.0.0.1:7000", "localhost:7001"},
		{"redis-1:7001", "10.0.0.5:7000", "redis-1:7001"},
		{"localhost:7001", "10.0.0.5:7000", "localhost:7001"}, // not an IP: kept
	}
	for _, c := range cases {
		if got := sameHost(c.owner, c.via); got != c.want {
			t.Errorf("sameHost(%q, %q) = %q, want %q", c.owner, c.via, got, c.want)
		}
	}
}

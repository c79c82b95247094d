package redistest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExpectedServer checks, when GOREDISSON_EXPECT_SERVER is "redis" or
// "valkey" (CI sets it for each of its runs), that every process the harness
// starts is that server: a standalone server, a cluster node (joined with
// the matching CLI's --cluster create) and a Sentinel. Without the variable
// it is skipped: the harness takes whatever REDIS_SERVER or PATH gives.
func TestExpectedServer(t *testing.T) {
	want := os.Getenv("GOREDISSON_EXPECT_SERVER")
	if want == "" {
		t.Skip("GOREDISSON_EXPECT_SERVER is not set")
	}
	if want != "redis" && want != "valkey" {
		t.Fatalf("GOREDISSON_EXPECT_SERVER=%q: want redis or valkey", want)
	}
	cli, err := CLIBinary()
	if err != nil {
		t.Fatal(err)
	}
	if base := filepath.Base(cli); !strings.HasPrefix(base, want+"-") {
		t.Errorf("the cluster is joined with %s, not %s-cli", cli, want)
	}

	check := func(what string, s *Server) (info string) {
		t.Helper()
		rdb := s.Client()
		defer rdb.Close()
		info, err := rdb.Info(context.Background(), "server").Result()
		if err != nil {
			t.Fatalf("%s %s: INFO server: %v", what, s.Addr, err)
		}
		// Valkey reports valkey_version (and server_name:valkey) besides a
		// redis_version kept for compatibility; Redis reports no such line.
		isValkey := strings.Contains(info, "valkey_version:")
		if (want == "valkey") != isValkey {
			t.Errorf("%s %s is not %s: %s", what, s.Addr, want, versionLines(info))
		} else {
			t.Logf("%s %s: %s", what, s.Addr, versionLines(info))
		}
		return info
	}

	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check("standalone", s)

	c, err := StartCluster(3, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, n := range c.Nodes {
		check("cluster node", n)
	}

	st, err := StartSentinels(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	check("primary", st.Primary)
	check("replica", st.Replicas[0])
	if info := check("sentinel", st.Sentinels[0]); !strings.Contains(info, "_mode:sentinel") {
		t.Errorf("sentinel %s does not run in sentinel mode: %s", st.Sentinels[0].Addr, versionLines(info))
	}
}

// versionLines picks the lines of INFO server that name the server.
func versionLines(info string) string {
	var out []string
	for _, l := range strings.Split(info, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "redis_version:") || strings.HasPrefix(l, "valkey_version:") ||
			strings.HasPrefix(l, "server_name:") || strings.HasSuffix(strings.SplitN(l, ":", 2)[0], "_mode") {
			out = append(out, l)
		}
	}
	return strings.Join(out, " ")
}

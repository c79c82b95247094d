package redistest

import (
	"strings"
	"testing"
)

// TestBinaryMissingSaysHow: on a machine without redis-server the harness
// says in one line how to install it (a fresh Debian machine's first
// `go test ./...` meets this message in every suite).
func TestBinaryMissingSaysHow(t *testing.T) {
	t.Setenv("REDIS_SERVER", "")
	t.Setenv("PATH", t.TempDir())
	_, err := Binary()
	if err == nil {
		t.Fatal("Binary found a redis-server on an empty PATH")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("the message spans lines: %q", msg)
	}
	for _, want := range []string{"apt-get install -y redis-server redis-tools", "REDIS_SERVER="} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message %q lacks %q", msg, want)
		}
	}
}

package spectest

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// LogBuffer collects log lines (slog's text format) for specs that check
// a warning; safe for concurrent use.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Count returns how many times s was written.
func (b *LogBuffer) Count(s string) int { return strings.Count(b.String(), s) }

// Logger returns a logger of warnings and errors into the buffer.
func (b *LogBuffer) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/layout"
)

// Process is the process of a goredisson Client, as the Client registered
// it (docs/layout.md): rlockctl shows it beside the Client's holder fields.
type Process struct {
	// ID is the Client's id, the first part of its holder fields.
	ID string
	// Name is the name given with rlock.WithClientName ("" for none).
	Name string
	// Host and PID are where the Client runs.
	Host string
	PID  int
	// Started is when the Client was made.
	Started time.Time
}

// String renders the process, e.g. `worker-1 on pod-7 (pid 12, started
// 2026-11-26T22:51:12Z)`.
func (p *Process) String() string {
	if p == nil {
		return "unregistered"
	}
	s := fmt.Sprintf("host %s pid %d, started %s", p.Host, p.PID, p.Started.Format(time.RFC3339))
	if p.Name != "" {
		s = p.Name + ": " + s
	}
	return s
}

var uuidField = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}:`)

// clientIDs returns the client ids a holder field may start with: its
// UUID, or, for a Client with an id of its own (rlock.WithClientID), each
// part before a ':' (at most 4).
func clientIDs(field string) []string {
	if uuidField.MatchString(field) {
		return []string{field[:36]}
	}
	var out []string
	for i := 0; i < len(field) && len(out) < 4; i++ {
		if field[i] == ':' && i > 0 {
			out = append(out, field[:i])
		}
	}
	return out
}

// Processes returns the registered process of each holder field's Client,
// in one pipelined round trip; a field of a Client that has no live
// registration (a Java/Redisson client, an old goredisson, one that
// stopped or may not write the key) is absent.
func Processes(ctx context.Context, rdb redis.UniversalClient, fields []string) (map[string]*Process, error) {
	if rdb == nil || ctx == nil {
		return nil, fmt.Errorf("inspect: processes: nil client or context: %w", ErrInvalidArgument)
	}
	gets := map[string]*redis.StringCmd{}
	pipe := rdb.Pipeline()
	for _, f := range fields {
		for _, id := range clientIDs(f) {
			if gets[id] == nil {
				gets[id] = pipe.Get(ctx, layout.ClientKey(id))
			}
		}
	}
	out := map[string]*Process{}
	if len(gets) == 0 {
		return out, nil
	}
	// A key the user may not read (NOPERM) reads as unregistered; a lost
	// connection fails every read of the pipeline.
	if _, err := pipe.Exec(ctx); err != nil && ctx.Err() != nil {
		return nil, err
	}
	procs := registered(gets)
	for _, f := range fields {
		if p := processOf(f, procs); p != nil {
			out[f] = p
		}
	}
	return out, nil
}

// registered decodes the registrations read, by Client id: a key that
// could not be read, or whose record is not that Client's, is left out.
func registered(gets map[string]*redis.StringCmd) map[string]*Process {
	procs := map[string]*Process{}
	for id, g := range gets {
		if g.Err() != nil {
			continue
		}
		var rec layout.ClientRecord
		if json.Unmarshal([]byte(g.Val()), &rec) != nil || rec.ID != id {
			continue
		}
		p := &Process{ID: rec.ID, Name: rec.Name, Host: rec.Host, PID: rec.PID}
		p.Started, _ = time.Parse(time.RFC3339Nano, rec.Started)
		procs[id] = p
	}
	return procs
}

// processOf returns the registered process of the Client whose id the
// holder field starts with, or nil.
func processOf(field string, procs map[string]*Process) *Process {
	for _, id := range clientIDs(field) {
		if p := procs[id]; p != nil && strings.HasPrefix(field, id+":") {
			return p
		}
	}
	return nil
}

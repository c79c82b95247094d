package transport

import (
	"errors"
	"fmt"
	"strconv"
)

// ReplyError is an error reply from Redis (a RESP "-" or "!" line): the
// command reached the server, and the server refused it or it failed. It
// satisfies go-redis's redis.Error, so callers can tell it with errors.As.
type ReplyError string

// Error returns the reply's text.
func (e ReplyError) Error() string { return string(e) }

// RedisError marks a Redis error reply (go-redis's redis.Error).
func (e ReplyError) RedisError() {}

// NoScript reports whether e is Redis's NOSCRIPT reply: the script was not
// run, because the server does not have it cached.
func (e ReplyError) NoScript() bool { return HasPrefix(string(e), "NOSCRIPT") }

// WrongType reports whether e is Redis's WRONGTYPE: the lock's key holds
// another type (another application overwrote it).
func (e ReplyError) WrongType() bool { return HasPrefix(string(e), "WRONGTYPE") }

// NotRun reports whether the reply says the command was not run at all on
// this node: cluster redirections and transient refusals. Retrying it is
// safe.
func (e ReplyError) NotRun() bool {
	for _, p := range []string{"NOSCRIPT", "MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN", "LOADING", "READONLY", "MASTERDOWN", "BUSY"} {
		if HasPrefix(string(e), p) {
			return true
		}
	}
	return false
}

// HasPrefix is strings.HasPrefix.
func HasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// errShortReply reports a reply cut short: the connection broke mid-reply.
var errShortReply = errors.New("rlock: incomplete reply")

// ParseReply reads one RESP2 or RESP3 reply from b, as a script's reply
// comes: nil, int64, string, ReplyError or []any of those.
func ParseReply(b []byte) (any, error) {
	v, rest, err := parseValue(b)
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("rlock: %d bytes after the reply", len(rest))
	}
	return v, nil
}

func parseValue(b []byte) (v any, rest []byte, err error) {
	line, rest, ok := cutLine(b)
	if !ok || len(line) == 0 {
		return nil, nil, errShortReply
	}
	body := string(line[1:])
	switch line[0] {
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		return n, rest, err
	case '+':
		return body, rest, nil
	case '-':
		return ReplyError(body), rest, nil
	case '_':
		return nil, rest, nil
	case '#':
		if body == "t" {
			return int64(1), rest, nil
		}
		return nil, rest, nil
	case '$', '!', '=':
		return parseBulk(line[0], body, rest)
	case '*', '~', '%':
		return parseAggregate(line[0], body, rest)
	}
	return nil, nil, fmt.Errorf("rlock: unexpected reply type %q", line[0])
}

// parseBulk reads a bulk string (a blob error for '!') of length body.
func parseBulk(typ byte, body string, rest []byte) (any, []byte, error) {
	n, err := strconv.Atoi(body)
	if err != nil {
		return nil, nil, err
	}
	if n < 0 {
		return nil, rest, nil
	}
	if len(rest) < n+2 {
		return nil, nil, errShortReply
	}
	s := string(rest[:n])
	if typ == '!' {
		return ReplyError(s), rest[n+2:], nil
	}
	return s, rest[n+2:], nil
}

// parseAggregate reads an array, a set or a map (flat: keys and values) of
// body elements.
func parseAggregate(typ byte, body string, rest []byte) (any, []byte, error) {
	n, err := strconv.Atoi(body)
	if err != nil {
		return nil, nil, err
	}
	if n < 0 {
		return nil, rest, nil
	}
	if typ == '%' {
		n *= 2 // a map's keys and values, flat
	}
	out := make([]any, n)
	for i := range out {
		if out[i], rest, err = parseValue(rest); err != nil {
			return nil, nil, err
		}
	}
	return out, rest, nil
}

// cutLine splits b after its first CRLF.
func cutLine(b []byte) (line, rest []byte, ok bool) {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\r' && b[i+1] == '\n' {
			return b[:i], b[i+2:], true
		}
	}
	return nil, nil, false
}

// Ints reads a reply that is an array of integers.
func Ints(v any) ([]int64, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]int64, len(arr))
	for i, x := range arr {
		if out[i], ok = x.(int64); !ok {
			return nil, false
		}
	}
	return out, true
}

package transport

import (
	"encoding"
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
var errShortReply = errors.New("goredisson: incomplete reply")

// ParseReply reads one RESP2 or RESP3 reply from b, as a script's reply
// comes: nil, int64, string, ReplyError or []any of those.
func ParseReply(b []byte) (any, error) {
	v, rest, err := parseValue(b)
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("goredisson: %d bytes after the reply", len(rest))
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
	return nil, nil, fmt.Errorf("goredisson: unexpected reply type %q", line[0])
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

// AppendCommand appends args as a RESP command (an array of bulk strings)
// to b, as go-redis writes them; ok is false for an argument of a type it
// does not write (the caller then sends through go-redis).
func AppendCommand(b []byte, args []any) (_ []byte, ok bool) {
	return appendCommand(b, args, -1)
}

// appendCommand is AppendCommand writing args[fenced], a call number
// (uint64), as "f<n>" (see Op.MarkFloor); -1: none.
func appendCommand(b []byte, args []any, fenced int) (_ []byte, ok bool) {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for i, a := range args {
		if i == fenced {
			n, isNum := a.(uint64)
			if !isNum {
				return b, false
			}
			var d [21]byte
			b = appendBulk(b, strconv.AppendUint(append(d[:0], 'f'), n, 10))
			continue
		}
		switch v := a.(type) {
		case string:
			b = appendBulk(b, v)
		case []byte:
			b = appendBulk(b, v)
		case int:
			b = appendInt(b, int64(v))
		case int64:
			b = appendInt(b, v)
		case int32:
			b = appendInt(b, int64(v))
		case nil:
			b = appendBulk(b, "")
		case uint64:
			b = appendUint(b, v)
		case encoding.BinaryMarshaler:
			p, err := v.MarshalBinary()
			if err != nil {
				return b, false
			}
			b = appendBulk(b, p)
		default:
			return b, false
		}
	}
	return b, true
}

func appendBulk[T string | []byte](b []byte, s T) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

func appendUint(b []byte, n uint64) []byte {
	var d [20]byte
	return appendNum(b, strconv.AppendUint(d[:0], n, 10))
}

func appendInt(b []byte, n int64) []byte {
	var d [20]byte
	return appendNum(b, strconv.AppendInt(d[:0], n, 10))
}

func appendNum(b, s []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// ReplyComplete reports whether b starts with one whole reply (a reply cut
// short, or bytes that are no reply at all, say false and true: the
// caller's parse then reports the latter).
func ReplyComplete(b []byte) bool {
	_, _, err := replyBody(b)
	return !errors.Is(err, errShortReply)
}

// replyBody returns the reply b holds after the RESP3 pushes (an
// invalidation of client tracking, say) the server sent before it, and
// what follows it.
func replyBody(b []byte) (reply, rest []byte, err error) {
	for len(b) > 0 && b[0] == '>' {
		if b, err = skipValue(b); err != nil {
			return nil, nil, err
		}
	}
	if rest, err = skipValue(b); err != nil {
		return nil, nil, err
	}
	return b[:len(b)-len(rest)], rest, nil
}

// skipValue is parseValue without the values: what follows one reply.
func skipValue(b []byte) ([]byte, error) {
	line, rest, ok := cutLine(b)
	if !ok || len(line) == 0 {
		return nil, errShortReply
	}
	switch line[0] {
	case '$', '!', '=':
		n, ok := atoi(line[1:])
		if !ok {
			return nil, errBadLength
		}
		if n < 0 {
			return rest, nil
		}
		if len(rest) < n+2 {
			return nil, errShortReply
		}
		return rest[n+2:], nil
	case '*', '~', '%', '>', '|':
		n, ok := atoi(line[1:])
		if !ok {
			return nil, errBadLength
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		if line[0] == '|' {
			n++ // an attribute (a map) comes before the value it is about
		}
		var err error
		for i := 0; i < n; i++ {
			if rest, err = skipValue(rest); err != nil {
				return nil, err
			}
		}
		return rest, nil
	}
	return rest, nil
}

var errBadLength = errors.New("goredisson: bad length in reply")

// atoi reads a (possibly negative) decimal without allocating.
func atoi(b []byte) (int, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

package rlockotel

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// WithLockName puts the lock's name, as normalize returns it, on every
// metric as goredisson.lock.name (default: off; spans always carry the name
// as it is). A nil normalize is NormalizeLockName.
//
// Every distinct value makes time series of its own, so normalize must fold
// the variable parts of names (ids, numbers, user names) into a few values.
// It must be deterministic (the same name always gives the same value: the
// gauges add and take away under the value of the event that began and of
// the one that ended a wait or hold), fast, and safe for concurrent use.
func WithLockName(normalize func(name string) string) Option {
	return func(c *config) {
		if normalize == nil {
			normalize = NormalizeLockName
		}
		c.name = normalize
	}
}

// maxNameLen caps the length of a normalised name, in bytes.
const maxNameLen = 128

// NormalizeLockName is the default normaliser of WithLockName. It folds what
// looks like an id or a number to "*" and keeps the rest of the name:
//
//   - the name is cut into words at every character that is neither a
//     letter nor a digit (':', '/', '.', '-', '_', '{', '}', ...), and the
//     separators are kept as they are;
//   - a word that holds a digit ("42", "v2", "a1b2", a date's parts) is "*";
//   - a UUID (8-4-4-4-12 hex digits) is one "*", and so is a word of 16 or
//     more hex digits (a hash, an object id) even without a digit;
//   - the result is cut to 128 bytes, ending in "…" when it was cut.
//
// For example "orders:42" becomes "orders:*", "{cart:550e8400-e29b-41d4-a716-446655440000}:lock"
// becomes "{cart:*}:lock", "job-2026-11-24" becomes "job-*-*-*" and "inventory"
// stays "inventory". Parts made of letters only (user names, e-mail
// addresses) are kept: give WithLockName a function of your own when names
// hold such parts.
func NormalizeLockName(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for i := 0; i < len(name); {
		if n := uuidAt(name[i:]); n > 0 {
			b.WriteByte('*')
			i += n
			continue
		}
		r, size := utf8.DecodeRuneInString(name[i:])
		if !isWordRune(r) {
			b.WriteString(name[i : i+size])
			i += size
			continue
		}
		j := i
		for j < len(name) {
			r, size := utf8.DecodeRuneInString(name[j:])
			if !isWordRune(r) {
				break
			}
			j += size
		}
		if w := name[i:j]; isID(w) {
			b.WriteByte('*')
		} else {
			b.WriteString(w)
		}
		i = j
	}
	out := b.String()
	if len(out) > maxNameLen {
		cut := maxNameLen
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = out[:cut] + "…"
	}
	return out
}

// isWordRune reports whether r belongs to a word (letters and digits).
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// isID reports whether a word is an id: it holds a digit, or is 16 or more
// hex digits.
func isID(w string) bool {
	hex := true
	for _, r := range w {
		if unicode.IsDigit(r) {
			return true
		}
		hex = hex && isHex(r)
	}
	return hex && len(w) >= 16
}

func isHex(r rune) bool {
	return ('0' <= r && r <= '9') || ('a' <= r && r <= 'f') || ('A' <= r && r <= 'F')
}

// uuidAt returns the length of the UUID that s starts with (36), or 0. A
// UUID counts only as a whole word: what follows it is no letter or digit.
func uuidAt(s string) int {
	const n = 36
	if len(s) < n {
		return 0
	}
	for i := 0; i < n; i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return 0
			}
		default:
			if !isHex(rune(s[i])) {
				return 0
			}
		}
	}
	if len(s) > n {
		if r, _ := utf8.DecodeRuneInString(s[n:]); isWordRune(r) {
			return 0
		}
	}
	return n
}

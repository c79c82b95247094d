package inspect

import (
	"strings"
	"testing"
)

// classifyHash tells locks from hashes that are not locks by their fields
// alone (the TTL rule is Read's).
func TestClassifyHash(t *testing.T) {
	for _, c := range []struct {
		what   string
		fields map[string]string
		kind   Kind
		reason string
	}{
		{"a lock", map[string]string{"0b8f3a2e-1111-4222-8333-444455556666:1": "2"}, KindReentrant, ""},
		{"a ctx owner", map[string]string{"c1:ctx:job-7": "1"}, KindReentrant, ""},
		{"readers", map[string]string{"mode": "read", "c1:1": "1", "c2:ctx:x": "3"}, KindReadWrite, ""},
		{"a writer", map[string]string{"mode": "write", "c1:1:write": "1"}, KindReadWrite, ""},
		{"an application hash", map[string]string{"name": "bob"}, KindForeign, `field "name" is not <client id>:<owner id>`},
		{"a field with no owner", map[string]string{"c1:": "1"}, KindForeign, `field "c1:" is not`},
		{"a count that is no number", map[string]string{"c1:7": "many"}, KindForeign, `holds "many", not a hold count`},
		{"a zero count", map[string]string{"c1:7": "0"}, KindForeign, `holds "0", not a hold count`},
		{"a bad mode", map[string]string{"mode": "shared", "c1:1": "1"}, KindForeign, `"mode" is "shared"`},
		{"a faster multilock", map[string]string{"v1": "c1:1", "v1:c1:1:expire_time": "99", "v1:c1:1:lock_count": "1",
			"v2": "c1:1", "v2:c1:1:expire_time": "99", "v2:c1:1:lock_count": "1"}, KindFasterMulti, ""},
		{"a broken faster multilock", map[string]string{"v1": "nobody", "v1:x:expire_time": "99"}, KindForeign, `holds "nobody", not a holder field`},
	} {
		info := &Info{}
		info.classifyHash(c.fields)
		if info.Kind != c.kind || !strings.Contains(info.Reason, c.reason) {
			t.Errorf("%s: got %s (%q), want %s (%q)", c.what, info.Kind, info.Reason, c.kind, c.reason)
		}
		if c.kind == KindForeign && len(info.Holders) > 0 {
			t.Errorf("%s: a key that is not a lock has holders %v", c.what, info.Holders)
		}
	}
	info := &Info{}
	info.classifyHash(map[string]string{"v1": "c1:1", "v1:c1:1:expire_time": "9", "v2": "c1:1", "v2:c1:1:expire_time": "9", "v3": "c2:5", "v3:c2:5:expire_time": "9"})
	if len(info.Holders) != 2 || info.Holders[0] != (Holder{"c1:1", 2}) || info.Holders[1] != (Holder{"c2:5", 1}) {
		t.Errorf("faster multilock holders: got %v, want c1:1 with 2 values, c2:5 with 1", info.Holders)
	}
}

// clientIDs finds the Client id at the start of a holder field.
func TestClientIDs(t *testing.T) {
	u := "0b8f3a2e-1111-4222-8333-444455556666"
	for field, want := range map[string]string{
		u + ":7":           u,
		u + ":ctx:a:write": u,
		"example:ctx:job":  "example|example:ctx",
		"a:b:c:d:e:f":      "a|a:b|a:b:c|a:b:c:d",
		"nocolon":          "",
	} {
		if got := strings.Join(clientIDs(field), "|"); got != want {
			t.Errorf("clientIDs(%q) = %q, want %q", field, got, want)
		}
	}
}

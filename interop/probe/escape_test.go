package probe

import "testing"

func TestEscapeRoundTrip(t *testing.T) {
	for _, s := range []string{"plain", "a b", "a,b", "100%", "line\nbreak", "tab\there", "{orders}:42", "ünï"} {
		e := escape(s)
		for _, c := range []byte(e) {
			if c == ' ' || c == ',' || c == '\n' || c == '\t' || c == '\r' {
				t.Fatalf("escape(%q) = %q holds a separator", s, e)
			}
		}
		if got := unescape(e); got != s {
			t.Fatalf("unescape(escape(%q)) = %q", s, got)
		}
	}
}

func TestParseJavaError(t *testing.T) {
	chain := parseJavaError("RedisException: Unexpected exception <- IllegalArgumentException: Permit with id 00 has already been released")
	if len(chain) != 2 || chain[1].Class != "IllegalArgumentException" || chain[0].Message != "Unexpected exception" {
		t.Fatalf("chain %+v", chain)
	}
	e := &JavaError{Op: "psem.release", Chain: chain}
	if !e.Is(ErrIllegalArgument) || e.Is(ErrIllegalMonitorState) {
		t.Fatalf("Is: %v", e)
	}
}

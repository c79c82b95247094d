package suite

import (
	"regexp"
	"slices"
	"testing"
)

func TestChildArgs(t *testing.T) {
	got := childArgs("TestRlock", []string{
		"-test.paniconexit0", "-test.timeout=10m0s", "-test.run=^TestX$", "-test.v=test2json",
		"-test.testlogfile=/tmp/x", "-test.short=true", "-ginkgo.focus=lock", "-test.count=1", "-soak=1m",
	})
	want := []string{"-test.run=^TestRlock$", "-test.paniconexit0", "-test.timeout=10m0s",
		"-test.short=true", "-ginkgo.focus=lock", "-soak=1m"}
	if !slices.Equal(got, want) {
		t.Fatalf("childArgs = %q, want %q", got, want)
	}
}

func TestOthersPatternMatchesExactlyTheOtherShares(t *testing.T) {
	shares := map[string]int{"s a (x) [1]": 0, "s b.*": 1, "s c": 2, "s a (x) [1] more": 1}
	re := regexp.MustCompile(othersPattern(shares, 0))
	for text, share := range shares {
		if re.MatchString(text) != (share != 0) {
			t.Errorf("pattern matches %q: %v, its share is %d", text, re.MatchString(text), share)
		}
	}
	if re.MatchString("s bX") {
		t.Errorf("pattern treats a spec's text as a regexp")
	}
	if othersPattern(map[string]int{"s a": 0}, 0) != "" {
		t.Errorf("a share with every spec skips something")
	}
}

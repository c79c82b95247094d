package rlockotel_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

const coreModule = "github.com/goredisson/goredisson"

// pseudoVersion is the form of a pseudo-version of a commit with no tag
// before it: v0.0.0-<UTC commit time>-<12 hex digits of the hash>.
var pseudoVersion = regexp.MustCompile(`^v0\.0\.0-(\d{14})-([0-9a-f]{12})$`)

// semver is a released version.
var semver = regexp.MustCompile(`^v\d+\.\d+\.\d+$`)

// TestCoreRequirementIsReal guards what `go get
// github.com/goredisson/goredisson/rlockotel` resolves outside this
// repository: go.mod must require a real version of the core module (a
// release, or a pseudo-version of a commit of this repository, whose time and
// hash it checks against git when the history is there), never the zero
// pseudo-version `go mod tidy` writes for a module known only through a
// replace; and it keeps the replace that builds against the core next door.
func TestCoreRequirementIsReal(t *testing.T) {
	b, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	version, replaced := coreRequirement(string(b))
	if !replaced {
		t.Errorf("go.mod has no `replace %s => ../`: work in this repository would build against the required version instead of the core next door", coreModule)
	}
	switch {
	case version == "":
		t.Fatalf("go.mod does not require %s", coreModule)
	case semver.MatchString(version):
		t.Logf("requires the release %s", version)
		return
	case !pseudoVersion.MatchString(version):
		t.Fatalf("go.mod requires %s %s: neither a release nor a pseudo-version v0.0.0-YYYYMMDDHHMMSS-<12 hex>", coreModule, version)
	}
	m := pseudoVersion.FindStringSubmatch(version)
	stamp, hash := m[1], m[2]
	if _, err := time.Parse("20060102150405", stamp); err != nil || stamp == "00010101000000" || strings.Trim(hash, "0") == "" {
		t.Fatalf("go.mod requires %s %s: the zero pseudo-version, which `go get` can never resolve; require a pseudo-version of a commit on main (see docs/release.md)", coreModule, version)
	}

	// The commit itself, when git and the history are there (CI clones
	// the whole history; a shallow clone skips this part).
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git: cannot look the commit up")
	}
	if out, err := exec.Command(git, "rev-parse", "--is-shallow-repository").Output(); err != nil || strings.TrimSpace(string(out)) != "false" {
		t.Skip("not a git work tree with its whole history: cannot look the commit up")
	}
	out, err := exec.Command(git, "show", "-s", "--format=%H %ct", hash+"^{commit}").Output()
	if err != nil {
		t.Fatalf("go.mod requires %s %s, but this repository has no commit %s", coreModule, version, hash)
	}
	fields := strings.Fields(string(out))
	if len(fields) != 2 || !strings.HasPrefix(fields[0], hash) {
		t.Fatalf("git show %s: %q", hash, out)
	}
	var secs int64
	for _, c := range fields[1] {
		secs = secs*10 + int64(c-'0')
	}
	if got := time.Unix(secs, 0).UTC().Format("20060102150405"); got != stamp {
		t.Errorf("go.mod requires %s %s, but commit %s was committed at %s UTC: the pseudo-version must be v0.0.0-%s-%s", coreModule, version, hash, got, got, hash)
	}
}

// coreRequirement returns the version of the core module that go.mod
// requires, and whether go.mod replaces it with the directory above.
func coreRequirement(gomod string) (version string, replaced bool) {
	inRequire := false
	for _, line := range strings.Split(gomod, "\n") {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "require (":
			inRequire = true
			continue
		case line == ")":
			inRequire = false
			continue
		}
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] == "replace" && f[1] == coreModule && f[2] == "=>" && strings.TrimSuffix(f[3], "/") == ".." {
			replaced = true
		}
		if inRequire && len(f) == 2 && f[0] == coreModule {
			version = f[1]
		}
		if len(f) == 3 && f[0] == "require" && f[1] == coreModule {
			version = f[2]
		}
	}
	return version, replaced
}

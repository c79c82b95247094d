package readmecheck_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// block is one ```go block of a Markdown file.
type block struct {
	fence    int    // line of the opening fence, 1-based
	code     string // the lines between the fences
	fragment bool   // marked <!-- fragment --> or <!-- fragment: PARAMS -->
	params   string // PARAMS of the marker
}

// fragmentMarker is the line that marks the next block as a fragment.
var fragmentMarker = regexp.MustCompile(`^<!--\s*fragment(?::\s*(.*?))?\s*-->\s*$`)

// blocks returns the ```go blocks of Markdown text md.
func blocks(md string) ([]block, error) {
	lines := strings.Split(md, "\n")
	var out []block
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```go" {
			continue
		}
		b := block{fence: i + 1}
		if i > 0 {
			if m := fragmentMarker.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				b.fragment, b.params = true, m[1]
			}
		}
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		if end == len(lines) {
			return nil, fmt.Errorf("line %d: the go block is never closed", b.fence)
		}
		b.code = strings.Join(lines[i+1:end], "\n") + "\n"
		out = append(out, b)
		i = end
	}
	return out, nil
}

// isFile reports whether the block has a package clause.
func (b block) isFile() bool {
	_, err := parser.ParseFile(token.NewFileSet(), "", b.code, parser.PackageClauseOnly)
	return err == nil
}

// dir is the block's package directory in the generated module.
func (b block) dir() string { return fmt.Sprintf("block_%d", b.fence) }

// split returns a fragment's leading import declarations and the rest, its
// body, with the line on which the body starts (0-based, in the block).
func (b block) split() (imports, body string, bodyLine int) {
	lines := strings.Split(strings.TrimSuffix(b.code, "\n"), "\n")
	i, inImport := 0, false
	for ; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		switch {
		case inImport:
			inImport = t != ")"
		case strings.HasPrefix(t, "import ("):
			inImport = true
		case strings.HasPrefix(t, "import ") || t == "" || strings.HasPrefix(t, "//"):
		default:
			return strings.Join(lines[:i], "\n") + "\n", strings.Join(lines[i:], "\n") + "\n", i
		}
	}
	return b.code, "", len(lines)
}

// gofmtProblem is "" when the block is gofmt-ed, else what differs. A
// fragment's imports and body are formatted separately (gofmt takes a
// declaration list or a statement list, not both).
func (b block) gofmtProblem() string {
	parts := []string{b.code}
	if !b.isFile() {
		imports, body, _ := b.split()
		parts = []string{imports, body}
	}
	var got, want strings.Builder
	for _, p := range parts {
		if strings.TrimSpace(p) == "" {
			continue
		}
		f, err := format.Source([]byte(p))
		if err != nil {
			return "gofmt cannot parse it: " + err.Error()
		}
		got.WriteString(p)
		want.Write(f)
	}
	return firstDifference(got.String(), want.String(), b.fence)
}

// firstDifference names the first line where got and gofmt's want differ.
func firstDifference(got, want string, fence int) string {
	if got == want {
		return ""
	}
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range g {
		if i >= len(w) || g[i] != w[i] {
			wl := ""
			if i < len(w) {
				wl = w[i]
			}
			return fmt.Sprintf("not gofmt-ed: line %d is\n\t%q\ngofmt makes it\n\t%q", fence+1+i, g[i], wl)
		}
	}
	return fmt.Sprintf("not gofmt-ed: gofmt adds lines after line %d", fence+len(g))
}

// knownImports are the packages a fragment may use by their usual name
// without importing them.
var knownImports = map[string]string{
	"context":   "context",
	"errors":    "errors",
	"fmt":       "fmt",
	"http":      "net/http",
	"log":       "log",
	"slog":      "log/slog",
	"time":      "time",
	"redis":     "github.com/redis/go-redis/v9",
	"rlock":     "github.com/goredisson/goredisson/rlock",
	"ctxowner":  "github.com/goredisson/goredisson/ctxowner",
	"rlocktest": "github.com/goredisson/goredisson/rlocktest",
	"inspect":   "github.com/goredisson/goredisson/inspect",
}

// source returns the Go file of a block: a whole file as it is, a fragment
// wrapped in `func _(params) error`. //line comments make the compiler
// report README's lines; readme is README.md's absolute path.
func (b block) source(readme string) string {
	at := func(line int) string { return fmt.Sprintf("//line %s:%d\n", readme, line) }
	if b.isFile() {
		return at(b.fence+1) + b.code
	}
	imports, body, bodyLine := b.split()
	wrap := func(ret string) string {
		return "package readme\n\n" + at(b.fence+1) + imports + "\n" +
			at(b.fence-1) + "func _(" + b.params + ") error {\n" +
			at(b.fence+1+bodyLine) + body + ret + "}\n"
	}
	src := wrap("")
	if !endsInReturn(src) {
		src = wrap("return nil\n")
	}
	return addImports(src, at(b.fence-1))
}

// endsInReturn reports whether the wrapped fragment's function ends in a
// return statement (false when it does not parse: the compiler says why).
func endsInReturn(src string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	if err != nil {
		return true
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil && len(fd.Body.List) > 0 {
			_, ok := fd.Body.List[len(fd.Body.List)-1].(*ast.ReturnStmt)
			return ok
		}
	}
	return false
}

// addImports imports the knownImports that src uses but does not declare.
func addImports(src, at string) string {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
	if err != nil {
		return src
	}
	have := map[string]bool{}
	for _, is := range f.Imports {
		p, _ := strconv.Unquote(is.Path.Value)
		have[p] = true
	}
	var add []string
	for _, id := range f.Unresolved {
		if p, ok := knownImports[id.Name]; ok && !have[p] {
			have[p] = true
			add = append(add, strconv.Quote(p))
		}
	}
	if len(add) == 0 {
		return src
	}
	sort.Strings(add)
	return strings.Replace(src, "package readme\n", "package readme\n\n"+at+"import (\n\t"+strings.Join(add, "\n\t")+"\n)\n", 1)
}

// fileName is the block's file name: a _test package goes in a _test.go
// file so that go vet checks it as a test.
func (b block) fileName() string {
	f, err := parser.ParseFile(token.NewFileSet(), "", b.code, parser.PackageClauseOnly)
	if err == nil && strings.HasSuffix(f.Name.Name, "_test") {
		return "readme_test.go"
	}
	return "readme.go"
}

// vetBlocks writes every block as a package of a module that replaces
// github.com/goredisson/goredisson with the checkout at root, runs go vet on
// them all (and go build when there are compile errors), offline, and
// returns their complaints per block fence, and what they said about no
// block.
func vetBlocks(root, readme string, bs []block) (map[int]string, string, error) {
	tmp, err := os.MkdirTemp("", "readmecheck-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(tmp)
	if err := module(root, tmp); err != nil {
		return nil, "", err
	}
	for _, b := range bs {
		dir := filepath.Join(tmp, b.dir())
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, "", err
		}
		if err := os.WriteFile(filepath.Join(dir, b.fileName()), []byte(b.source(readme)), 0o644); err != nil {
			return nil, "", err
		}
	}
	vetted, _ := goCmd(tmp, "vet", "./...")
	perBlock, rest := byBlock(strings.ReplaceAll(vetted, readme, filepath.Base(readme)))
	if !strings.Contains(vetted, "vet: ") {
		return perBlock, rest, nil
	}
	// go vet names only the first compile error of a package, go build
	// every one (up to 10) but not those of _test.go files.
	built, _ := goCmd(tmp, "build", "./...")
	builtPerBlock, _ := byBlock(strings.ReplaceAll(built, readme, filepath.Base(readme)))
	for fence, b := range builtPerBlock {
		perBlock[fence] = b
	}
	return perBlock, rest, nil
}

// module makes dir a module that requires the checkout at root under its
// own path, with root's requirements and go.sum, so that nothing is
// downloaded.
func module(root, dir string) error {
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return err
		}
	}
	self := "github.com/goredisson/goredisson"
	out, err := goCmd(dir, "mod", "edit", "-module", "readme.example", "-require", self+"@v0.0.0", "-replace", self+"="+root)
	if err != nil {
		return fmt.Errorf("go mod edit: %v\n%s", err, out)
	}
	return nil
}

// goCmd runs the go command in dir, offline, and returns its output.
func goCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOWORK=off", "GOFLAGS=-mod=mod")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// vetHeader is the line before go build's or go vet's output for a package:
// "# readme.example/block_57" or "# [readme.example/block_57]".
var vetHeader = regexp.MustCompile(`^# \[?readme\.example/block_(\d+)\]?$`)

// byBlock splits go build's or go vet's output by the block its package was
// made from.
func byBlock(out string) (map[int]string, string) {
	per := map[int]string{}
	var rest strings.Builder
	cur := -1
	for _, line := range strings.Split(out, "\n") {
		if m := vetHeader.FindStringSubmatch(line); m != nil {
			cur, _ = strconv.Atoi(m[1])
			continue
		}
		if line == "" {
			continue
		}
		if cur < 0 {
			rest.WriteString(line + "\n")
		} else {
			per[cur] += line + "\n"
		}
	}
	return per, rest.String()
}

package readmecheck_test

// The Go code of README.md and docs/*.md must compile and be gofmt-ed: users
// copy it. Every ```go block of those files is one of
//
//   - a whole file: it has a package clause, and compiles as it is in a
//     package of its own (a package named x_test goes into a _test.go file,
//     so a Ginkgo suite is checked as the test it is);
//   - a fragment: the line directly before its fence is
//
//     <!-- fragment -->
//     <!-- fragment: ctx context.Context, client *rlock.Client -->
//
//     and the block is the body of a function `func _(PARAMS) error`, so
//     the names in PARAMS (Go parameter syntax) are what the snippet takes
//     as given, and it may `return err`; `return nil` is added when it does
//     not end in a return. Its leading import declarations stay at file
//     level; the packages of knownImports (context, time, redis, rlock,
//     ctxowner, rlocktest, ...) are imported when it uses them without.
//
// A block that is neither fails, as does a fragment marker before a block
// with a package clause. The blocks are compiled with go vet (and go build,
// which lists every compile error, when there are some) in a temporary
// module that replaces github.com/goredisson/goredisson with this checkout,
// offline (GOPROXY=off, -mod=mod, the checkout's go.mod requirements and
// go.sum), one package per block; a failure names the block by the line of
// its fence and gives the compiler's or vet's message with README.md's line
// numbers. One go vet run checks all blocks: with a warm build cache (CI
// runs go vet ./... first) it takes a second or two.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/goredisson/goredisson/internal/testkit/suite"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestReadme(t *testing.T) {
	suite.RunParallel(t, "README.md and docs", 2)
}

// checked is what go vet said about a set of blocks.
type checked struct {
	perBlock map[int]string // fence line -> vet's complaints
	rest     string         // complaints about no block
}

// check compiles the blocks of md, whose path is readme, against the
// checkout at root.
func check(root, readme string, bs []block) checked {
	GinkgoHelper()
	per, rest, err := vetBlocks(root, readme, bs)
	Expect(err).NotTo(HaveOccurred())
	return checked{perBlock: per, rest: rest}
}

// problems lists what is wrong with block b, "" when nothing is.
func (c checked) problems(b block) string {
	var p string
	switch file := b.isFile(); {
	case b.fragment && file:
		p += "marked <!-- fragment --> but has a package clause: drop the marker\n"
	case !b.fragment && !file:
		p += "neither a whole file (no package clause) nor marked <!-- fragment --> on the line before its fence\n"
	}
	if g := b.gofmtProblem(); g != "" {
		p += g + "\n"
	}
	if v := c.perBlock[b.fence]; v != "" {
		p += "does not compile:\n" + v
	}
	return p
}

// documents are the Markdown files whose go blocks are checked: README.md
// and every page of docs/.
func documents(root string) []string {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		panic(err)
	}
	return append([]string{filepath.Join(root, "README.md")}, docs...)
}

var _ = Describe("the documents' go blocks", func() {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		panic(err)
	}
	for _, doc := range documents(root) {
		rel, _ := filepath.Rel(root, doc)
		Describe(rel, Ordered, ContinueOnFailure, Label("slow"), func() {
			md, err := os.ReadFile(doc)
			if err != nil {
				panic(err)
			}
			bs, err := blocks(string(md))
			var vetted checked

			BeforeAll(func() {
				Expect(err).NotTo(HaveOccurred(), rel)
				if len(bs) == 0 {
					Skip(rel + " has no go block")
				}
				vetted = check(root, doc, bs)
				Expect(vetted.rest).To(BeEmpty(), "go vet of %s's blocks", rel)
			})

			for _, b := range bs {
				It(fmt.Sprintf("has a go block at line %d that compiles and is gofmt-ed", b.fence), func() {
					Expect(vetted.problems(b)).To(BeEmpty(), "%s:%d: the go block", rel, b.fence)
				})
			}
		})
	}

	It("finds README.md and the docs pages", func() {
		Expect(len(documents(root))).To(BeNumerically(">", 5))
	})
})

var _ = Describe("the README check", func() {
	It("names the line of a block that does not compile, is not gofmt-ed or is not marked", func() {
		root, err := filepath.Abs(filepath.Join("..", "..", ".."))
		Expect(err).NotTo(HaveOccurred())
		md := "# x\n\n<!-- fragment: ctx context.Context -->\n```go\nclient, err := rlock.NewClient(nil)\ndefer client.Close()\n```\n\n" +
			"<!-- fragment -->\n```go\nx:=1\n_ = x\n```\n\n```go\nfmt.Println()\n```\n\n" +
			"<!-- fragment -->\n```go\nimport \"errors\"\n\nreturn errors.New(\"ok\")\n```\n\n" +
			"```go\npackage main\n\nfunc main() {}\n```\n"
		bs, err := blocks(md)
		Expect(err).NotTo(HaveOccurred())
		Expect(bs).To(HaveLen(5))
		readme := filepath.Join(GinkgoT().TempDir(), "README.md")
		c := check(root, readme, bs)
		Expect(c.rest).To(BeEmpty())
		Expect(c.problems(bs[0])).To(And(ContainSubstring("does not compile"), ContainSubstring("README.md:5: declared and not used: err")))
		Expect(c.problems(bs[1])).To(And(ContainSubstring("not gofmt-ed: line 11 is"), ContainSubstring(`"x := 1"`)))
		Expect(c.problems(bs[2])).To(ContainSubstring("nor marked <!-- fragment -->"))
		Expect(c.problems(bs[3])).To(BeEmpty())
		Expect(c.problems(bs[4])).To(BeEmpty())
	})
})

package rlocktest_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// matcherFunc is an exported function of package rlocktest that returns a
// Gomega matcher.
type matcherFunc struct {
	name       string
	deprecated bool
}

// parsePackage returns the package doc and the matchers of package
// rlocktest, read from its source.
func parsePackage() (doc string, matchers []matcherFunc) {
	GinkgoHelper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	Expect(err).NotTo(HaveOccurred())
	var files []*ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, parser.ParseComments)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Name.Name).To(Equal("rlocktest"))
		files = append(files, f)
	}
	Expect(files).NotTo(BeEmpty())
	for _, f := range files {
		if f.Doc != nil {
			doc += f.Doc.Text()
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || fn.Type.Results == nil {
				continue
			}
			if sel, ok := fn.Type.Results.List[0].Type.(*ast.SelectorExpr); !ok || sel.Sel.Name != "GomegaMatcher" {
				continue
			}
			matchers = append(matchers, matcherFunc{name: fn.Name.Name,
				deprecated: fn.Doc != nil && strings.Contains(fn.Doc.Text(), "Deprecated:")})
		}
	}
	return doc, matchers
}

var _ = Describe("the package doc", func() {
	It("names every matcher the package offers, deprecated names aside", func() {
		doc, matchers := parsePackage()
		var named int
		for _, m := range matchers {
			if m.deprecated {
				continue
			}
			named++
			Expect(doc).To(ContainSubstring(m.name), "the package doc names "+m.name)
		}
		Expect(named).To(Equal(7))
	})
})

var _ = Describe("docs/testing.md", func() {
	var page string
	BeforeEach(func() {
		b, err := os.ReadFile("../docs/testing.md")
		Expect(err).NotTo(HaveOccurred())
		page = string(b)
	})

	It("shows every matcher of the package with an example, the deprecated one too", func() {
		_, matchers := parsePackage()
		Expect(matchers).To(HaveLen(8))
		for _, m := range matchers {
			example := regexp.MustCompile("`Expect\\([a-z]+\\)\\.To\\(rlocktest\\." + m.name + "\\(")
			Expect(example.MatchString(page)).To(BeTrue(), "docs/testing.md has a one-line example of "+m.name)
		}
	})

	It("states the cleanup rule: a spec's goroutines end before its Client closes", func() {
		for _, want := range []string{
			"**The cleanup rule: a spec's goroutines end before its Client closes.**",
			"DeferCleanup(func() { // runs before the BeforeEach's DeferCleanup(client.Close)",
		} {
			Expect(strings.Contains(page, want)).To(BeTrue(), "docs/testing.md says: "+want)
		}
	})
})

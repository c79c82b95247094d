package rlocktest_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the package doc", func() {
	It("names every matcher the package offers, deprecated names aside", func() {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.ParseComments)
		Expect(err).NotTo(HaveOccurred())
		pkg := pkgs["rlocktest"]
		Expect(pkg).NotTo(BeNil())
		var doc string
		var matchers []string
		for _, f := range pkg.Files {
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
				if fn.Doc != nil && strings.Contains(fn.Doc.Text(), "Deprecated:") {
					continue
				}
				matchers = append(matchers, fn.Name.Name)
			}
		}
		Expect(matchers).To(HaveLen(7))
		for _, m := range matchers {
			Expect(doc).To(ContainSubstring(m), "the package doc names "+m)
		}
	})
})

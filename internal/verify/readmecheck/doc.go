// Package readmecheck holds the test that every ```go block of the
// repository's README.md compiles and is gofmt-ed. It has no code of its
// own: the conventions a block follows (whole files and fragments marked
// with <!-- fragment -->) are described at the top of readme_test.go.
package readmecheck

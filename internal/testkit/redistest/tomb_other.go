//go:build !unix

package redistest

// holdPort holds nothing where the harness has no raw sockets (see
// tomb_unix.go).
func holdPort(int) int { return -1 }

// releasePort closes what holdPort returned.
func releasePort(int) {}

//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd || solaris || illumos

package inline

import (
	"errors"
	"io"
	"syscall"
)

// canPeek: a kept connection can be checked before each direct call (the
// platforms where go-redis checks its pooled connections, conncheck.go).
const canPeek = true

// peek is go-redis's health check (pool.connCheck): the socket has no byte
// to read and was not closed by the server.
func (c *conn) peek() error {
	var sysErr error
	if err := c.raw.Read(func(fd uintptr) bool {
		var buf [1]byte
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case n == 0 && err == nil:
			sysErr = io.EOF
		case n > 0:
			sysErr = errors.New("inline: unexpected bytes")
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
		default:
			sysErr = err
		}
		return true
	}); err != nil {
		return err
	}
	return sysErr
}

//go:build unix

package redistest

import (
	"net"
	"syscall"
)

// holdPort binds a socket, not listening, to the loopback port of a server
// that was stopped (see Server.signal), and returns its descriptor (-1:
// none). A connection to the port is refused, as to the dead server; and
// the kernel hands the port to no other socket asking for any free port (a
// bound socket with SO_REUSEADDR conflicts with an automatic bind), so a
// server another test process starts meanwhile cannot take it. Without it,
// a client of the dead server could reach that other server and be
// answered (a RedLock spec once counted a killed master as granting). The
// socket has SO_REUSEADDR so that it binds beside the dead server's
// sockets still closing (TIME_WAIT).
func holdPort(port int) int {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return -1
	}
	syscall.CloseOnExec(fd)
	sa := &syscall.SockaddrInet4{Port: port}
	copy(sa.Addr[:], net.IPv4(127, 0, 0, 1).To4())
	if syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1) != nil || syscall.Bind(fd, sa) != nil {
		_ = syscall.Close(fd)
		return -1
	}
	return fd
}

// releasePort closes what holdPort returned.
func releasePort(fd int) {
	if fd >= 0 {
		_ = syscall.Close(fd)
	}
}

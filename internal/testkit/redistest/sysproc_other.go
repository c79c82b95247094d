//go:build !linux

package redistest

import "syscall"

// ChildAttr puts a child process (redis-server, or a helper program a test
// starts) in its own process group.
func ChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

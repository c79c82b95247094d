package redistest

import "syscall"

// ChildAttr puts a child process (redis-server, or a helper program a test
// starts) in its own process group (signals to the test's group do not reach
// it) and has the kernel kill it if the test process dies first, so that no
// child outlives a killed test run.
func ChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

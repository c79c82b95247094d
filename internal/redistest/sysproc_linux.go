package redistest

import "syscall"

// sysProcAttr puts redis-server in its own process group (signals to the
// test's group do not reach it) and has the kernel kill it if the test
// process dies first, so that no server outlives a killed test run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

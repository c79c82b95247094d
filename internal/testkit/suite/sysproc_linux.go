package suite

import "syscall"

// sysProcAttr makes a share's process die with the test process (a test
// binary killed at its -test.timeout must not leave its shares running).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

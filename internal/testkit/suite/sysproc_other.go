//go:build !linux

package suite

import "syscall"

// sysProcAttr: elsewhere than Linux a share's process ends with its
// -test.timeout.
func sysProcAttr() *syscall.SysProcAttr { return nil }

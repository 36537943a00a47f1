//go:build !linux

package mariadbtest

import "syscall"

// sysProcAttr has nothing to add where the kernel cannot tie mariadbd's life
// to the test binary's.
func sysProcAttr() *syscall.SysProcAttr { return nil }

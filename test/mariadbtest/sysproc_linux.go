package mariadbtest

import "syscall"

// sysProcAttr has the kernel kill mariadbd when the test binary dies, so a
// test killed by its timeout leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

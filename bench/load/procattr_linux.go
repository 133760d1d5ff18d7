package main

import "syscall"

// childAttr makes a child get SIGTERM if this tool dies first, so a killed
// run leaves no daemon behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

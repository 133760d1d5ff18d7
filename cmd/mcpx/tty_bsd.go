//go:build darwin || freebsd || netbsd || openbsd

package main

import "golang.org/x/sys/unix"

func isTTY(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), unix.TIOCGETA)
	return err == nil
}

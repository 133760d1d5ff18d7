//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd

package main

func isTTY(fd uintptr) bool { return false }

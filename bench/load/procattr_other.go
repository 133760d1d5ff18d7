//go:build !linux

package main

import "syscall"

// childAttr: without Pdeathsig, children of a killed run exit when their
// stdin closes (raw HTTP server) or must be stopped by hand (the daemon).
func childAttr() *syscall.SysProcAttr { return nil }

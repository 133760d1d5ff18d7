//go:build !linux

package demo

import "errors"

// ptraceAttach is Linux's only.
func ptraceAttach(int) error { return errors.New("not supported on this system") }

//go:build !linux

package helper

// Run does nothing: containment is Linux-only.
func Run() {}

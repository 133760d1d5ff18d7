//go:build !(linux && cgo)

package helper

// PreRuntime: without cgo this binary has no C stage; the helper is the
// Go one of helper_linux.go, started in namespaces others make.
const PreRuntime = false

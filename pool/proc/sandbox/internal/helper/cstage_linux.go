//go:build linux && cgo

package helper

// #cgo CFLAGS: -Wall -Wextra -Werror -O2
// #include "cstage_linux.h"
import "C"

// PreRuntime: this binary has the C stage (cstage_linux.c), which runs
// the helper before the Go runtime starts, and makes the namespaces
// itself when EnvUnshare says which.
const PreRuntime = true

// cMaxRequest is the C stage's bound on the request, for a test to
// compare with MaxRequest.
const cMaxRequest = C.MCPX_MAX_REQUEST

// errnoText is the C stage's text for errno e, for a test to compare with
// Go's.
func errnoText(e int) string { return C.GoString(C.mcpx_errno_text(C.int(e))) }

//go:build !linux

package sandbox

import (
	"os"
	"runtime"
)

func probe() Kernel {
	why := "containment is Linux-only; this is " + runtime.GOOS
	return Kernel{OS: runtime.GOOS, LandlockWhy: why, NamespacesWhy: why, CgroupWhy: why, Root: os.Geteuid() == 0}
}

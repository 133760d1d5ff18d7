package demo

import (
	"runtime"
	"syscall"
)

// The ptrace requests Go's syscall package does not name.
const (
	ptraceSeize     = 0x4206
	ptraceInterrupt = 0x4207
	waitAll         = 0x40000000 // __WALL: a tracee that is not our child
)

// ptraceAttach attaches to pid without stopping it (PTRACE_SEIZE), then
// stops its one thread long enough to detach again: proof that it could
// have read or written the process's memory.
func ptraceAttach(pid int) error {
	runtime.LockOSThread() // ptrace belongs to the thread that attached
	defer runtime.UnlockOSThread()
	if _, _, e := syscall.Syscall6(syscall.SYS_PTRACE, ptraceSeize, uintptr(pid), 0, 0, 0, 0); e != 0 {
		return e
	}
	if _, _, e := syscall.Syscall6(syscall.SYS_PTRACE, ptraceInterrupt, uintptr(pid), 0, 0, 0, 0); e != 0 {
		return e
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, waitAll, nil); err != nil {
		return err
	}
	return syscall.PtraceDetach(pid)
}

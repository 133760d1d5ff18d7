package proctest

import (
	"fmt"
	"os"
)

// Stopped reports whether every thread of pid is stopped (state T in
// /proc), as after SIGSTOP once each thread was next scheduled.
func Stopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		var tid int
		if _, err := fmt.Sscan(task.Name(), &tid); err != nil {
			return false
		}
		// A thread's stat is its own /proc/PID/task/TID/stat; the
		// thread id is also visible as /proc/TID.
		p, err := readStat(tid)
		if err != nil || p.state != "T" {
			return false
		}
	}
	return true
}

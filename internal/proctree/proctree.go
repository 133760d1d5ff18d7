// Package proctree reads the process table from /proc and kills processes
// by identity, not by a pid alone: a pid is named with its start time, and
// a kill goes through a pidfd, so a pid reused meanwhile is never hit.
//
//	n := proctree.KillTree(cmd.Process.Pid) // the process and all below it, stopped first
//
// On systems without /proc the table is empty and nothing is killed.
package proctree

// Proc is one line of /proc/PID/stat, the fields mcpx needs.
type Proc struct {
	Pid, PPid, Pgid int
	State           byte   // R, S, Z, ...
	Start           uint64 // clock ticks after boot: with Pid, names a process across pid reuse
}

// Descendants returns the processes of procs below pid, following parent
// links, breadth first.
func Descendants(procs []Proc, pid int) []Proc {
	kids := make(map[int][]Proc, len(procs))
	for _, p := range procs {
		kids[p.PPid] = append(kids[p.PPid], p)
	}
	var out []Proc
	queue := []int{pid}
	for len(queue) > 0 {
		for _, k := range kids[queue[0]] {
			out = append(out, k)
			queue = append(queue, k.Pid)
		}
		queue = queue[1:]
	}
	return out
}

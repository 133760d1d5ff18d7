package pool

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// procInfo is one line of /proc/PID/stat, the fields we need.
type procInfo struct {
	pid, ppid, pgid int
	state           byte   // R, S, Z, ...
	start           uint64 // clock ticks after boot: with pid, names a process across pid reuse
}

// readProc parses /proc/PID/stat: "pid (comm) state ppid pgrp ...". comm
// may hold spaces and parentheses, so fields are counted from the last ')'.
func readProc(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return procInfo{}, false
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return procInfo{}, false
	}
	p := procInfo{pid: pid, state: f[0][0]}
	p.ppid, _ = strconv.Atoi(f[1])
	p.pgid, _ = strconv.Atoi(f[2])
	p.start, _ = strconv.ParseUint(f[19], 10, 64)
	return p, true
}

// allProcs lists every process in /proc; nil if /proc cannot be read.
func allProcs() []procInfo {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]procInfo, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

func selfStart() uint64 { return procStart(os.Getpid()) }

// markOf returns the MarkEnv value pid started with, "" if none or if its
// environment cannot be read (a zombie, another user's process).
func markOf(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	prefix := []byte(MarkEnv + "=")
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v)
		}
	}
	return ""
}

// procStart returns pid's start time, 0 if it is gone.
func procStart(pid int) uint64 {
	p, _ := readProc(pid)
	return p.start
}

// treeOf returns the processes below pid, following parent links; none if
// pid no longer names the process that started at start.
func treeOf(pid int, start uint64) []procInfo {
	procs := allProcs()
	kids := make(map[int][]procInfo, len(procs))
	found := false
	for _, p := range procs {
		kids[p.ppid] = append(kids[p.ppid], p)
		found = found || (p.pid == pid && p.start == start)
	}
	if !found || start == 0 {
		return nil
	}
	var out []procInfo
	queue := []int{pid}
	for len(queue) > 0 {
		for _, k := range kids[queue[0]] {
			out = append(out, k)
			queue = append(queue, k.pid)
		}
		queue = queue[1:]
	}
	return out
}

// killIf sends SIGKILL to pid if it still passes check. The pidfd pins
// the process: if pid was reused between the look and the kill, check sees
// the new process (and refuses), or the signal finds the old one gone.
func killIf(pid int, check func() bool) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if !check() {
		return false
	}
	return unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil
}

// killRest kills what a stopped child left: the processes of tree (its
// descendants when the stop began) that still run, and every process that
// carries mark, however it left the tree. It looks again until a look
// finds none, as a marked process may fork while it is being killed.
func killRest(mark string, tree []procInfo) int {
	n := 0
	self := os.Getpid()
	for _, p := range tree {
		if p.pid != self && killIf(p.pid, func() bool { q, ok := readProc(p.pid); return ok && q.start == p.start && q.state != 'Z' }) {
			n++
		}
	}
	if mark == "" {
		return n
	}
	for range 10 {
		found := 0
		for _, p := range allProcs() {
			if p.pid == self || p.state == 'Z' || markOf(p.pid) != mark {
				continue
			}
			found++
			if killIf(p.pid, func() bool { return markOf(p.pid) == mark }) {
				n++
			}
		}
		if found == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond) // let the killed go before looking again
	}
	return n
}

// killLeftovers kills the processes marked with state id whose daemon is
// gone: not running, or its pid now names another process.
func killLeftovers(state string, log *slog.Logger) int {
	n := 0
	for _, p := range allProcs() {
		if p.pid == os.Getpid() || p.state == 'Z' {
			continue
		}
		m := markOf(p.pid)
		st, daemon, ok := parseMark(m)
		if !ok || st != state || daemonAlive(daemon) {
			continue
		}
		if killIf(p.pid, func() bool { return markOf(p.pid) == m }) {
			log.Info("killed a leftover process", "pid", p.pid, "mark", m)
			n++
		}
	}
	return n
}

// daemonAlive reports whether "<pid>-<start>" names a running process.
func daemonAlive(daemon string) bool {
	if daemon == marks.self {
		return true
	}
	var pid int
	var start uint64
	if _, err := fmt.Sscanf(daemon, "%d-%d", &pid, &start); err != nil {
		return false
	}
	p, ok := readProc(pid)
	return ok && p.start == start && p.state != 'Z'
}

// startSubreaper makes this process a child subreaper and reaps the
// orphans re-parented to it, on each SIGCHLD and every few seconds in
// case a signal was coalesced away. It returns the function that stops
// both.
func startSubreaper(log *slog.Logger) (stop func()) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		log.Warn("cannot become a child subreaper; orphaned grandchildren go to init, and are still killed by their mark", "err", err)
		return func() {}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				reapOrphans()
				return
			case <-sigs:
			case <-t.C:
			}
			reapOrphans()
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
		<-exited
		unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	}
}

// reapOrphans waits for the exited children of this process that no
// exec.Cmd owns. A child is one of ours to leave alone if a spawner
// started it (direct, held across its Start so none slips between the
// fork and the registration) or if it is in our own process group, where
// an exec.Command elsewhere in the process puts its children; pool
// children lead their own groups, and their orphans stay in those or in
// sessions of their own. Each wait names its pid: a wait for any child
// would steal exec.Cmd's statuses.
func reapOrphans() int {
	self, pgrp := os.Getpid(), syscall.Getpgrp()
	direct.mu.Lock()
	defer direct.mu.Unlock()
	n := 0
	for _, p := range allProcs() {
		if p.ppid != self || p.state != 'Z' || p.pgid == pgrp || direct.pids[p.pid] {
			continue
		}
		var ws unix.WaitStatus
		if pid, err := unix.Wait4(p.pid, &ws, unix.WNOHANG, nil); err == nil && pid == p.pid {
			n++
		}
	}
	return n
}

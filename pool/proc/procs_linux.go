package proc

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

	"mcpx.dev/mcpx/internal/proctree"
)

// procInfo is one process of the table (package proctree).
type procInfo = proctree.Proc

func readProc(pid int) (procInfo, bool) { return proctree.Read(pid) }
func allProcs() []procInfo              { return proctree.All() }

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
	return p.Start
}

// treeOf returns the processes below pid, following parent links; none if
// pid no longer names the process that started at start.
func treeOf(pid int, start uint64) []procInfo {
	procs := allProcs()
	found := false
	for _, p := range procs {
		found = found || (p.Pid == pid && p.Start == start)
	}
	if !found || start == 0 {
		return nil
	}
	return proctree.Descendants(procs, pid)
}

// killRest kills what a stopped child left: the processes of tree (its
// descendants when the stop began) that still run, and every process that
// carries mark, however it left the tree. It looks again until a look
// finds none, as a marked process may fork while it is being killed.
func killRest(mark string, tree []procInfo) int {
	n := 0
	self := os.Getpid()
	for _, p := range tree {
		if p.Pid != self && proctree.KillIf(p.Pid, func() bool { q, ok := readProc(p.Pid); return ok && q.Start == p.Start && q.State != 'Z' }) {
			n++
		}
	}
	if mark == "" {
		return n
	}
	for range 10 {
		found, killed := killMarked(func(m string) bool { return m == mark }, nil)
		n += killed
		if found == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond) // let the killed go before looking again
	}
	return n
}

// killLeftovers kills the processes marked with state id whose daemon is
// gone: not running, or its pid now names another process; but those of
// the marks in spare (children kept for the next daemon).
func killLeftovers(state string, log *slog.Logger, spare map[string]bool) int {
	_, n := killMarked(func(m string) bool {
		st, daemon, ok := parseMark(m)
		return ok && st == state && !spare[m] && !daemonAlive(daemon)
	}, log)
	return n
}

// KillMarkedExcept kills every process this daemon marked (its children
// and theirs) but those carrying a mark in keep, and returns how many: at
// an exec, what is not handed over must not outlive it unowned.
func KillMarkedExcept(keep map[string]bool) int {
	marks.mu.Lock()
	prefix := marks.state + "/" + marks.self + "/"
	marks.mu.Unlock()
	_, n := killMarked(func(m string) bool { return strings.HasPrefix(m, prefix) && !keep[m] }, nil)
	return n
}

// killMarked kills every live process but this one whose mark kill
// chooses, its mark read again just before; it returns how many it chose
// and how many it killed, each logged to log if set.
func killMarked(kill func(mark string) bool, log *slog.Logger) (found, killed int) {
	for _, p := range allProcs() {
		if p.Pid == os.Getpid() || p.State == 'Z' {
			continue
		}
		m := markOf(p.Pid)
		if m == "" || !kill(m) {
			continue
		}
		found++
		if proctree.KillIf(p.Pid, func() bool { return markOf(p.Pid) == m }) {
			if log != nil {
				log.Info("killed a leftover process", "pid", p.Pid, "mark", m)
			}
			killed++
		}
	}
	return found, killed
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
	return ok && p.Start == start && p.State != 'Z'
}

// startSubreaper makes this process a child subreaper and reaps the
// orphans re-parented to it, at once (after an upgrade's exec, the
// children the old image killed are zombies whose SIGCHLD came before
// anyone listened), on each SIGCHLD and every few seconds in case a
// signal was coalesced away. It returns the function that stops both.
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
		reapOrphans()
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
// an exec.Command elsewhere in the process puts its children; spawned
// children lead their own groups, and their orphans stay in those or in
// sessions of their own. Each wait names its pid: a wait for any child
// would steal exec.Cmd's statuses.
func reapOrphans() int {
	self, pgrp := os.Getpid(), syscall.Getpgrp()
	direct.mu.Lock()
	defer direct.mu.Unlock()
	n := 0
	for _, p := range allProcs() {
		if p.PPid != self || p.State != 'Z' || p.Pgid == pgrp || direct.pids[p.Pid] {
			continue
		}
		var ws unix.WaitStatus
		if pid, err := unix.Wait4(p.Pid, &ws, unix.WNOHANG, nil); err == nil && pid == p.Pid {
			n++
		}
	}
	return n
}

package proctest

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// procID identifies a process across pid reuse.
type procID struct {
	pid   int
	start uint64 // clock ticks after boot (field 22 of /proc/PID/stat)
}

type proc struct {
	pid, ppid, pgid int
	state           string // R, S, D, Z, ...
	start           uint64
	comm            string
}

func (p *proc) id() procID { return procID{p.pid, p.start} }

// cmdline is the command line, or [comm] when there is none (zombies).
func (p *proc) cmdline() string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.pid))
	s := strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
	if s == "" {
		return "[" + p.comm + "]"
	}
	return s
}

// procTable is one snapshot of /proc, by pid.
type procTable map[int]*proc

func scan() (procTable, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	pt := make(procTable, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := readStat(pid); err == nil { // else it exited meanwhile
			pt[pid] = p
		}
	}
	if len(pt) == 0 {
		return nil, fmt.Errorf("no processes in /proc")
	}
	return pt, nil
}

// readStat parses /proc/PID/stat: "pid (comm) state ppid pgrp ...". comm may
// contain spaces and parentheses, so the fields are counted from the last ')'.
func readStat(pid int) (*proc, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return nil, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 20 {
		return nil, fmt.Errorf("short /proc/%d/stat", pid)
	}
	p := &proc{pid: pid, state: f[0], comm: string(b[open+1 : end])}
	p.ppid, _ = strconv.Atoi(f[1])
	p.pgid, _ = strconv.Atoi(f[2])
	p.start, _ = strconv.ParseUint(f[19], 10, 64)
	return p, nil
}

// descendantsOf returns the processes whose parent chain reaches root,
// but for those prune says to leave out, with everything below them.
func (pt procTable) descendantsOf(root int, prune func(*proc) bool) []*proc {
	children := make(map[int][]*proc)
	for _, p := range pt {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []*proc
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if !seen[c.pid] {
				seen[c.pid] = true
				if prune != nil && prune(c) {
					continue
				}
				out = append(out, c)
				queue = append(queue, c.pid)
			}
		}
	}
	return out
}

// owned returns, sorted by pid, the processes not in before that belong to
// the test: descendants of root, members of a process group led by one of
// them, and carriers of marker (when not ""). Descendants that carry another
// test's marker are left to that test, with their own descendants.
func (pt procTable) owned(root int, marker string, before map[procID]bool) []*proc {
	set := make(map[int]*proc)
	leaders := make(map[int]bool)
	// A process carrying another test's marker is that test's, and so is
	// everything below it, marked or not (a daemon's children whose
	// environment it chose, a sandboxed child's): tests that run in
	// parallel each see only their own.
	other := func(p *proc) bool { m := markerIn(p.pid); return m != "" && m != marker }
	for _, p := range pt.descendantsOf(root, other) {
		set[p.pid] = p
		leaders[p.pid] = true
	}
	for _, p := range pt {
		if p.pid == root {
			continue
		}
		if leaders[p.pgid] || (marker != "" && markerIn(p.pid) == marker) {
			set[p.pid] = p
		}
	}
	var out []*proc
	for _, p := range set {
		if !before[p.id()] {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *proc) int { return a.pid - b.pid })
	return out
}

// markerIn returns the value of MarkerEnv in the environment pid started
// with, "" if it has none or the environment is unreadable (another user's
// process, a zombie).
func markerIn(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return ""
	}
	prefix := []byte(MarkerEnv + "=")
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v)
		}
	}
	return ""
}

// Marked returns, sorted by pid, the live processes (zombies left out)
// that carry t's marker now: for a check in the middle of a test that what
// one step started is gone while the test's other processes run on. Where
// there is no /proc it returns none.
func Marked(t testing.TB) []int {
	marker := Marker(t)
	pt, err := scan()
	if err != nil {
		return nil
	}
	var out []int
	for _, p := range pt {
		if p.state != "Z" && markerIn(p.pid) == marker {
			out = append(out, p.pid)
		}
	}
	slices.Sort(out)
	return out
}

package proctree

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Read parses /proc/PID/stat: "pid (comm) state ppid pgrp ...". comm may
// hold spaces and parentheses, so fields are counted from the last ')'.
func Read(pid int) (Proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Proc{}, false
	}
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return Proc{}, false
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return Proc{}, false
	}
	p := Proc{Pid: pid, State: f[0][0]}
	p.PPid, _ = strconv.Atoi(f[1])
	p.Pgid, _ = strconv.Atoi(f[2])
	p.Start, _ = strconv.ParseUint(f[19], 10, 64)
	return p, true
}

// All lists every process in /proc; nil if /proc cannot be read.
func All() []Proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]Proc, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := Read(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// Signal sends sig to pid if it still passes check. The pidfd pins the
// process: if pid was reused between the look and the signal, check sees
// the new process (and refuses), or the signal finds the old one gone.
func Signal(pid int, sig unix.Signal, check func() bool) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if !check() {
		return false
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0) == nil
}

// KillIf sends SIGKILL to pid if it still passes check (see Signal).
func KillIf(pid int, check func() bool) bool { return Signal(pid, unix.SIGKILL, check) }

// Alive reports whether p still names the live process it named: not
// gone, not another process under its pid, not a zombie.
func (p Proc) Alive() bool {
	q, ok := Read(p.Pid)
	return ok && q.Start == p.Start && q.State != 'Z'
}

// maxRounds bounds how often KillTree looks for processes forked while it
// was stopping the others.
const maxRounds = 50

// KillTree kills pid and every process below it, whatever session or
// process group each is in (a builder that ran setsid): it first stops
// them all with SIGSTOP, looking again until a look finds none it had not
// stopped — so none can fork away or be re-parented out of sight while
// it works — then sends each SIGKILL. It returns how many it killed; the
// caller still reaps pid.
func KillTree(pid int) int {
	root, ok := Read(pid)
	if !ok {
		return 0
	}
	stopped := map[int]Proc{}
	for range maxRounds {
		found := 0
		for _, p := range append([]Proc{root}, Descendants(All(), pid)...) {
			if q, seen := stopped[p.Pid]; (seen && q.Start == p.Start) || p.State == 'Z' {
				continue
			}
			found++
			if Signal(p.Pid, unix.SIGSTOP, p.Alive) {
				stopped[p.Pid] = p
			}
		}
		if found == 0 {
			break
		}
	}
	n := 0
	for _, p := range stopped {
		if KillIf(p.Pid, p.Alive) {
			n++
		}
	}
	return n
}

package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Cell is the confinement of one child: made by Prepare before the child
// starts, told by Started that it did, closed by Close after it is gone.
//
//	cell, err := sandbox.Prepare(cmd, policy)
//	if err != nil { ... }          // Enforce mode: names what the kernel lacks
//	defer cell.Close()             // after cmd.Wait: removes its cgroups
//	if err := cmd.Start(); err != nil { ... }
//	enf, err := cell.Started(ctx)  // the helper confined itself and exec'd the program
//	if err != nil { cmd.Wait(); ... }
//	...
//	err = cmd.Wait()
//	if why := cell.Limit(cmd.ProcessState); why != "" { ... } // "limit: memory 1GiB"
//
// A Cell's methods may be called from any goroutine.
type Cell struct {
	// Constant after Prepare.
	cmd    *exec.Cmd
	policy Policy
	kernel Kernel
	path   string // the program's path and argv, which the helper execs
	args   []string
	stage  string // the unshare the helper starts through, if any
	// selfJoin: the helper is the C stage, which moves itself into its
	// cgroups (helper.Join); else Started moves it.
	selfJoin bool
	conn     *net.UnixConn // the daemon's end of the helper's socket
	end      *os.File      // the helper's end, the daemon's copy, until Started

	mu          sync.Mutex
	enforcement Enforcement
	listener    net.Listener // NetworkProxy, after Started
	cgroups     []cgroup
	cgroupFD    *os.File // the v2 cgroup cmd.Start clones the child into, until Started
	counters    counters // read by Close
	closed      bool
}

// cgroup is one child's cgroup: a directory the daemon made, in one
// hierarchy, holding the child and everything it starts.
type cgroup struct {
	Dir     string `json:"dir"`
	Version int    `json:"version"`
	// Memory and Pids report whether this cgroup limits memory and
	// processes (v1: one of them; v2: both where delegated).
	Memory bool `json:"memory,omitempty"`
	Pids   bool `json:"pids,omitempty"`
}

// counters are the limit events of a child's cgroups.
type counters struct {
	OOMKills int `json:"oomKills,omitempty"` // processes the memory limit killed
	PidsMax  int `json:"pidsMax,omitempty"`  // forks the pids limit refused
	Left     int `json:"left,omitempty"`     // processes Close found and killed
}

// Start prepares cmd, starts it and waits for it to be confined; on error
// nothing of it is left running. The caller waits for cmd and then closes
// the Cell.
func Start(ctx context.Context, cmd *exec.Cmd, p Policy) (*Cell, error) {
	c, err := Prepare(cmd, p)
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := c.Started(ctx); err != nil {
		cmd.Wait()
		c.Close()
		return nil, err
	}
	return c, nil
}

// Policy returns the policy the Cell confines its child by.
func (c *Cell) Policy() Policy { return c.policy }

// Enforcement returns what confines the child: the plan until Started,
// then the helper's report of what it did.
func (c *Cell) Enforcement() Enforcement {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.enforcement
}

// Listener returns, under NetworkProxy, the listener on the child's own
// 127.0.0.1:ProxyPort, for the egress proxy to accept on; nil before
// Started, under other networks, and where the kernel could not give the
// child a network namespace (BestEffort). The Cell owns it: Close closes it,
// and the proxy's Accept then returns an error.
func (c *Cell) Listener() net.Listener {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listener
}

// Limit says which limit ended the child, "" if none did: "limit: memory
// 1GiB" when the memory cgroup killed a process of it, "limit: cpu 10s"
// when it died of SIGXCPU (or of SIGKILL at the hard limit), "limit:
// processes 256" when the pids cgroup refused it a fork and it failed.
// ps is the child's cmd.ProcessState. Call it after Close for the final
// answer; before, it reads the cgroups' counters as they are.
func (c *Cell) Limit(ps *os.ProcessState) string {
	if ps == nil || ps.Success() {
		return ""
	}
	c.mu.Lock()
	n, closed := c.counters, c.closed
	cgs := c.cgroups
	c.mu.Unlock()
	if !closed {
		n = readCounters(cgs)
	}
	l := c.policy.Limits
	if l.Memory > 0 && n.OOMKills > 0 {
		return "limit: memory " + FormatBytes(l.Memory)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() && l.CPU > 0 {
		cpu := ps.UserTime() + ps.SystemTime()
		if ws.Signal() == syscall.SIGXCPU || ws.Signal() == syscall.SIGKILL && cpu >= time.Duration(l.cpuSeconds())*time.Second {
			return fmt.Sprintf("limit: cpu %ds", l.cpuSeconds())
		}
	}
	if l.Processes > 0 && n.PidsMax > 0 {
		return fmt.Sprintf("limit: processes %d", l.Processes)
	}
	return ""
}

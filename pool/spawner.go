package pool

import (
	"os/exec"
	"runtime"
	"sync"
)

// spawner starts every child from one OS thread that lives as long as the
// pool. Children get SIGKILL as their parent-death signal, and Linux sends
// it when the *thread* that forked them exits; Go may retire threads, so
// forking from an arbitrary goroutine would kill children at random. From
// this locked thread, the signal means what we want: the daemon is gone (a
// SIGKILL or a crash skips Close), so its children go too.
type spawner struct {
	reqs      chan spawnReq
	done      sync.WaitGroup
	closeOnce sync.Once
}

type spawnReq struct {
	cmd   *exec.Cmd
	reply chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq)}
	s.done.Go(func() {
		// Never unlocked: the thread exits with the goroutine at close,
		// after every child has been stopped.
		runtime.LockOSThread()
		for r := range s.reqs {
			r.reply <- startDirect(r.cmd)
		}
	})
	return s
}

// start runs cmd.Start on the spawner's thread.
func (s *spawner) start(cmd *exec.Cmd) error {
	setDeathSignal(cmd)
	reply := make(chan error, 1)
	s.reqs <- spawnReq{cmd, reply}
	return <-reply
}

// close stops the spawner; no start may follow.
func (s *spawner) close() {
	s.closeOnce.Do(func() { close(s.reqs) })
	s.done.Wait()
}

// startDirect starts cmd and registers its pid in direct before the orphan
// reaper may look again: a child that exits at once must still be left
// for its exec.Cmd to wait for. The caller forgets it after that wait.
func startDirect(cmd *exec.Cmd) error {
	direct.mu.Lock()
	defer direct.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	direct.pids[cmd.Process.Pid] = true
	return nil
}

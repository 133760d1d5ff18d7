package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The keeper: the watchdog (watchdog.go) is also what keeps the children
// given to it (Process.Keep) alive across a daemon that was killed. A
// stdio child lives on its pipes: the daemon's ends close when it dies,
// the child reads EOF and exits. So the daemon sends the watchdog, over
// the socket the watchdog watches it by, a duplicate of its ends of each
// kept child's stdin, stdout and stderr (SCM_RIGHTS), and tells it when
// the child is stopped. When the daemon dies the
// watchdog kills what it does not hold, as before, keeps what it holds,
// and waits (keepWindow) on a 0600 unix socket in the state directory
// for the next daemon of that directory, the same user (SO_PEERCRED),
// to take the descriptors; then it exits. Past the window it kills them.

// keepWindow is how long a keeper waits for the next daemon.
var keepWindow = 5 * time.Minute

// keeperSock is the keeper's socket, in the state directory.
const keeperSock = "keeper.sock"

// keepMsg is one message between daemon and keeper; Op "keep" carries
// the child's three descriptors (stdin, stdout, stderr), and a fourth, its
// egress proxy's listener, if Proxy.
type keepMsg struct {
	Op    string `json:"op"` // keep, drop (daemon → keeper); child, end (keeper → next daemon)
	Mark  string `json:"mark"`
	Pid   int    `json:"pid,omitempty"`
	Start uint64 `json:"start,omitempty"`
	Proxy bool   `json:"proxy,omitempty"`
}

// wantFds is how many descriptors m carries.
func (m keepMsg) wantFds() int {
	if m.Proxy {
		return 4
	}
	return 3
}

// keeper is this daemon's end of the socket to its watchdog; -1 without one.
var keeperEnd = struct {
	mu sync.Mutex
	fd int
}{fd: -1}

// keeperPair makes the daemon-watchdog socket pair: the daemon's end is
// recorded as keeperEnd.fd, the watchdog's returned (as its stdin).
func keeperPair() (*os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	keeperEnd.mu.Lock()
	keeperEnd.fd = fds[0]
	keeperEnd.mu.Unlock()
	return os.NewFile(uintptr(fds[1]), "watchdog"), nil
}

// closeKeeper closes the daemon's end: the watchdog reads EOF.
func closeKeeper() {
	keeperEnd.mu.Lock()
	defer keeperEnd.mu.Unlock()
	if keeperEnd.fd >= 0 {
		unix.Close(keeperEnd.fd)
		keeperEnd.fd = -1
	}
}

func sendKeeper(m keepMsg, fds ...int) error {
	b, _ := json.Marshal(m)
	keeperEnd.mu.Lock()
	defer keeperEnd.mu.Unlock()
	if keeperEnd.fd < 0 {
		return errors.New("no watchdog")
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	return unix.Sendmsg(keeperEnd.fd, b, oob, nil, 0)
}

// Keep gives the watchdog duplicates of p's pipes, and of a confined
// child's egress proxy listener, so that p outlives a killed daemon with
// its way out: the next daemon of the state directory takes them
// (TakeSurvivor). It needs a watchdog (Supervise, MaybeWatch). Stop tells
// the watchdog to let go of them.
func (p *Process) Keep() error {
	in, out, errFd, ok := p.Files()
	if !ok {
		return errors.New("its pipes are not files")
	}
	m, fds := keepMsg{Op: "keep", Mark: p.mark, Pid: p.Pid(), Start: p.start}, []int{in, out, errFd}
	if fd, ok := p.ProxyFD(); ok {
		m.Proxy, fds = true, append(fds, fd)
	}
	err := sendKeeper(m, fds...)
	runtime.KeepAlive(p)
	if err != nil {
		return err
	}
	p.exe = Exe(p.Pid())
	p.kept.Store(true)
	return nil
}

// Bye tells the watchdog the daemon closes its end on purpose: it stops,
// or execs its successor (whose children it then spares).
func Bye() { sendKeeper(keepMsg{Op: "bye"}) }

// dropChild tells the watchdog to let go of p's pipes (p is being
// stopped: its stdin must close).
func dropChild(p *Process) {
	sendKeeper(keepMsg{Op: "drop", Mark: p.mark})
}

// held is one child a keeper holds: its pipes.
type held struct {
	keepMsg
	fds []int
}

func (h held) close() { closeFds(h.fds) }

// recvKeep reads one message and its descriptors from fd; io.EOF-like
// (n == 0) ends as errClosedPeer.
func recvKeep(fd int) (keepMsg, []int, error) {
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err == unix.EINTR {
		return recvKeep(fd)
	}
	if err != nil {
		return keepMsg{}, nil, err
	}
	if n == 0 && oobn == 0 {
		return keepMsg{}, nil, errClosedPeer
	}
	var fds []int
	if oobn > 0 {
		cms, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err == nil {
			for _, cm := range cms {
				if f, err := unix.ParseUnixRights(&cm); err == nil {
					fds = append(fds, f...)
				}
			}
		}
	}
	var m keepMsg
	if err := json.Unmarshal(buf[:n], &m); err != nil {
		closeFds(fds)
		return keepMsg{}, nil, fmt.Errorf("a keeper message that is not JSON: %w", err)
	}
	return m, fds, nil
}

var errClosedPeer = errors.New("peer closed")

// keep is the watchdog's loop: it holds what the daemon gives it until
// the daemon's end closes, and returns what it holds then, and whether
// the daemon said it closes it on purpose (a stop, an upgrade's exec).
func keep(fd int) (map[string]held, bool) {
	hs := map[string]held{}
	bye := false
	for {
		m, fds, err := recvKeep(fd)
		if errors.Is(err, unix.ENOTSOCK) {
			return nil, false
		}
		if err != nil {
			return hs, bye
		}
		bye = bye || m.Op == "bye"
		switch {
		case m.Op == "keep" && len(fds) == m.wantFds():
			if old, ok := hs[m.Mark]; ok {
				old.close()
			}
			hs[m.Mark] = held{m, fds}
		case m.Op == "drop":
			if old, ok := hs[m.Mark]; ok {
				old.close()
				delete(hs, m.Mark)
			}
			fallthrough
		default:
			closeFds(fds)
		}
	}
}

// keeperListener opens dir's keeper socket for the watchdog, as a file
// to pass it, before it starts: a daemon that starts right after its
// predecessor was killed connects before the watchdog has seen the death,
// and waits its turn in the backlog. Only the daemon removes the socket
// (removeKeeperSock, at its stop; a new one at its start): a watchdog
// leaving after an upgrade's exec must not remove its successor's.
func keeperListener(dir string) *os.File {
	if dir == "" {
		return nil
	}
	path := filepath.Join(dir, keeperSock)
	os.Remove(path)
	old := syscall.Umask(0o177) // the socket is 0600 from its creation
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	syscall.Umask(old)
	if err != nil {
		return nil
	}
	l.SetUnlinkOnClose(false)
	defer l.Close()
	f, err := l.File()
	if err != nil {
		return nil
	}
	return f
}

// inheritedKeeper is the keeper socket keeperListener passed (fd 3), if
// dir is set.
func inheritedKeeper(dir string) *net.UnixListener {
	if dir == "" {
		return nil
	}
	f := os.NewFile(3, keeperSock)
	defer f.Close()
	l, err := net.FileListener(f)
	if err != nil {
		return nil
	}
	ul, _ := l.(*net.UnixListener)
	return ul
}

func removeKeeperSock(dir string) {
	if dir != "" {
		os.Remove(filepath.Join(dir, keeperSock))
	}
}

// handOver serves the held children to the first daemon of the same user
// that connects to l within keepWindow; it reports whether one took them.
func handOver(l *net.UnixListener, hs map[string]held) bool {
	if l == nil {
		return false
	}
	deadline := time.Now().Add(keepWindow)
	for time.Now().Before(deadline) {
		l.SetDeadline(deadline)
		c, err := l.AcceptUnix()
		if err != nil {
			return false
		}
		if uid, ok := peerUID(c); !ok || uid != os.Getuid() {
			c.Close()
			continue
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		ok := true
		for _, h := range hs {
			b, _ := json.Marshal(keepMsg{Op: "child", Mark: h.Mark, Pid: h.Pid, Start: h.Start, Proxy: h.Proxy})
			if _, _, err := c.WriteMsgUnix(b, unix.UnixRights(h.fds...), nil); err != nil {
				ok = false
				break
			}
		}
		if ok {
			b, _ := json.Marshal(keepMsg{Op: "end"})
			_, _, err = c.WriteMsgUnix(b, nil, nil)
			ok = err == nil
		}
		if ok {
			// Wait for the daemon to have read it all: it closes its end.
			c.Read(make([]byte, 1))
		}
		c.Close()
		if ok {
			return true
		}
	}
	return false
}

// peerUID is the uid of the process at c's other end.
func peerUID(c *net.UnixConn) (int, bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	var cred *unix.Ucred
	var cerr error
	if rc.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }) != nil || cerr != nil {
		return 0, false
	}
	return int(cred.Uid), true
}

// survivors are the children a killed daemon's keeper handed over to
// Supervise, by mark, checked to be the processes it recorded (pid, start
// time, mark), until they are taken (TakeSurvivor) or killed
// (KillSurvivors, Supervisor.Close).
var survivors = struct {
	mu sync.Mutex
	m  map[string]Inherited
}{m: map[string]Inherited{}}

// reclaim takes the children a killed predecessor's keeper holds, if one
// waits on dir's socket; it returns their marks.
func reclaim(dir string, log *slog.Logger) map[string]bool {
	path := filepath.Join(dir, keeperSock)
	if _, err := os.Lstat(path); err != nil {
		return nil
	}
	c, err := net.DialTimeout("unixpacket", path, 2*time.Second)
	if err != nil {
		log.Info("no keeper of a killed daemon answered", "socket", path, "err", err)
		os.Remove(path)
		return nil
	}
	uc := c.(*net.UnixConn)
	defer uc.Close()
	if uid, ok := peerUID(uc); !ok || uid != os.Getuid() {
		log.Warn("the keeper socket is another user's: not taking its children", "socket", path)
		return nil
	}
	uc.SetDeadline(time.Now().Add(10 * time.Second))
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil
	}
	spared := map[string]bool{}
	for range 10000 {
		var m keepMsg
		var fds []int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			m, fds, rerr = recvKeep(int(fd))
			return !errors.Is(rerr, unix.EAGAIN)
		}); err != nil || rerr != nil || m.Op == "end" {
			break
		}
		if m.Op != "child" || len(fds) != m.wantFds() {
			closeFds(fds)
			continue
		}
		p, ok := readProc(m.Pid)
		if !ok || p.Start != m.Start || p.State == 'Z' || markOf(m.Pid) != m.Mark {
			log.Info("a kept child is gone or is not the one recorded", "pid", m.Pid, "mark", m.Mark)
			closeFds(fds)
			continue
		}
		survivors.mu.Lock()
		in := Inherited{Pid: m.Pid, Start: m.Start, Mark: m.Mark, Stdin: fds[0], Stdout: fds[1], Stderr: fds[2]}
		if m.Proxy {
			in.Proxy = fds[3]
		}
		survivors.m[m.Mark] = in
		survivors.mu.Unlock()
		spared[m.Mark] = true
	}
	if len(spared) > 0 {
		log.Info("took the children a killed daemon's keeper held", "count", len(spared))
	}
	return spared
}

func closeFds(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// TakeSurvivor removes and returns the child of mark a killed daemon's
// keeper handed over to Supervise, to Adopt (it is not ours).
func TakeSurvivor(mark string) (Inherited, bool) {
	survivors.mu.Lock()
	defer survivors.mu.Unlock()
	s, ok := survivors.m[mark]
	delete(survivors.m, mark)
	return s, ok
}

// KillSurvivors kills the children Supervise took from a keeper that were
// not taken (TakeSurvivor), and returns how many processes it killed.
func KillSurvivors(log *slog.Logger) int {
	survivors.mu.Lock()
	rest := survivors.m
	survivors.m = map[string]Inherited{}
	survivors.mu.Unlock()
	n := 0
	for mark, s := range rest {
		closeFds(s.Files())
		if k := killRest(mark, nil); k > 0 {
			log.Info("killed a kept child no pool adopted", "pid", s.Pid, "mark", mark)
			n += k
		}
	}
	return n
}

// waitNotOurs waits for pid, not this process's child, to exit: its exit
// status is its parent's to read.
func waitNotOurs(pid int, start uint64) error {
	for {
		p, ok := readProc(pid)
		if !ok || p.Start != start || p.State == 'Z' {
			return errors.New("exited (a child kept from a killed daemon: its status is not known)")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

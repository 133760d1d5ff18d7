package portalloc_test

import (
	"errors"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"

	"mcpx.dev/mcpx/pool/portalloc"
)

// freeRange finds n consecutive ports that can be bound now, below the
// Linux ephemeral range so that outgoing connections do not wander in.
func freeRange(t *testing.T, n int) (lo, hi int) {
	t.Helper()
	for range 200 {
		lo = 20000 + rand.IntN(10000)
		ok := true
		for p := lo; p < lo+n && ok; p++ {
			ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				break
			}
			ln.Close()
		}
		if ok {
			return lo, lo + n - 1
		}
	}
	t.Fatalf("no %d consecutive free ports found", n)
	return 0, 0
}

// bindable reports whether the test itself can listen on port.
func bindable(port int) bool {
	ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

func TestTakeConcurrentDistinct(t *testing.T) {
	lo, hi := freeRange(t, 8)
	a := portalloc.New()
	var mu sync.Mutex
	var got []int
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			h, err := a.Take("o"+strconv.Itoa(i), lo, hi)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got = append(got, h.Port())
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(got)
	if len(slices.Compact(slices.Clone(got))) != 8 || got[0] != lo || got[7] != hi {
		t.Fatalf("ports %v, want each of [%d, %d] once", got, lo, hi)
	}
	if !slices.Equal(a.Taken(), got) {
		t.Errorf("Taken() = %v, want %v", a.Taken(), got)
	}
}

func TestHoldKeepsOthersOut(t *testing.T) {
	lo, _ := freeRange(t, 1)
	a := portalloc.New()
	h, err := a.Take("o", lo, lo)
	if err != nil {
		t.Fatal(err)
	}
	if bindable(lo) {
		t.Fatalf("port %d can be bound by another socket while it is held", lo)
	}
	h.Unbind()
	if !bindable(lo) {
		t.Fatalf("port %d cannot be bound after Unbind", lo)
	}
	// Unbound but not released: still not handed out here.
	if _, err := a.Take("p", lo, lo); !errors.Is(err, portalloc.ErrExhausted) {
		t.Fatalf("Take of an unbound, unreleased port: err = %v, want ErrExhausted", err)
	}
	if err := h.Rebind(); err != nil {
		t.Fatal(err)
	}
	if bindable(lo) {
		t.Fatalf("port %d can be bound after Rebind", lo)
	}
	h.Release()
	h.Release()
	h2, err := a.Take("p", lo, lo)
	if err != nil {
		t.Fatalf("a released port is not handed out again: %v", err)
	}
	if h2.Port() != lo || h2.Owner() != "p" {
		t.Errorf("got port %d of %q, want %d of p", h2.Port(), h2.Owner(), lo)
	}
	h2.Release()
	if len(a.Taken()) != 0 {
		t.Errorf("Taken() = %v after every release", a.Taken())
	}
}

func TestSkipsForeignListeners(t *testing.T) {
	for _, addr := range []string{"127.0.0.1", "0.0.0.0", "[::1]"} {
		t.Run(addr, func(t *testing.T) {
			lo, hi := freeRange(t, 2)
			network := "tcp4"
			if addr == "[::1]" {
				network = "tcp6"
			}
			ln, err := net.Listen(network, addr+":"+strconv.Itoa(lo))
			if err != nil {
				t.Skipf("this host cannot listen on %s: %v", addr, err)
			}
			defer ln.Close()
			a := portalloc.New()
			h, err := a.Take("o", lo, hi)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Release()
			if h.Port() != hi {
				t.Fatalf("got port %d, want %d: %d is held on %s", h.Port(), hi, lo, addr)
			}
		})
	}
}

func TestExhausted(t *testing.T) {
	lo, hi := freeRange(t, 2)
	a := portalloc.New()
	h, err := a.Take("o", lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(hi))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = a.Take("p", lo, hi)
	if !errors.Is(err, portalloc.ErrExhausted) {
		t.Fatalf("err = %v, want ErrExhausted", err)
	}
	want := "no free port in the range [" + strconv.Itoa(lo) + ", " + strconv.Itoa(hi) + "]: 1 of 2 held by other instances, 1 by other processes"
	if err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

func TestRebindAfterForeignTakeover(t *testing.T) {
	lo, _ := freeRange(t, 1)
	a := portalloc.New()
	h, err := a.Take("o", lo, lo)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	h.Unbind()
	ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(lo))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := h.Rebind(); err == nil {
		t.Fatalf("Rebind succeeded while another socket listens on %d", lo)
	}
}

func TestBadRange(t *testing.T) {
	a := portalloc.New()
	for _, r := range [][2]int{{0, 10}, {10, 9}, {65535, 65536}} {
		if _, err := a.Take("o", r[0], r[1]); err == nil || errors.Is(err, portalloc.ErrExhausted) {
			t.Errorf("Take(%v): err = %v, want a range error", r, err)
		}
	}
}

// TestClaim: a claimed port is held without being bound (its child listens
// on it), is not handed out again until released, and cannot be claimed
// twice.
func TestClaim(t *testing.T) {
	lo, hi := freeRange(t, 2)
	a := portalloc.New()
	h, err := a.Claim("o", lo)
	if err != nil {
		t.Fatal(err)
	}
	if h.Port() != lo || h.Owner() != "o" {
		t.Errorf("got port %d of %q, want %d of o", h.Port(), h.Owner(), lo)
	}
	if !bindable(lo) {
		t.Fatalf("port %d is bound after Claim; want it left to the child", lo)
	}
	taken, err := a.Take("p", lo, hi)
	if err != nil || taken.Port() != hi {
		t.Fatalf("Take past a claimed port: %v; want %d", err, hi)
	}
	defer taken.Release()
	if _, err := a.Claim("q", hi); !errors.Is(err, portalloc.ErrHeld) {
		t.Errorf("Claim of a taken port: err = %v, want ErrHeld", err)
	}
	if _, err := a.Claim("q", lo); !errors.Is(err, portalloc.ErrHeld) {
		t.Errorf("Claim of a claimed port: err = %v, want ErrHeld", err)
	}
	if err := h.Rebind(); err != nil || bindable(lo) {
		t.Fatalf("Rebind of a claimed port: %v (bindable %v)", err, bindable(lo))
	}
	h.Release()
	if !bindable(lo) || slices.Contains(a.Taken(), lo) {
		t.Fatalf("port %d still held after Release: taken %v", lo, a.Taken())
	}
	h2, err := a.Claim("q", lo)
	if err != nil {
		t.Fatalf("a released port cannot be claimed again: %v", err)
	}
	h2.Release()
}

func TestClaimBadPort(t *testing.T) {
	a := portalloc.New()
	for _, port := range []int{0, -1, 65536} {
		if _, err := a.Claim("o", port); err == nil || errors.Is(err, portalloc.ErrHeld) {
			t.Errorf("Claim(%d): err = %v, want a range error", port, err)
		}
	}
}

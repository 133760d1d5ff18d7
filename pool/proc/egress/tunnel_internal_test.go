package egress

import (
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"
)

const idle = time.Minute

// relayed starts relay between two pipes in the bubble and returns the
// child's end, the upstream's end, and a channel closed when relay returns.
func relayed(t *testing.T) (child, up net.Conn, ended chan struct{}) {
	child, tChild := net.Pipe()
	tUp, up := net.Pipe()
	ended = make(chan struct{})
	go func() {
		relay(tChild, tUp, idle, func() {})
		close(ended)
	}()
	t.Cleanup(func() {
		child.Close()
		up.Close()
		<-ended
	})
	return child, up, ended
}

func TestRelayIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		child, up, ended := relayed(t)
		time.Sleep(idle - time.Second)
		synctest.Wait()
		select {
		case <-ended:
			t.Fatal("the tunnel closed before it had been idle for IdleTimeout")
		default:
		}
		time.Sleep(idle) // idle passed for sure, and the half spent deadline too
		synctest.Wait()
		select {
		case <-ended:
		default:
			t.Fatal("an idle tunnel is still open")
		}
		if _, err := child.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("the child's end after idle: %v, want EOF", err)
		}
		if _, err := up.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("the upstream's end after idle: %v, want EOF", err)
		}
	})
}

// TestRelayOneWay: bytes flowing one way keep the tunnel open although the
// other way is silent for many times IdleTimeout (a long download).
func TestRelayOneWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		child, up, ended := relayed(t)
		go io.Copy(io.Discard, child)
		for i := range 40 {
			time.Sleep(idle / 4)
			if _, err := up.Write([]byte("chunk")); err != nil {
				t.Fatalf("writing after %v: %v", time.Duration(i+1)*idle/4, err)
			}
		}
		synctest.Wait()
		select {
		case <-ended:
			t.Fatal("a tunnel busy one way was closed as idle")
		default:
		}
		time.Sleep(2 * idle)
		synctest.Wait()
		select {
		case <-ended:
		default:
			t.Fatal("the tunnel stayed open after it fell silent")
		}
	})
}

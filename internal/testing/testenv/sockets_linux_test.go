package testenv

import (
	"net"
	"os"
	"strings"
	"testing"
)

// TestSocketsInDescribesAListener: a listener of this process is found in
// its network namespace, described as a listening stream at its address.
func TestSocketsInDescribesAListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	want := "stream, listening, " + ln.Addr().String() + " <-> -"
	for ns := range SocketNamespaces(t, os.Getpid()) {
		for _, d := range SocketsIn(t, os.Getpid(), ns) {
			if strings.HasSuffix(d, want) {
				return
			}
		}
	}
	t.Errorf("no socket described as %q", want)
}

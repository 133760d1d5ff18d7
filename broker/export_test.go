package broker

import "testing"

// SetDaemonUID makes uid the one whose project files are trusted, for the
// test: as if each file's owner had changed (a chown needs root).
func SetDaemonUID(t *testing.T, uid int) {
	prev := daemonUID
	daemonUID = func() int { return uid }
	t.Cleanup(func() { daemonUID = prev })
}

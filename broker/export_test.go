package broker

import "testing"

// SetDaemonUID makes uid the one whose project files are trusted, for the
// test: as if each file's owner had changed (a chown needs root).
func SetDaemonUID(t *testing.T, uid int) {
	prev := daemonUID
	daemonUID = func() int { return uid }
	t.Cleanup(func() { daemonUID = prev })
}

// SetAfterStamp runs f between a project file's stat and its read, for
// the test.
func SetAfterStamp(t *testing.T, f func(path string)) {
	afterStamp = f
	t.Cleanup(func() { afterStamp = nil })
}

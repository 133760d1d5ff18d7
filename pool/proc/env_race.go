//go:build race

package proc

// testEnv: a race-instrumented daemon (only ever a test binary or a
// developer's build) passes GORACE on, so that the race-built test binaries
// that tests run as children honour atexit_sleep_ms=0 instead of each
// sleeping a second at exit. Release builds pass nothing extra.
var testEnv = []string{"GORACE"}

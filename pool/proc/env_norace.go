//go:build !race

package proc

// testEnv is empty outside race-instrumented builds; see env_race.go.
var testEnv []string

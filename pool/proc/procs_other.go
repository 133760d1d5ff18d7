//go:build !linux

package proc

import "log/slog"

// Without /proc and a subreaper, marks are set but nothing reads them: a
// stopped child's process group is killed, and that is all.

type procInfo struct{}

func selfStart() uint64                                       { return 0 }
func procStart(int) uint64                                    { return 0 }
func treeOf(int, uint64) []procInfo                           { return nil }
func killRest(string, []procInfo) int                         { return 0 }
func killLeftovers(string, *slog.Logger, map[string]bool) int { return 0 }
func KillMarkedExcept(map[string]bool) int                    { return 0 }
func startSubreaper(*slog.Logger) (stop func())               { return func() {} }

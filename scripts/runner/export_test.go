package runner

import (
	"context"
	"io"
	"os/exec"
)

// The internals runner_test.go checks: it is an external test package,
// since it starts a daemon whose api imports this package.
var (
	ClientModule    = clientModule
	ValidTag        = validTag
	InterpreterName = interpreterName
	KeepClients     = keepClients
	MaxRecordLine   = maxRecordLine
)

// NewRecordLines is a recordLines writing to w with f's fields, and its
// flush.
func NewRecordLines(w io.Writer, f *Fields) (io.Writer, func() error) {
	l := &recordLines{w: w, f: f}
	return l, l.flush
}

// KeptClients lists the paths of the cache's client modules, most
// recently used first.
func KeptClients(cache string) []string {
	var paths []string
	for _, k := range keptClients(cache) {
		paths = append(paths, k.path)
	}
	return paths
}

// WaitScript runs cmd to its end as Run.Script runs a script: an
// interrupt (ctx ends) is SIGINT, then a kill InterruptGrace later.
func WaitScript(ctx context.Context, cmd *exec.Cmd) (int, error) {
	return wait(ctx, cmd, scriptInterrupt, nil, nil)
}

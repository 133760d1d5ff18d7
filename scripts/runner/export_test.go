package runner

import "io"

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

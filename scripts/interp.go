package scripts

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// jsExtensions are the extensions of files a JavaScript runtime runs
// (bundled with the client); any other file runs on an interpreter.
var jsExtensions = []string{".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs", ".jsx"}

// Interpreter returns the command that runs the script at path when it is
// not JavaScript or TypeScript: the one configured for its extension
// (configured, the merged script.interpreter: ".py" -> "python3 -u",
// split at spaces), else its shebang line's interpreter and its one
// argument, as the kernel reads it ("#!/usr/bin/env python3" ->
// ["/usr/bin/env", "python3"]). The script's path and arguments follow
// the command. nil for a JavaScript or TypeScript file; an error, naming
// the file and the fix, for another with neither.
func Interpreter(path string, configured map[string]string) ([]string, error) {
	ext := filepath.Ext(path)
	if slices.Contains(jsExtensions, ext) {
		return nil, nil
	}
	if cmd := strings.Fields(configured[ext]); len(cmd) > 0 {
		return cmd, nil
	}
	line, err := firstLine(path)
	if err != nil {
		return nil, err
	}
	if rest, ok := strings.CutPrefix(line, "#!"); ok {
		rest = strings.TrimSpace(rest)
		interp, arg := rest, ""
		if i := strings.IndexAny(rest, " \t"); i >= 0 {
			interp, arg = rest[:i], rest[i+1:]
		}
		if interp != "" {
			if arg = strings.TrimSpace(arg); arg != "" {
				return []string{interp, arg}, nil
			}
			return []string{interp}, nil
		}
	}
	key := ext
	if key == "" {
		key = ".<ext>" // a file with no extension has only its shebang
	}
	return nil, fmt.Errorf("%s is not JavaScript or TypeScript (%s) and names no interpreter: start it with a shebang line such as #!/bin/sh, "+
		`or set "script": {"interpreter": {%q: "<command>"}} in a config file of the chain`, path, strings.Join(jsExtensions, " "), key)
}

// firstLine is the first line of the file at path, read up to 256 bytes
// (the kernel reads no more of a shebang).
func firstLine(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b := make([]byte, 256)
	n, _ := io.ReadFull(f, b) // a shorter file is read whole
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	return strings.TrimSuffix(line, "\r"), nil
}

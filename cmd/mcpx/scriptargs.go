package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"mcpx.dev/mcpx/internal/suggest"
)

// parseScriptFlags parses the flags of a command that runs a script (`mcpx
// run`, `mcpx exec`) by rules that cannot surprise: its own flags are
// recognised anywhere up to `--`, before and after the script; every
// argument after `--` is the script's, flags included; an argument before
// `--` that looks like a flag but is not one of the command's is an error
// naming it (with a did-you-mean), never passed on to the script. It
// returns the positional arguments before `--` and those after it.
func parseScriptFlags(c *cli, fs *flag.FlagSet, args []string) (pos, after []string, code int, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return pos, args[i+1:], 0, true
		case a == "-" || !strings.HasPrefix(a, "-"):
			pos = append(pos, a)
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if name == "h" || name == "help" {
			fs.Usage()
			return nil, nil, exitOK, false
		}
		f := fs.Lookup(name)
		if f == nil {
			return nil, nil, usageError(c, fs, "%s", unknownFlag(fs, a, name)), false
		}
		tokens := []string{a}
		if bf, isBool := f.Value.(interface{ IsBoolFlag() bool }); !hasValue && !(isBool && bf.IsBoolFlag()) {
			if i+1 >= len(args) {
				return nil, nil, usageError(c, fs, "flag %s needs a value", a), false
			}
			i++
			tokens = append(tokens, args[i])
		}
		if err := fs.Parse(tokens); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, nil, exitOK, false
			}
			return nil, nil, exitUsage, false // fs printed the error
		}
	}
	return pos, nil, 0, true
}

// unknownFlag is the error for an argument arg (flag name) that is not one
// of fs's flags.
func unknownFlag(fs *flag.FlagSet, arg, name string) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	msg := fmt.Sprintf("unknown flag %s", arg)
	if s := suggest.Closest(name, names); s != "" {
		msg += fmt.Sprintf("; did you mean --%s?", s)
	}
	what := "<script>"
	if fs.Name() == "mcpx exec" {
		what = "'<snippet>'"
	}
	return msg + "; arguments for the script go after --, e.g. `" + fs.Name() + " " + what + " -- " + arg + "`"
}

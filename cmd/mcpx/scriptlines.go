package main

import (
	"fmt"
	"strings"

	"mcpx.dev/mcpx/config"
)

// linesFlag is a repeatable --prefix or --suffix: the CLI's layer of a
// script's prefix or suffix lines, the nearest of all. "-" stands for the
// lines the config chain gives, spliced in there; without one the flags
// replace them.
type linesFlag struct{ lines config.Lines }

func (f *linesFlag) String() string { return "" }

func (f *linesFlag) Set(v string) error {
	if v == "-" {
		f.lines = append(f.lines, nil)
	} else {
		f.lines = append(f.lines, &v)
	}
	return nil
}

// envFlag is a repeatable --env KEY=VALUE.
type envFlag struct{ vars map[string]string }

func (f *envFlag) String() string { return "" }

func (f *envFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, e.g. --env REPORT_DIR=/tmp/reports")
	}
	if f.vars == nil {
		f.vars = map[string]string{}
	}
	f.vars[k] = val
	return nil
}

package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"mcpx.dev/mcpx/broker/chain"
	"mcpx.dev/mcpx/broker/config"
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

// scriptLines merges the prefix and suffix lines of the config chain ch
// (each config.json's "script" block, nearest first) under the CLI's
// flags. A file that another user owns or may write is not used (its lines
// would run as this user), with a warning; one that does not load is an
// error naming the file and field.
func scriptLines(c *cli, ch chain.Chain, prefix, suffix config.Lines) (pre, suf []string, err error) {
	pres, sufs := []config.Lines{prefix}, []config.Lines{suffix}
	for _, d := range ch {
		if d.Config == "" {
			continue
		}
		if why := untrustedFile(d.Config); why != "" {
			fmt.Fprintf(c.stderr, "mcpx: config chain: %s: its script block is not used: %s\n", d.Config, why)
			continue
		}
		sc, err := config.LoadScript(d.Config)
		if err != nil {
			return nil, nil, err
		}
		pres, sufs = append(pres, sc.Prefix), append(sufs, sc.Suffix)
	}
	return config.MergeLines(pres), config.MergeLines(sufs), nil
}

// untrustedFile says why the lines of the file at path must not run as
// this user: another user (not root) owns it, or others may write it; ""
// when they may, or it cannot be stat'ed (LoadScript says why).
func untrustedFile(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != os.Getuid() {
		return fmt.Sprintf("another user (uid %d) owns it", st.Uid)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Sprintf("other users may write it (mode %s); make it writable by its owner only", strings.TrimPrefix(fmt.Sprintf("%#o", perm), "0"))
	}
	return ""
}

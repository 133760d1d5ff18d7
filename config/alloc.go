package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"mcpx.dev/mcpx/internal/placeholder"
)

// Alloc is one per-instance allocation of a server: {"range": [low, high]},
// a TCP port from low to high inclusive. Every instance of the server holds
// its own from its first start until it stops; ${mcpx.alloc.NAME} stands
// for it. Servers may share ports of overlapping ranges (a warning): one
// allocator serves them all, so no port goes to two live instances, but
// one server's instances may take the ports another counted on.
type Alloc struct {
	Range []int `json:"range"`
}

// UnmarshalJSON refuses fields other than range: a misspelt "rnage" must
// not leave an allocation without one.
func (a *Alloc) UnmarshalJSON(b []byte) error {
	type plain Alloc
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var v plain
	if err := d.Decode(&v); err != nil {
		return fmt.Errorf(`an allocation is {"range": [low, high]} (integers): %v`, err)
	}
	*a = Alloc(v)
	return nil
}

// MinAllocPort is the lowest port an allocation may hand out: the ports
// below need privileges the daemon should not have.
const MinAllocPort = 1024

var allocName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// checkAllocate checks s's allocate block and how its strings use it.
// s.Max is already normalized.
func (p *problems) checkAllocate(name string, s *Server) {
	if s.URL != "" && len(s.Allocate) > 0 {
		p.add(name, "allocate", "a url server has allocations, but mcpx starts no child that could listen on them",
			"remove allocate; to point instances at different upstreams, use ${mcpx.index} or ${mcpx.key} in the url")
	}
	if s.URL != "" && s.Command == "" {
		for field, v := range s.substituted() {
			if strings.Contains(v, placeholder.TmpDir) {
				p.warn(name, field, "${mcpx.tmpdir} in a url server: the directory is made, but mcpx starts no child that could use it",
					"remove the placeholder, unless the upstream shares this machine's files")
			}
		}
	}
	used := map[string]bool{}
	for _, v := range s.substituted() {
		for r := range placeholder.Refs(v) {
			if n, ok := r.Alloc(); ok {
				used[n] = true
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(s.Allocate)) {
		field := "allocate." + n
		a := s.Allocate[n]
		switch {
		case !allocName.MatchString(n):
			p.add(name, field, fmt.Sprintf("invalid allocation name %q", n), "names may use only letters, digits, _ and -")
			continue
		case a == nil:
			p.add(name, field, "the allocation is null", `write {"range": [low, high]}`)
			continue
		}
		lo, hi, ok := a.bounds()
		switch {
		case len(a.Range) != 2:
			p.add(name, field+".range", fmt.Sprintf("range has %d numbers, want 2", len(a.Range)), `write [low, high], such as [9222, 9299]`)
		case !ok:
			p.add(name, field+".range", fmt.Sprintf("range [%d, %d] is not a port range", lo, hi),
				fmt.Sprintf("use %d <= low <= high <= 65535 (ports below %d need privileges)", MinAllocPort, MinAllocPort))
		case hi-lo+1 < s.Max:
			p.warn(name, field+".range", fmt.Sprintf("range [%d, %d] holds %d ports, fewer than max (%d): the instances beyond fail to start", lo, hi, hi-lo+1, s.Max),
				fmt.Sprintf("widen the range, or set max to %d", hi-lo+1))
		}
		if !used[n] {
			p.warn(name, field, fmt.Sprintf("no field uses ${mcpx.alloc.%s}: every instance holds a port for nothing", n),
				fmt.Sprintf("pass it to the server, e.g. in args: \"--port=${mcpx.alloc.%s}\"", n))
		}
	}
}

// bounds are a's range and whether it is a valid one.
func (a *Alloc) bounds() (lo, hi int, ok bool) {
	if len(a.Range) != 2 {
		return 0, 0, false
	}
	lo, hi = a.Range[0], a.Range[1]
	return lo, hi, lo >= MinAllocPort && lo <= hi && hi <= 65535
}

// checkAllocOverlap warns of ranges that overlap between servers.
func (p *problems) checkAllocOverlap(servers map[string]*Server) {
	type rng struct {
		server, field string
		lo, hi        int
	}
	var all []rng
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		s := servers[name]
		if s == nil {
			continue
		}
		for _, n := range slices.Sorted(maps.Keys(s.Allocate)) {
			if a := s.Allocate[n]; a != nil {
				if lo, hi, ok := a.bounds(); ok {
					all = append(all, rng{name, "allocate." + n + ".range", lo, hi})
				}
			}
		}
	}
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a.server != b.server && a.lo <= b.hi && b.lo <= a.hi {
				p.warn(a.server, a.field, fmt.Sprintf("range [%d, %d] overlaps server %q's %s [%d, %d]: no port goes to two instances, but one server's instances may take the ports the other needs", a.lo, a.hi, b.server, b.field, b.lo, b.hi),
					"give each server its own range")
			}
		}
	}
}

// probeValues replaces the ${mcpx.*} placeholders in s with stand-ins of
// their kind (a path, a number), so that s can be parsed as a URL.
func probeValues(s string) string {
	var b strings.Builder
	last := 0
	for r := range placeholder.Refs(s) {
		b.WriteString(s[last:r.Start])
		last = r.End()
		_, isAlloc := r.Alloc()
		switch {
		case isAlloc || r.Text == placeholder.Index:
			b.WriteString("1")
		case r.Closed:
			b.WriteString(r.Name)
		default:
			b.WriteString(r.Text)
		}
	}
	b.WriteString(s[last:])
	return b.String()
}

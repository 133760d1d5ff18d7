package deploy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"mcpx.dev/mcpx/internal/atomicfile"
)

// Part is one thing mcpx installs into a file: the whole file, a marked
// section of it, or an entry of a JSON document. Its content is what the
// record's hash covers, so a user's edit elsewhere in a shared file (their
// own CLAUDE.md lines, their other hooks) never counts as an edit of ours.
type Part struct {
	Path string      // absolute
	Name string      // "" = the whole file; else the part's name, e.g. "instructions"
	Want string      // the part as mcpx writes it
	Mode fs.FileMode // of a file mcpx creates (0 = 0644)
	// Private: the part holds a secret (a token), so its file is made
	// 0600 even if it existed with a wider mode.
	Private bool
	secrets []string // in Want, hidden by Shown
	// ShowFile: a dry run shows the whole file as it would be, the part
	// alone saying little (a hook group without the file's hooks).
	ShowFile bool
	mcp      bool // the client's MCP server entry (Harness.Entry)
	// get extracts the part from the file's content (ok false: absent);
	// put returns the content with the part set (part "" = removed). nil =
	// the whole file.
	get func(file []byte) (part string, ok bool, err error)
	put func(file []byte, part string) ([]byte, error)
}

func (p Part) key() string {
	if p.Name == "" {
		return p.Path
	}
	return p.Path + "#" + p.Name
}

// Shown is text (the part, its file, or a diff) with the part's secrets,
// and any bearer token, as <secret>, for printing.
func (p Part) Shown(text string) string {
	for _, s := range p.secrets {
		if s != "" {
			text = strings.ReplaceAll(text, s, "<secret>")
		}
	}
	return bearerToken.ReplaceAllString(text, "${1}<secret>")
}

// bearerToken is a bearer token in a header's value, as JSON or TOML has it.
var bearerToken = regexp.MustCompile(`(Bearer )[^"'\s]+`)

func (p Part) String() string {
	if p.Name == "" {
		return p.Path
	}
	return p.Name + " in " + p.Path
}

// Action is what installing or removing a part does.
type Action string

// The actions of a Result.
const (
	Create    Action = "create"    // the part is absent: written
	Update    Action = "update"    // the part is as mcpx last wrote it, and mcpx now writes it otherwise
	Unchanged Action = "unchanged" // the part is already as wanted: nothing to do
	Remove    Action = "remove"    // uninstall: the part is as mcpx wrote it
	Absent    Action = "absent"    // uninstall: nothing to remove
	Edited    Action = "edited"    // the part differs from what mcpx wrote: left alone, Diff says how
)

// Result is what Apply did (or, dry, would do) to one part.
type Result struct {
	Part   Part
	Action Action
	Diff   string // Edited: the difference between what mcpx wrote (-) and the file (+)
	// File is the whole file as it is (or, dry, would be) after a Create
	// or an Update: for a part in a shared file (a hook in settings.json),
	// what the user's file becomes, not only the part.
	File string
}

// Records are the hashes of what mcpx wrote, kept in a JSON file in the
// state directory, so that a later install tells its own old output from a
// user's edit.
type Records struct {
	Path   string            // the records file
	Hashes map[string]string // part key -> "sha256:<hex>"
}

// RecordsFile is the records' file name in the state directory.
const RecordsFile = "installed.json"

// LoadRecords reads the records file in stateDir (absent: no records).
func LoadRecords(stateDir string) (*Records, error) {
	r := &Records{Path: filepath.Join(stateDir, RecordsFile), Hashes: map[string]string{}}
	b, err := os.ReadFile(r.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &r.Hashes); err != nil {
		return nil, fmt.Errorf("reading %s: %w (remove it to start over: mcpx then treats every installed file as edited)", r.Path, err)
	}
	return r, nil
}

func (r *Records) save() error {
	b, err := json.MarshalIndent(r.Hashes, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(r.Path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(r.Path, append(b, '\n'), 0o600)
}

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

// Install writes each part unless the user edited it since mcpx wrote it
// (or it was there before mcpx, and differs): such a part is reported as
// Edited with the difference, never overwritten. dry: decide, write nothing.
func (r *Records) Install(parts []Part, dry bool) ([]Result, error) {
	return r.apply(parts, dry, false)
}

// Uninstall removes each part that is as mcpx wrote it; an edited part is
// reported and left.
func (r *Records) Uninstall(parts []Part, dry bool) ([]Result, error) {
	return r.apply(parts, dry, true)
}

func (r *Records) apply(parts []Part, dry, remove bool) ([]Result, error) {
	var results []Result
	changed := false
	for _, p := range parts {
		res, file, err := r.plan(p, remove)
		if err != nil {
			return results, err
		}
		if res.Action == Create || res.Action == Update {
			after, err := content(p, file, p.Want)
			if err != nil {
				return results, err
			}
			res.File = string(after)
		}
		results = append(results, res)
		if dry {
			continue
		}
		switch res.Action {
		case Create, Update:
			if err := write(p, []byte(res.File)); err != nil {
				return results, err
			}
			r.Hashes[p.key()] = hash(p.Want)
			changed = true
		case Remove:
			if err := removePart(p, file); err != nil {
				return results, err
			}
			delete(r.Hashes, p.key())
			changed = true
		case Unchanged:
			if r.Hashes[p.key()] != hash(p.Want) {
				r.Hashes[p.key()] = hash(p.Want)
				changed = true
			}
		case Absent:
			if _, ok := r.Hashes[p.key()]; ok {
				delete(r.Hashes, p.key())
				changed = true
			}
		}
	}
	if changed {
		return results, r.save()
	}
	return results, nil
}

// plan decides what to do with p, returning the file's current content.
func (r *Records) plan(p Part, remove bool) (Result, []byte, error) {
	file, err := os.ReadFile(p.Path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Result{}, nil, err
	}
	exists := err == nil
	cur, ok := string(file), exists
	if p.get != nil && exists {
		if cur, ok, err = p.get(file); err != nil {
			return Result{}, nil, fmt.Errorf("reading %s: %w", p.Path, err)
		}
	}
	res := Result{Part: p}
	recorded, known := r.Hashes[p.key()]
	ours := known && recorded == hash(cur)
	switch {
	case remove && !ok:
		res.Action = Absent
	case remove && (ours || cur == p.Want):
		res.Action = Remove
	case remove:
		res.Action, res.Diff = Edited, diffLines(p.Want, cur)
	case !ok:
		res.Action = Create
	case cur == p.Want:
		res.Action = Unchanged
	case ours:
		res.Action = Update
	default:
		res.Action, res.Diff = Edited, diffLines(p.Want, cur)
	}
	return res, file, nil
}

// content is file with p set to part ("" = removed).
func content(p Part, file []byte, part string) ([]byte, error) {
	if p.put == nil {
		return []byte(part), nil
	}
	out, err := p.put(file, part)
	if err != nil {
		return nil, fmt.Errorf("updating %s: %w", p.Path, err)
	}
	return out, nil
}

// removePart takes p out of file: the file itself when p is the whole file.
func removePart(p Part, file []byte) error {
	if p.put == nil {
		return os.Remove(p.Path)
	}
	out, err := content(p, file, "")
	if err != nil {
		return err
	}
	return write(p, out)
}

// write replaces p's file with file.
func write(p Part, file []byte) error {
	mode := p.Mode
	if mode == 0 {
		mode = 0o644
	}
	if err := os.MkdirAll(filepath.Dir(p.Path), 0o755); err != nil {
		return err
	}
	if st, err := os.Stat(p.Path); err == nil {
		mode = st.Mode().Perm() // an existing file keeps its permissions
	}
	if p.Private {
		mode &^= 0o077 // but a token is for the user's eyes only
	}
	return atomicfile.Write(p.Path, file, mode)
}

// diffLines is a line diff of a (-) and b (+), common lines with two
// spaces: enough to show a person what they changed in a short file.
func diffLines(a, b string) string {
	x, y := strings.SplitAfter(a, "\n"), strings.SplitAfter(b, "\n")
	// lcs[i][j]: the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	line := func(prefix, s string) {
		if s == "" {
			return
		}
		out.WriteString(prefix + strings.TrimSuffix(s, "\n") + "\n")
	}
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		switch {
		case x[i] == y[j]:
			line("  ", x[i])
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			line("- ", x[i])
			i++
		default:
			line("+ ", y[j])
			j++
		}
	}
	for ; i < len(x); i++ {
		line("- ", x[i])
	}
	for ; j < len(y); j++ {
		line("+ ", y[j])
	}
	return out.String()
}

// Summary returns one line per result, sorted as given, for printing.
func Summary(results []Result) []string {
	var lines []string
	for _, r := range results {
		lines = append(lines, fmt.Sprintf("%-9s %s", r.Action, r.Part))
	}
	return lines
}

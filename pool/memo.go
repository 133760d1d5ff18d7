package pool

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"sync"

	"mcpx.dev/mcpx/internal/atomicfile"
	"mcpx.dev/mcpx/mcp/client"
)

// rootsMemo is what the pool has learned about one server definition's
// children: whether they ask roots/list at start-up.
type rootsMemo struct {
	def  *Server
	memo *client.RootsMemo
}

// rootsMemoFor returns the memo of def, a new one if the definition changed;
// a new one starts from what an earlier run learned about the definition.
func (p *Pool) rootsMemoFor(def *Server) *client.RootsMemo {
	p.memoMu.Lock()
	defer p.memoMu.Unlock()
	if m, ok := p.memos[def.Name]; ok && (m.def == def || sameDef(m.def, def)) {
		return m.memo
	}
	if p.memos == nil {
		p.memos = map[string]rootsMemo{}
	}
	fp := fingerprint(def)
	asks, known := p.learnt.get(fp)
	m := rootsMemo{def: def, memo: client.NewRootsMemo(asks, known, func(asks bool) { p.learnt.put(fp, asks) })}
	p.memos[def.Name] = m
	return m.memo
}

// fingerprint names a server definition: its every field, so a changed
// command, argument or variable is a definition nothing is known about.
func fingerprint(def *Server) string {
	b, _ := json.Marshal(def) // map keys sorted: stable
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// memoFile is a small JSON file of what was learned per definition
// fingerprint. A nil *memoFile, or one without a path, keeps nothing. A
// file that cannot be read or written costs only the knowledge: it is
// logged, never fatal.
type memoFile struct {
	path string
	log  *slog.Logger

	mu    sync.Mutex
	asks  map[string]bool // guarded by mu
	dirty bool            // guarded by mu: a write failed; retried on the next put
}

// memoVersion changes when what a memo means changes; a file of another
// version is ignored.
const memoVersion = 1

type memoDoc struct {
	Version   int             `json:"version"`
	RootsList map[string]bool `json:"rootsList"` // fingerprint -> its children ask roots/list at start-up
}

func loadMemoFile(path string, log *slog.Logger) *memoFile {
	m := &memoFile{path: path, log: log, asks: map[string]bool{}}
	var doc memoDoc
	if loadVersioned(path, memoVersion, &doc, &doc.Version, log, "the pool's memo file") {
		maps.Copy(m.asks, doc.RootsList)
	}
	return m
}

// loadVersioned reads the JSON file at path into doc, whose version field
// is version, and reports whether it holds what this version means: a
// file that is not there (or no path) is nothing, silently; one that
// cannot be read, is not JSON or is of another version than want is
// ignored with a warning naming what, as it will be rewritten.
func loadVersioned(path string, want int, doc any, version *int, log *slog.Logger, what string) bool {
	if path == "" {
		return false
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err == nil {
		err = json.Unmarshal(b, doc)
	}
	if err != nil || *version != want {
		log.Warn("ignoring "+what+"; it will be rewritten", "path", path, "err", err, "version", *version)
		return false
	}
	return true
}

func (m *memoFile) get(fp string) (asks, known bool) {
	if m == nil {
		return false, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	asks, known = m.asks[fp]
	return asks, known
}

// put records what was learned and writes the file (atomically: a temp
// file renamed over it, mode 0600).
func (m *memoFile) put(fp string, asks bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.asks[fp]; ok && old == asks && !m.dirty {
		return
	}
	m.asks[fp] = asks
	if m.path == "" {
		return
	}
	b, _ := json.Marshal(memoDoc{Version: memoVersion, RootsList: m.asks})
	err := atomicfile.Write(m.path, b, 0o600)
	m.dirty = err != nil
	if err != nil {
		m.log.Warn("could not save the pool's memo file; servers may be waited for again after a restart", "path", m.path, "err", err)
	}
}

// Package owner keeps the owner's named tokens: long-lived secrets, each
// with a name, that admit their bearer on the daemon's loopback TCP
// listener as the daemon's own user. They are what `mcpx install <client>
// --http` writes into a client's config, so that the entry keeps working
// when the daemon restarts or is upgraded (the daemon's own token changes
// at every start), and what `mcpx token add NAME` prints for other uses.
//
//	ts := owner.Open(filepath.Join(state, "auth"))
//	secret, info, err := ts.Add("claude") // shown once
//	info, err = ts.Check(secret)          // the daemon, on each request
//	_, err = ts.Revoke("claude")          // refused from the next request on
//
// # At rest
//
// The file (TokensFile, mode 0600 in a 0700 directory, replaced
// atomically) holds each token's name, the SHA-256 of its secret and when
// it was made, never the secret: a secret is 256 random bits, so its hash
// is as good as a password's slow hash. The owner's CLI writes it (under
// an advisory lock, so two commands do not lose each other's change); the
// daemon only reads it, again whenever it changed on disk, so a
// revocation takes effect at the next request. When each token was last
// used is the daemon's to write, in a file of its own (UsedFile), at most
// once a minute per token.
package owner

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"time"

	"mcpx.dev/mcpx/internal/atomicfile"
)

// The files in Open's directory.
const (
	TokensFile = "owner-tokens.json"
	UsedFile   = "owner-tokens-used.json"
	lockFile   = ".owner-tokens.lock"
)

// Prefix begins every secret: it tells an owner token from the daemon's
// own (hex) and from a signed token (three dot-separated parts), and makes
// a leaked one easy to search for.
const Prefix = "mcpx_"

// usedEvery is how stale a recorded last use may be before the daemon
// writes it again.
const usedEvery = time.Minute

// Errors of Check. Neither says anything about the tokens there are.
var (
	ErrUnknown   = errors.New("the token is not an owner token of this daemon (it was revoked, or never made here)")
	ErrMalformed = errors.New("the token is not an owner token (they begin " + Prefix + ")")
)

// Info describes a token (never its secret).
type Info struct {
	Name     string    `json:"name"`
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"lastUsed,omitzero"` // zero: never used
}

// entry is a token as the file holds it.
type entry struct {
	Name    string    `json:"name"`
	SHA256  string    `json:"sha256"` // hex of the secret's hash
	Created time.Time `json:"created"`
}

type file struct {
	Tokens []entry `json:"tokens"`
}

// Tokens is one directory's owner tokens. Its methods are safe for
// concurrent use.
type Tokens struct {
	dir string
	now func() time.Time

	mu     sync.Mutex
	stat   fs.FileInfo          // of the file as last read; nil = none read (or none there)
	list   []entry              // as last read
	used   map[string]time.Time // by hash: last use seen by this process
	stored map[string]time.Time // by hash: last use as UsedFile holds it
}

// Open returns the owner tokens kept in dir (created 0700 when one is
// added). It reads nothing yet.
func Open(dir string) *Tokens {
	return &Tokens{dir: dir, now: time.Now, used: map[string]time.Time{}}
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// a signed token's id (auth.Info.ID): a name like one could not be told
// from it by `mcpx token revoke`.
var idRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

// CheckName says what is wrong with a token name, if anything.
func CheckName(name string) error {
	switch {
	case !nameRE.MatchString(name):
		return fmt.Errorf("token name %q: use 1 to 64 letters, digits, '.', '_' or '-', beginning with a letter or digit (e.g. the client's name)", name)
	case idRE.MatchString(name):
		return fmt.Errorf("token name %q looks like a signed token's id: choose a name that is not 32 hex digits", name)
	}
	return nil
}

// Add makes a token called name, replacing one of that name (whose secret
// then stops working), and returns its secret, which is not kept.
func (ts *Tokens) Add(name string) (string, Info, error) {
	if err := CheckName(name); err != nil {
		return "", Info{}, err
	}
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	secret := Prefix + base64.RawURLEncoding.EncodeToString(b)
	e := entry{Name: name, SHA256: hash(secret), Created: ts.now().UTC().Truncate(time.Second)}
	err := ts.edit(func(f *file) error {
		f.Tokens = slices.DeleteFunc(f.Tokens, func(x entry) bool { return x.Name == name })
		f.Tokens = append(f.Tokens, e)
		return nil
	})
	if err != nil {
		return "", Info{}, err
	}
	return secret, Info{Name: name, Created: e.Created}, nil
}

// Revoke removes the token called name: its secret is refused from the
// daemon's next request on.
func (ts *Tokens) Revoke(name string) (Info, error) {
	var gone entry
	err := ts.edit(func(f *file) error {
		i := slices.IndexFunc(f.Tokens, func(x entry) bool { return x.Name == name })
		if i < 0 {
			return fmt.Errorf("no owner token called %q: `mcpx token ls` lists them", name)
		}
		gone = f.Tokens[i]
		f.Tokens = slices.Delete(f.Tokens, i, i+1)
		return nil
	})
	return Info{Name: gone.Name, Created: gone.Created}, err
}

// Rename gives the token called from the name to, replacing a token of
// that name (whose secret then stops working): a token made under a
// temporary name takes its place only once it is in use.
func (ts *Tokens) Rename(from, to string) error {
	if err := CheckName(to); err != nil {
		return err
	}
	return ts.edit(func(f *file) error {
		i := slices.IndexFunc(f.Tokens, func(x entry) bool { return x.Name == from })
		if i < 0 {
			return fmt.Errorf("no owner token called %q: `mcpx token ls` lists them", from)
		}
		e := f.Tokens[i]
		e.Name = to
		f.Tokens = slices.DeleteFunc(f.Tokens, func(x entry) bool { return x.Name == from || x.Name == to })
		f.Tokens = append(f.Tokens, e)
		return nil
	})
}

// Has reports whether a token called name exists.
func (ts *Tokens) Has(name string) (bool, error) {
	l, err := ts.List()
	return slices.ContainsFunc(l, func(i Info) bool { return i.Name == name }), err
}

// List returns the tokens, oldest first, with when each was last used.
func (ts *Tokens) List() ([]Info, error) {
	f, err := ts.read()
	if err != nil {
		return nil, err
	}
	var used map[string]time.Time
	if b, err := os.ReadFile(filepath.Join(ts.dir, UsedFile)); err == nil {
		json.Unmarshal(b, &used) //nolint:errcheck // a damaged record of uses only loses the "last used" column
	}
	out := []Info{}
	for _, e := range f.Tokens {
		out = append(out, Info{Name: e.Name, Created: e.Created, LastUsed: used[e.SHA256]})
	}
	return out, nil
}

// Check returns the token whose secret this is, reading the file again
// if it changed since, and records the use. Its error is ErrMalformed,
// ErrUnknown, or a failure to read the file.
func (ts *Tokens) Check(secret string) (Info, error) {
	if len(secret) <= len(Prefix) || secret[:len(Prefix)] != Prefix {
		return Info{}, ErrMalformed
	}
	got := sha256.Sum256([]byte(secret))
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if err := ts.refreshLocked(); err != nil {
		return Info{}, err
	}
	found := -1
	for i, e := range ts.list {
		want, err := hex.DecodeString(e.SHA256)
		if err == nil && subtle.ConstantTimeCompare(got[:], want) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Info{}, ErrUnknown
	}
	e := ts.list[found]
	now := ts.now().UTC().Truncate(time.Second)
	ts.used[e.SHA256] = now
	if now.Sub(ts.stored[e.SHA256]) >= usedEvery {
		ts.saveUsedLocked() // best effort: it only feeds `mcpx token ls`
	}
	return Info{Name: e.Name, Created: e.Created, LastUsed: now}, nil
}

// refreshLocked reads the file again when it is not the one last read.
func (ts *Tokens) refreshLocked() error {
	st, err := os.Stat(filepath.Join(ts.dir, TokensFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		ts.stat, ts.list = nil, nil
		return nil
	case err != nil:
		return fmt.Errorf("reading the owner tokens: %w", err)
	case ts.stat != nil && os.SameFile(st, ts.stat) && st.ModTime().Equal(ts.stat.ModTime()) && st.Size() == ts.stat.Size():
		return nil
	}
	f, err := ts.read()
	if err != nil {
		return err
	}
	ts.stat, ts.list = st, f.Tokens
	if ts.stored == nil {
		ts.stored = map[string]time.Time{}
		if b, err := os.ReadFile(filepath.Join(ts.dir, UsedFile)); err == nil {
			json.Unmarshal(b, &ts.stored) //nolint:errcheck // as in List
		}
	}
	return nil
}

// saveUsedLocked writes the last uses of the tokens there are now.
func (ts *Tokens) saveUsedLocked() {
	out := map[string]time.Time{}
	for _, e := range ts.list {
		if t, ok := ts.used[e.SHA256]; ok {
			out[e.SHA256] = t
		} else if t, ok := ts.stored[e.SHA256]; ok {
			out[e.SHA256] = t
		}
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	if atomicfile.Write(filepath.Join(ts.dir, UsedFile), append(b, '\n'), 0o600) == nil {
		ts.stored = out
	}
}

func (ts *Tokens) read() (file, error) {
	var f file
	b, err := os.ReadFile(filepath.Join(ts.dir, TokensFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, nil
	case err != nil:
		return f, fmt.Errorf("reading the owner tokens: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("reading the owner tokens %s: %w (move it away to start afresh; every owner token stops working)", filepath.Join(ts.dir, TokensFile), err)
	}
	return f, nil
}

// edit changes the file under an advisory lock held across read and
// write, so that two commands do not lose each other's change.
func (ts *Tokens) edit(change func(*file) error) error {
	if err := os.MkdirAll(ts.dir, 0o700); err != nil {
		return fmt.Errorf("creating the token directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(ts.dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("locking the owner tokens: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking the owner tokens: %w", err)
	}
	f, err := ts.read()
	if err != nil {
		return err
	}
	if err := change(&f); err != nil {
		return err
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(ts.dir, TokensFile), append(b, '\n'), 0o600)
}

func hash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

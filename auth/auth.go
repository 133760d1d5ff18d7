package auth

import (
	"cmp"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/atomicfile"
)

// DefaultTTL is Grant.TTL when it is 0; MaxTTL bounds it.
const (
	DefaultTTL = 24 * time.Hour
	MaxTTL     = 90 * 24 * time.Hour
)

// StateFile is the name of the issuer's file in Options.Dir.
const StateFile = "tokens.json"

// Verify's errors. Each says which rule refused a token and nothing more;
// ErrInvalid covers everything about its form and signature (malformed, a
// wrong algorithm, an unknown kid, a bad signature, a tampered payload).
var (
	ErrInvalid     = errors.New("the token is not a valid token of this broker")
	ErrExpired     = errors.New("the token has expired")
	ErrNotYetValid = errors.New("the token is not valid yet")
	ErrWrongBroker = errors.New("the token was issued for another broker")
	ErrRevoked     = errors.New("the token has been revoked")
	// ErrMinter: the token's minter no longer has the rights it granted
	// (its own token ended, or its grant lost admin or narrowed).
	ErrMinter = errors.New("the token's minter no longer has the rights it granted")
)

// ErrGrant is wrapped by Mint's errors about the grant itself (the caller
// asked for something wrong), as opposed to failures to save it.
var ErrGrant = errors.New("bad grant")

func grantError(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrGrant}, a...)...)
}

// Options configure Open.
type Options struct {
	// Dir holds the issuer's state (StateFile); created 0700 if missing.
	// Required.
	Dir string
	// Hostname goes into a new identity; "" = os.Hostname.
	Hostname string
	// Now is the clock; nil = time.Now.
	Now func() time.Time
}

// Grant is what a minted token carries.
type Grant struct {
	Subject string // who the token is for; becomes the caller's name. Required.
	// Rights are the token's rights, exactly (package rights: a nil list
	// in a rule has no limit). Every root must be absolute; the zero
	// Rights grant nothing.
	Rights rights.Rights
	TTL    time.Duration // 0 = DefaultTTL; at most MaxTTL
	// Minter is who mints it; the token dies with the minter's rights
	// (Minter's doc). A minter that is not the owner must give its Rights.
	Minter Minter
}

// Claims are a token's payload: the registered claims and the rights. A
// token minted before tokens carried Rights has its rights as flat
// members (servers, roots, scopes, admin, projectConfig): they are read
// as one rule, as its grant wrote them (rights.Rule.Granted).
type Claims struct {
	jwt.RegisteredClaims
	Rights rights.Rights `json:"rights"`
}

// Info describes a minted token in the ledger (never the token itself).
// A ledger entry written before tokens carried Rights is read as Claims
// are.
type Info struct {
	ID        string        `json:"id"` // the jti
	Subject   string        `json:"sub"`
	Rights    rights.Rights `json:"rights"`
	KeyID     string        `json:"kid"`
	IssuedAt  time.Time     `json:"issuedAt"`
	ExpiresAt time.Time     `json:"expiresAt"`
	Revoked   bool          `json:"revoked,omitempty"`
	Minter    Minter        `json:"minter,omitzero"` // zero: minted before minters were recorded
}

// KeyInfo describes a signing key (never its private part).
type KeyInfo struct {
	ID      string    `json:"kid"`
	Created time.Time `json:"created"`
	Current bool      `json:"current"` // signs new tokens
	// LastExpiry is the latest exp of a token it signed: a key that is no
	// longer current is retired once that has passed.
	LastExpiry time.Time `json:"lastExpiry,omitzero"`
}

// key is a KeyInfo with its private key, as the state file holds it.
type key struct {
	KeyInfo
	Seed []byte `json:"seed"` // the Ed25519 seed (base64 in JSON)
}

// state is the state file.
type state struct {
	Identity string  `json:"identity"`
	Keys     []*key  `json:"keys"`   // the current one last
	Tokens   []*Info `json:"tokens"` // minted, not yet expired
	// Minters are the followed minters (Minter.key) of tokens in Tokens,
	// with their rights as last seen.
	Minters map[string]*seen `json:"minters,omitempty"`
}

// Issuer mints and verifies tokens. Its methods are safe for concurrent
// use; one process (the daemon) owns its directory.
type Issuer struct {
	dir string
	now func() time.Time

	mu sync.RWMutex
	st state // guarded by mu
}

// Open reads the issuer's state in opts.Dir, making a new identity and a
// first key if there is none.
func Open(opts Options) (*Issuer, error) {
	if opts.Dir == "" {
		return nil, errors.New("auth: no state directory")
	}
	is := &Issuer{dir: opts.Dir, now: opts.Now}
	if is.now == nil {
		is.now = time.Now
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the token directory: %w", err)
	}
	b, err := os.ReadFile(is.path())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		host := opts.Hostname
		if host == "" {
			host, _ = os.Hostname()
		}
		is.st.Identity = "mcpx:" + cmp.Or(host, "localhost") + "/" + randomHex(4)
		if _, err := is.rotateLocked(); err != nil {
			return nil, err
		}
		return is, nil
	case err != nil:
		return nil, fmt.Errorf("reading the token state: %w", err)
	}
	if err := json.Unmarshal(b, &is.st); err != nil {
		return nil, fmt.Errorf("reading the token state %s: %w (move it away to start afresh; every token it issued stops working)", is.path(), err)
	}
	if is.st.Identity == "" || len(is.st.Keys) == 0 {
		return nil, fmt.Errorf("the token state %s has no identity or no key (move it away to start afresh)", is.path())
	}
	for _, k := range is.st.Keys {
		if len(k.Seed) != ed25519.SeedSize {
			return nil, fmt.Errorf("the token state %s: key %s is not an Ed25519 seed", is.path(), k.ID)
		}
	}
	return is, nil
}

func (is *Issuer) path() string { return filepath.Join(is.dir, StateFile) }

// Identity is the broker's identity: the issuer and audience of its tokens.
func (is *Issuer) Identity() string {
	is.mu.RLock()
	defer is.mu.RUnlock()
	return is.st.Identity
}

// Mint signs a token carrying g with the current key and records it.
func (is *Issuer) Mint(g Grant) (string, Info, error) {
	if g.Subject == "" {
		return "", Info{}, grantError("a token needs a subject (--sub NAME): it becomes the caller's name")
	}
	if why, ok := reservedSubject(g.Subject); ok {
		return "", Info{}, grantError("subject %q is reserved: %s; choose another name", g.Subject, why)
	}
	ttl := cmp.Or(g.TTL, DefaultTTL)
	if ttl < 0 || ttl > MaxTTL {
		return "", Info{}, grantError("ttl %s is out of range: a token lives between 1s and %s", g.TTL, MaxTTL)
	}
	granted, err := stored(g.Rights)
	if err != nil {
		return "", Info{}, err
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	k := is.st.Keys[len(is.st.Keys)-1]
	now := is.now().Truncate(time.Second)
	info := Info{ID: randomHex(16), Subject: g.Subject, Rights: granted, KeyID: k.ID, IssuedAt: now, ExpiresAt: now.Add(ttl), Minter: g.Minter}
	claims := Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			ID: info.ID, Subject: info.Subject, Issuer: is.st.Identity, Audience: jwt.ClaimStrings{is.st.Identity},
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(info.ExpiresAt),
		},
		Rights: info.Rights,
	}
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	t.Header["kid"] = k.ID
	tok, err := t.SignedString(ed25519.NewKeyFromSeed(k.Seed))
	if err != nil {
		return "", Info{}, fmt.Errorf("signing the token: %w", err)
	}
	prevExpiry := k.LastExpiry
	if info.ExpiresAt.After(k.LastExpiry) {
		k.LastExpiry = info.ExpiresAt
	}
	is.st.Tokens = append(is.st.Tokens, &info)
	mk := g.Minter.key()
	prevSeen, hadSeen := is.st.Minters[mk]
	if mk != "" {
		if is.st.Minters == nil {
			is.st.Minters = map[string]*seen{}
		}
		is.st.Minters[mk] = &seen{Rights: g.Minter.Rights}
	}
	if err := is.saveLocked(); err != nil {
		is.st.Tokens = is.st.Tokens[:len(is.st.Tokens)-1]
		k.LastExpiry = prevExpiry
		if mk != "" && hadSeen {
			is.st.Minters[mk] = prevSeen
		} else if mk != "" {
			delete(is.st.Minters, mk)
		}
		return "", Info{}, err
	}
	return tok, info, nil
}

// Verify checks a token and returns its claims. Its error wraps one of
// ErrInvalid, ErrExpired, ErrNotYetValid, ErrWrongBroker, ErrRevoked or
// ErrMinter.
func (is *Issuer) Verify(tok string) (*Claims, error) {
	is.mu.RLock()
	defer is.mu.RUnlock()
	claims := &Claims{}
	p := jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithTimeFunc(is.now), // no leeway: the minter is the verifier, one clock
		jwt.WithIssuer(is.st.Identity), jwt.WithAudience(is.st.Identity))
	_, err := p.ParseWithClaims(tok, claims, is.keyLocked)
	switch {
	case err == nil:
	case errors.Is(err, jwt.ErrTokenExpired):
		return nil, ErrExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return nil, ErrNotYetValid
	case errors.Is(err, jwt.ErrTokenInvalidIssuer), errors.Is(err, jwt.ErrTokenInvalidAudience):
		return nil, ErrWrongBroker
	default:
		return nil, ErrInvalid
	}
	i := slices.IndexFunc(is.st.Tokens, func(in *Info) bool { return in.ID == claims.ID })
	switch {
	case claims.ID == "" || i < 0:
		return nil, ErrInvalid
	case is.st.Tokens[i].Revoked:
		return nil, ErrRevoked
	case !is.minterAllowsLocked(is.st.Tokens[i], 0):
		return nil, ErrMinter
	}
	return claims, nil
}

// keyLocked is Verify's jwt.Keyfunc: the public key named by the kid.
func (is *Issuer) keyLocked(t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	now := is.now()
	for i, k := range is.st.Keys {
		if k.ID == kid && (i == len(is.st.Keys)-1 || now.Before(k.LastExpiry)) {
			return ed25519.NewKeyFromSeed(k.Seed).Public(), nil
		}
	}
	return nil, ErrInvalid
}

// Revoke marks the token with this id revoked, for good.
func (is *Issuer) Revoke(id string) (Info, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	i := slices.IndexFunc(is.st.Tokens, func(in *Info) bool { return in.ID == id })
	if i < 0 {
		return Info{}, fmt.Errorf("no token %q (it may have expired already): `mcpx token ls` lists them", id)
	}
	t := is.st.Tokens[i]
	was := t.Revoked
	t.Revoked = true
	if err := is.saveLocked(); err != nil {
		t.Revoked = was
		return Info{}, err
	}
	return *t, nil
}

// Rotate makes a new key current. The previous keys keep verifying the
// tokens they signed until those expire.
func (is *Issuer) Rotate() (KeyInfo, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.rotateLocked()
}

func (is *Issuer) rotateLocked() (KeyInfo, error) {
	seed := make([]byte, ed25519.SeedSize)
	rand.Read(seed)
	prev := is.st.Keys
	for _, k := range prev {
		k.Current = false
	}
	k := &key{KeyInfo: KeyInfo{ID: randomHex(8), Created: is.now().Truncate(time.Second), Current: true}, Seed: seed}
	is.st.Keys = append(slices.Clip(prev), k)
	if err := is.saveLocked(); err != nil {
		is.st.Keys = prev
		if len(prev) > 0 {
			prev[len(prev)-1].Current = true
		}
		return KeyInfo{}, err
	}
	return k.KeyInfo, nil
}

// List returns the ledger (newest first) and the keys still verifying.
func (is *Issuer) List() ([]Info, []KeyInfo) {
	is.mu.RLock()
	defer is.mu.RUnlock()
	now := is.now()
	var toks []Info
	for _, t := range slices.Backward(is.st.Tokens) {
		if now.Before(t.ExpiresAt) {
			toks = append(toks, *t)
		}
	}
	var keys []KeyInfo
	for i, k := range is.st.Keys {
		if i == len(is.st.Keys)-1 || now.Before(k.LastExpiry) {
			keys = append(keys, k.KeyInfo)
		}
	}
	return toks, keys
}

// saveLocked drops retired keys and expired tokens, then replaces the state
// file atomically (a temporary file in the same directory, renamed).
func (is *Issuer) saveLocked() error {
	now := is.now()
	is.st.Tokens = slices.DeleteFunc(is.st.Tokens, func(t *Info) bool { return !now.Before(t.ExpiresAt) })
	is.pruneMintersLocked()
	last := len(is.st.Keys) - 1
	keep := is.st.Keys[:0:0]
	for i, k := range is.st.Keys {
		if i == last || now.Before(k.LastExpiry) {
			keep = append(keep, k)
		}
	}
	is.st.Keys = keep
	b, err := json.MarshalIndent(is.st, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the token state: %w", err)
	}
	return writeAtomic(is.path(), append(b, '\n'))
}

func writeAtomic(path string, b []byte) error {
	if err := atomicfile.Write(path, b, 0o600); err != nil {
		return fmt.Errorf("saving the token state: %w", err)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

package openapi

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
)

// Document is a generated document and its entity tag.
type Document struct {
	JSON []byte
	// ETag is a strong entity tag of JSON, quoted as the ETag header
	// carries it.
	ETag string
}

// DefaultCacheSize is the number of documents a Cache keeps when NewCache
// is given 0.
const DefaultCacheSize = 64

// Cache builds tool documents once per tool-list change: a document is
// keyed by a hash of everything it is built from (the options, and each
// server's name, description, instructions, problem and tool list bytes),
// so a request whose listing is unchanged is answered from memory, and a
// changed list (a new tool, another scope's child listing other tools)
// builds a new one. Concurrent requests for the same key wait for one
// build. It keeps the most recently built documents, at most its size. All
// methods are safe for concurrent use.
type Cache struct {
	opts   Options
	size   int
	builds atomic.Int64

	mu      sync.Mutex
	entries map[[sha256.Size]byte]*entry // guarded by mu
	order   [][sha256.Size]byte          // guarded by mu: keys, oldest first
}

type entry struct {
	once sync.Once
	doc  Document
	err  error
}

// NewCache returns a cache of at most size documents (0 =
// DefaultCacheSize) built with opts.
func NewCache(opts Options, size int) *Cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &Cache{opts: opts, size: size, entries: map[[sha256.Size]byte]*entry{}}
}

// Server returns the document of one server (ServerDocument).
func (c *Cache) Server(s Server) (Document, error) {
	return c.get('s', []Server{s}, func() ([]byte, error) { return ServerDocument(c.opts, s) })
}

// Combined returns the document of servers (CombinedDocument).
func (c *Cache) Combined(servers []Server) (Document, error) {
	return c.get('c', servers, func() ([]byte, error) { return CombinedDocument(c.opts, servers) })
}

// Builds is how many documents the cache has built: a request answered
// from memory does not count.
func (c *Cache) Builds() int64 { return c.builds.Load() }

func (c *Cache) get(kind byte, servers []Server, build func() ([]byte, error)) (Document, error) {
	key := cacheKey(kind, c.opts, servers)
	c.mu.Lock()
	e, ok := c.entries[key]
	if !ok {
		e = &entry{}
		c.entries[key] = e
		c.order = append(c.order, key)
		for len(c.order) > c.size {
			delete(c.entries, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.mu.Unlock()
	e.once.Do(func() {
		c.builds.Add(1)
		b, err := build()
		if err != nil {
			e.err = err
			return
		}
		sum := sha256.Sum256(b)
		e.doc = Document{JSON: b, ETag: `"` + hex.EncodeToString(sum[:16]) + `"`}
	})
	if e.err != nil {
		// A failed build is a bug, not a state to keep: the next request
		// tries again.
		c.mu.Lock()
		if c.entries[key] == e {
			delete(c.entries, key)
			c.order = slices.DeleteFunc(c.order, func(k [sha256.Size]byte) bool { return k == key })
		}
		c.mu.Unlock()
	}
	return e.doc, e.err
}

// cacheKey hashes everything a document is built from, each field length-
// prefixed so that no two inputs share a key.
func cacheKey(kind byte, opts Options, servers []Server) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte{kind})
	field(h, opts.Version)
	for _, s := range servers {
		field(h, s.Name)
		field(h, s.Description)
		field(h, s.Instructions)
		if s.Problem != nil {
			field(h, "problem")
			field(h, s.Problem.Type)
			field(h, s.Problem.Title)
			field(h, s.Problem.Detail)
			field(h, strconv.Itoa(s.Problem.Status))
		} else {
			field(h, "tools")
			field(h, s.Tools)
		}
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

func field[T ~string | ~[]byte](h hash.Hash, s T) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

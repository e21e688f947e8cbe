// Package spill moves message content out of the prompt into a durable
// store and keeps the pointer the regenerability gate asks for.
//
// The pruneguard core does no I/O: it only asks a [pruneguard.Resolver]
// whether a pointer still leads to the content. A [Spiller] is that
// resolver. It writes content to a [Store], reads it back once to verify
// it, records the pointer on the message with [pruneguard.Context.Spill],
// and answers Resolvable from an in-memory index, so the gate never waits
// on a disk or a network. An irreducible message spilled this way may
// then be evicted, and [Spiller.Rehydrate] brings it back on demand.
package spill

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/google/uuid"

	"github.com/pruneguard/pruneguard"
)

// Store keeps spilled content under keys. Implementations must be safe for
// concurrent use.
type Store interface {
	Put(key string, content []byte) error
	Get(key string) ([]byte, error)
}

// ErrNotFound is returned by a Store's Get for a key it does not hold.
var ErrNotFound = errors.New("spill: not found")

// Memory is a Store in memory, for tests and single-process runtimes whose
// prompt, not process, is the scarce resource. The zero Memory is ready.
// It is safe for concurrent use.
type Memory struct {
	mu sync.RWMutex
	m  map[string][]byte
}

// Put stores a copy of content under key.
func (s *Memory) Put(key string, content []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string][]byte)
	}
	s.m[key] = bytes.Clone(content)
	return nil
}

// Get returns a copy of the content under key.
func (s *Memory) Get(key string) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, ok := s.m[key]
	if !ok {
		return nil, fmt.Errorf("spill: key %q: %w", key, ErrNotFound)
	}
	return bytes.Clone(b), nil
}

// Delete removes key, as a store that expires content would.
func (s *Memory) Delete(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

// Dir is a Store of files in one directory, one file per key. It is safe
// for concurrent use as long as keys are distinct, which Spiller's are.
type Dir string

// Put writes content to a file named key, atomically (write, then rename).
func (d Dir) Put(key string, content []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := os.MkdirAll(string(d), 0o755); err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	tmp, err := os.CreateTemp(string(d), ".spill-*")
	if err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	_, werr := tmp.Write(content)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("spill: writing %s: %w", key, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(string(d), key)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("spill: %w", err)
	}
	return nil
}

// Get reads the file named key.
func (d Dir) Get(key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(string(d), key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("spill: key %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	return b, nil
}

func checkKey(key string) error {
	if key == "" || key != filepath.Base(key) || key == "." || key == ".." {
		return fmt.Errorf("spill: bad key %q", key)
	}
	return nil
}

// Spiller spills messages of a Context to a Store and resolves the
// pointers it made. Set Name to tell stores apart in pointers (default
// "spill"). A Spiller is safe for concurrent use; do not copy it after
// first use.
type Spiller struct {
	Store Store
	Name  string

	mu    sync.RWMutex
	index map[string]bool // keys written and verified, not yet forgotten
}

func (s *Spiller) name() string {
	if s.Name == "" {
		return "spill"
	}
	return s.Name
}

// Spill writes the content of message id to the store under a fresh key,
// reads it back to verify it, and records the pointer on the message.
// The message may then be evicted even if it is irreducible, while the
// pointer resolves.
func (s *Spiller) Spill(c *pruneguard.Context, id pruneguard.MessageID) (pruneguard.Pointer, error) {
	m, ok := c.Message(id)
	if !ok {
		return pruneguard.Pointer{}, fmt.Errorf("spill: message %q: %w", id, pruneguard.ErrUnknownMessage)
	}
	key := uuid.NewString()
	if err := s.Store.Put(key, m.Content); err != nil {
		return pruneguard.Pointer{}, err
	}
	back, err := s.Store.Get(key)
	if err != nil {
		return pruneguard.Pointer{}, err
	}
	if !bytes.Equal(back, m.Content) {
		return pruneguard.Pointer{}, fmt.Errorf("spill: key %q: content read back differs from content written", key)
	}
	p := pruneguard.Pointer{Store: s.name(), Key: key}
	s.mu.Lock()
	if s.index == nil {
		s.index = make(map[string]bool)
	}
	s.index[key] = true
	s.mu.Unlock()
	if err := c.Spill(id, p); err != nil {
		s.Forget(p)
		return pruneguard.Pointer{}, err
	}
	return p, nil
}

// Resolvable reports whether p is a pointer this Spiller wrote, verified
// and has not forgotten. It answers from memory.
func (s *Spiller) Resolvable(p pruneguard.Pointer) bool {
	if p.Store != s.name() {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.index[p.Key]
}

// Forget makes p unresolvable, for example when the store expires it.
func (s *Spiller) Forget(p pruneguard.Pointer) {
	if p.Store != s.name() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.index, p.Key)
}

// Rehydrate reads spilled content back, to re-inject it into the prompt.
func (s *Spiller) Rehydrate(p pruneguard.Pointer) ([]byte, error) {
	if !s.Resolvable(p) {
		return nil, fmt.Errorf("spill: pointer %s/%s: %w", p.Store, p.Key, ErrNotFound)
	}
	return s.Store.Get(p.Key)
}

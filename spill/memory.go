package spill

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
)

// Memory is a Store in memory, for tests and for single-process runtimes
// whose prompt, not process, is the scarce resource. Its Puts are durable
// only for the life of the process. The zero Memory is an empty store,
// ready to use. It is safe for concurrent use; it must not be copied after
// first use. It is a [Lister].
type Memory struct {
	mu sync.RWMutex
	m  map[string][]byte // nil value: deleted, the key stays used
}

// Put stores a copy of content under key. A key that holds content, or
// held content that was deleted, is refused with [ErrKeyExists]. A done
// ctx fails it with ctx's error.
func (s *Memory) Put(ctx context.Context, key string, content []byte) error {
	if !ValidKey(key) {
		return keyErr("put", key, ErrBadKey)
	}
	if err := ctx.Err(); err != nil {
		return keyErr("put", key, err)
	}
	b := make([]byte, len(content)) // never nil: nil marks a deleted key
	copy(b, content)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, used := s.m[key]; used {
		return keyErr("put", key, ErrKeyExists)
	}
	if s.m == nil {
		s.m = make(map[string][]byte)
	}
	s.m[key] = b
	return nil
}

// Get returns a copy of the content under key. A done ctx fails it with
// ctx's error.
func (s *Memory) Get(ctx context.Context, key string) ([]byte, error) {
	if !ValidKey(key) {
		return nil, keyErr("get", key, ErrBadKey)
	}
	if err := ctx.Err(); err != nil {
		return nil, keyErr("get", key, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	b := s.m[key]
	if b == nil {
		return nil, keyErr("get", key, ErrNotFound)
	}
	return bytes.Clone(b), nil
}

// List returns the keys that start with prefix and hold content, in
// ascending order; see [Lister].
func (s *Memory) List(ctx context.Context, prefix string) ([]string, error) {
	if !validPrefix(prefix) {
		return nil, keyErr("list", prefix, ErrBadKey)
	}
	if err := ctx.Err(); err != nil {
		return nil, keyErr("list", prefix, err)
	}
	s.mu.RLock()
	var keys []string
	for k, b := range s.m {
		if b != nil && strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	s.mu.RUnlock()
	slices.Sort(keys)
	return keys, nil
}

// Delete removes the content under key, as a store that expires content
// would. The key stays used: a later Put to it is refused, so a pointer to
// it never comes to mean other content.
func (s *Memory) Delete(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[key]; ok {
		s.m[key] = nil
	}
}

// Remove removes the content under key: unlike Delete, a later Put of
// the key stores content anew. It implements [Remover].
func (s *Memory) Remove(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return keyErr("remove", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}

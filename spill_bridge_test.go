package pruneguard_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// The property tests of package pruneguard spill through a real
// spill.Spiller; they cannot import package spill, which imports theirs,
// so this file hands them one.
func init() {
	pruneguard.NewPropSpiller = func(intn func(int) int) pruneguard.PropSpiller {
		st := &flakyStore{Store: new(spill.Memory), intn: intn}
		return &propSpiller{Spiller: &spill.Spiller{Store: st, Name: "prop"}, st: st}
	}
}

// flakyStore fails a write now and then, keeping the content or not:
// what a Store may do when its Put returns an error.
type flakyStore struct {
	spill.Store
	intn func(int) int

	mu     sync.Mutex
	failed bool
}

var errWrite = errors.New("store: write failed")

func (s *flakyStore) Put(ctx context.Context, key string, content []byte) error {
	if s.intn(3) == 0 {
		s.mu.Lock()
		s.failed = true
		s.mu.Unlock()
		if s.intn(2) == 0 {
			_ = s.Store.Put(ctx, key, content)
		}
		return &spill.KeyError{Op: "put", Key: key, Err: errWrite}
	}
	return s.Store.Put(ctx, key, content)
}

type propSpiller struct {
	*spill.Spiller
	st *flakyStore
}

// Spill and Recall give the harness, which has no context, the
// Spiller's methods with context.Background().
func (s *propSpiller) Spill(c *pruneguard.Context, ids ...pruneguard.MessageID) (pruneguard.Pointer, error) {
	p, err := s.Spiller.Spill(context.Background(), c, ids...)
	if errors.Is(err, spill.ErrOpenMessage) {
		err = fmt.Errorf("%w: %w", pruneguard.ErrOpenMessage, err)
	}
	return p, err
}

func (s *propSpiller) Recall(p pruneguard.Pointer) ([]pruneguard.Message, error) {
	return s.Spiller.Recall(context.Background(), p)
}

func (s *propSpiller) Failed() bool {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	f := s.st.failed
	s.st.failed = false
	return f
}

package wiretest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/pruneguard/pruneguard/sessions"
)

// Fleet checks a middleware's promise to a fleet: replicas sharing a
// session store, serving one conversation in turn and restarted on the
// way, send the provider exactly the bodies one middleware serving the
// whole conversation sends. C is the SDK's client type.
type Fleet[C any] struct {
	// Client returns a client that sends to p through a new middleware
	// keeping its conversations in store. store is nil for the one
	// middleware that serves the conversation alone.
	Client func(p *Provider, store sessions.Store) C
	// Loop runs one named conversation, sending request i (from 0)
	// through clientOf(i), and returns how many requests it sent. The
	// conversation must not depend on which client sends.
	Loop func(clientOf func(i int) C) int
}

// Run runs the conversation through one middleware, then, as a subtest
// for a store in memory and one in a directory, through two replicas
// that share the store, taking turns, the first replaced by a new one
// (a restart) every fifth request. A replica run that sends another
// number of requests, or another body at any request, fails the test.
// Run returns the provider of the single middleware's run.
func (f Fleet[C]) Run(t *testing.T) *Provider {
	t.Helper()
	one := Start(t)
	c := f.Client(one, nil)
	n := f.Loop(func(int) C { return c })
	stores := []struct {
		name  string
		store sessions.Store
	}{{"memory", &sessions.Memory{}}, {"dir", sessions.Dir(t.TempDir())}}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			p := Start(t)
			replicas := []C{f.Client(p, s.store), f.Client(p, s.store)}
			clientOf := func(i int) C {
				if i%5 == 4 {
					replicas[0] = f.Client(p, s.store) // a deploy restarts it
				}
				return replicas[i%2]
			}
			if got := f.Loop(clientOf); got != n || p.Count() != one.Count() {
				t.Fatalf("%d requests (%d accepted), want %d (%d)", got, p.Count(), n, one.Count())
			}
			for i := range p.Count() {
				if !bytes.Equal(p.Body(i), one.Body(i)) {
					t.Fatalf("request %d: the fleet sent another body", i)
				}
			}
		})
	}
	return one
}

// ErrStoreDown is the error every method of [DownStore] returns.
var ErrStoreDown = errors.New("wiretest: session store unreachable")

// DownStore is a [sessions.Store] that cannot be reached: every Load and
// Save fails with [ErrStoreDown]. It is safe for concurrent use.
type DownStore struct{}

// Load fails with [ErrStoreDown].
func (DownStore) Load(context.Context, string) ([]byte, sessions.Version, error) {
	return nil, 0, ErrStoreDown
}

// Save fails with [ErrStoreDown].
func (DownStore) Save(context.Context, string, []byte, sessions.Version) (sessions.Version, error) {
	return 0, ErrStoreDown
}

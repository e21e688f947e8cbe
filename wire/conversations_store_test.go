package wire_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pruneguard/pruneguard/sessions"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// fleetCase is one conversation of a fleet test: its bodies, in order.
type fleetCase struct {
	name   string
	d      wire.Dialect
	bodies [][]byte
	total  int
}

func fleetCases(t *testing.T) []fleetCase {
	var cs []fleetCase
	for _, d := range []wire.Dialect{wire.OpenAIChat, wire.OpenAIResponses, wire.Anthropic, wire.Bedrock} {
		body := []byte(factBody(d, 30))
		bodies, _ := growingBodies(t, d, body)
		cs = append(cs, fleetCase{name: "conv-" + string(d), d: d, bodies: bodies, total: wire.Tokens(mustRead(t, body, d), nil)})
	}
	return cs
}

// replica is one process of a fleet: a Conversations on the shared
// session store, spilling to the shared spill store.
func replica(t *testing.T, total int, store sessions.Store, sp spill.Store) *wire.Conversations {
	cfg := twinConfig(wire.OpenAIChat, total, sp)
	cs, err := wire.NewConversations(wire.ConversationsConfig{Session: cfg, Sessions: store, Tenant: "acme"})
	must(t, err)
	return cs
}

// guardOne guards body as conversation name on cs.
func guardOne(t *testing.T, cs *wire.Conversations, d wire.Dialect, name string, body []byte) string {
	ctx := wire.WithConversation(context.Background(), name)
	out, rep, err := cs.Guard(ctx, d, body)
	return fmt.Sprintf("%s %v", out, err) + reportString(rep)
}

// reference is what one process that served the whole conversation sent
// for each body, each body sent dup times.
func reference(t *testing.T, c fleetCase, dup int) []string {
	one := replica(t, c.total, nil, &spill.Memory{})
	var want []string
	for _, b := range c.bodies {
		for range dup {
			want = append(want, guardOne(t, one, c.d, c.name, b))
		}
	}
	return want
}

// TestConversationsFleetAlternate: two replicas sharing a session store
// (memory, directory) serve one conversation in alternation, one of them
// restarted every few requests, and send exactly the bodies one process
// sends, with the same reports.
func TestConversationsFleetAlternate(t *testing.T) {
	stores := map[string]func() sessions.Store{
		"memory": func() sessions.Store { return &sessions.Memory{} },
		"dir":    func() sessions.Store { return sessions.Dir(t.TempDir()) },
	}
	for sname, mk := range stores {
		for _, c := range fleetCases(t) {
			t.Run(sname+"/"+c.name, func(t *testing.T) {
				want := reference(t, c, 1)
				store, sp := mk(), &spill.Memory{}
				rs := []*wire.Conversations{replica(t, c.total, store, sp), replica(t, c.total, store, sp)}
				for i, b := range c.bodies {
					if i%5 == 4 {
						rs[0] = replica(t, c.total, store, sp) // a deploy restarts it
					}
					if got := guardOne(t, rs[i%2], c.d, c.name, b); got != want[i] {
						t.Fatalf("request %d on replica %d:\n got %s\nwant %s", i, i%2, got, want[i])
					}
				}
				if rs[0].Len() != 0 || rs[1].Len() != 0 {
					t.Errorf("named conversations were kept in process")
				}
			})
		}
	}
}

// TestConversationsFleetConcurrent: conversations served at once by two
// replicas, each body sent to both at the same moment (a client retrying
// on another replica), send what one process sends when it gets each
// body twice: the replica that loses the race reloads and redoes its
// work, and nothing is lost or applied twice.
func TestConversationsFleetConcurrent(t *testing.T) {
	counted := &countingStore{Store: &sessions.Memory{}}
	var store sessions.Store = counted
	sp := &spill.Memory{}
	cases := fleetCases(t)
	var wg sync.WaitGroup
	for _, c := range cases {
		want := reference(t, c, 2)
		rs := []*wire.Conversations{replica(t, c.total, store, sp), replica(t, c.total, store, sp)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, b := range c.bodies {
				got := make([]string, 2)
				var pair sync.WaitGroup
				for r := range 2 {
					pair.Add(1)
					go func() {
						defer pair.Done()
						got[r] = guardOne(t, rs[r], c.d, c.name, b)
					}()
				}
				pair.Wait()
				for r := range 2 {
					if got[r] != want[2*i] && got[r] != want[2*i+1] {
						t.Errorf("%s: request %d on replica %d:\n got %s\nwant %s", c.name, i, r, got[r], want[2*i])
						return
					}
				}
				if got[0] == got[1] && want[2*i] != want[2*i+1] {
					t.Errorf("%s: request %d: both replicas sent the first answer: one was applied twice", c.name, i)
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d saves lost the race", counted.conflicts.Load())
}

// countingStore counts the Saves that conflict.
type countingStore struct {
	sessions.Store
	conflicts atomic.Int32
}

func (s *countingStore) Save(ctx context.Context, id string, state []byte, expect sessions.Version) (sessions.Version, error) {
	v, err := s.Store.Save(ctx, id, state, expect)
	if errors.Is(err, sessions.ErrConflict) {
		s.conflicts.Add(1)
	}
	return v, err
}

// failingStore fails every Load and Save.
type failingStore struct{}

var errDown = errors.New("store down")

func (failingStore) Load(context.Context, string) ([]byte, sessions.Version, error) {
	return nil, 0, errDown
}

func (failingStore) Save(context.Context, string, []byte, sessions.Version) (sessions.Version, error) {
	return 0, errDown
}

// TestConversationsStoreDown: a store that fails refuses the request
// with a *StoreError, and no body is sent, unless PassUnguarded is set:
// then the body goes as it came and OnReport gets the error.
func TestConversationsStoreDown(t *testing.T) {
	c := fleetCases(t)[0]
	cfg := wire.ConversationsConfig{Session: twinConfig(c.d, c.total, &spill.Memory{}), Sessions: failingStore{}}
	cs, err := wire.NewConversations(cfg)
	must(t, err)
	ctx := wire.WithConversation(context.Background(), c.name)
	out, _, err := cs.Guard(ctx, c.d, c.bodies[len(c.bodies)-1])
	var se *wire.StoreError
	if out != nil || !errors.Is(err, wire.ErrSessionStore) || !errors.Is(err, errDown) || !errors.As(err, &se) || se.Op != "load" {
		t.Fatalf("store down: %q, %v", out, err)
	}
	var reported error
	cfg.PassUnguarded = true
	cfg.OnReport = func(_ string, _ wire.Report, err error) { reported = err }
	cs, err = wire.NewConversations(cfg)
	must(t, err)
	body := c.bodies[len(c.bodies)-1]
	out, _, err = cs.Guard(ctx, c.d, body)
	if err != nil || string(out) != string(body) || !errors.Is(reported, wire.ErrSessionStore) {
		t.Fatalf("pass unguarded: %v, reported %v, same body %v", err, reported, string(out) == string(body))
	}
}

// conflictingStore makes the first conflicts Saves fail with a conflict,
// as when another replica saved first, and counts the Saves.
type conflictingStore struct {
	sessions.Store
	conflicts int
	saves     atomic.Int32
}

func (s *conflictingStore) Save(ctx context.Context, id string, state []byte, expect sessions.Version) (sessions.Version, error) {
	if int(s.saves.Add(1)) <= s.conflicts {
		return 0, &sessions.ConflictError{Op: "save", ID: id, Expect: expect, Stored: expect + 1}
	}
	return s.Store.Save(ctx, id, state, expect)
}

// TestConversationsConflict: a Save that loses the race is retried on
// the state loaded again, and the request sends what one process sends;
// one that keeps losing is refused with ErrConflicts.
func TestConversationsConflict(t *testing.T) {
	c := fleetCases(t)[2]
	want := reference(t, c, 1)
	store := &conflictingStore{Store: &sessions.Memory{}, conflicts: 1}
	cs := replica(t, c.total, store, &spill.Memory{})
	for i, b := range c.bodies[:6] {
		if got := guardOne(t, cs, c.d, c.name, b); got != want[i] {
			t.Fatalf("request %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
	if n := store.saves.Load(); n != 7 {
		t.Fatalf("%d saves for 6 requests and one conflict", n)
	}
	always := &conflictingStore{Store: &sessions.Memory{}, conflicts: 1 << 30}
	cs = replica(t, c.total, always, &spill.Memory{})
	_, _, err := cs.Guard(wire.WithConversation(context.Background(), c.name), c.d, c.bodies[0])
	if !errors.Is(err, wire.ErrConflicts) || !errors.Is(err, sessions.ErrConflict) || !errors.Is(err, wire.ErrSessionStore) {
		t.Fatalf("always conflicting: %v", err)
	}
	if n := always.saves.Load(); n != 8 {
		t.Fatalf("%d tries, want 8", n)
	}
}

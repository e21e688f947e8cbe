package storetest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pruneguard/pruneguard/sessions"
	"github.com/pruneguard/pruneguard/sessions/storetest"
)

// Check a store outside of a test, or from TestMain.
func ExampleTestStore() {
	err := storetest.TestStore(func() (sessions.Store, error) { return &sessions.Memory{}, nil })
	fmt.Println(err)
	// Output: <nil>
}

// lastWins keeps state but ignores the version expected: the last Save
// wins, as with a plain key-value store.
type lastWins struct {
	mu sync.Mutex
	m  sessions.Memory
}

func (s *lastWins) Load(ctx context.Context, id string) ([]byte, sessions.Version, error) {
	defer time.Sleep(20 * time.Microsecond) // as the round trip of a real store
	return s.m.Load(ctx, id)
}

func (s *lastWins) Save(ctx context.Context, id string, state []byte, _ sessions.Version) (sessions.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, v, _ := s.m.Load(ctx, id)
	return s.m.Save(ctx, id, state, v)
}

// deaf keeps state but ignores its contexts.
type deaf struct{ m *sessions.Memory }

func (d deaf) Load(_ context.Context, id string) ([]byte, sessions.Version, error) {
	return d.m.Load(context.Background(), id)
}

func (d deaf) Save(_ context.Context, id string, state []byte, expect sessions.Version) (sessions.Version, error) {
	return d.m.Save(context.Background(), id, state, expect)
}

// failures runs the suite on newStore and returns the names of the
// checks that failed.
func failures(t *testing.T, newStore func() sessions.Store) []string {
	err := storetest.TestStore(func() (sessions.Store, error) { return newStore(), nil })
	if err == nil {
		return nil
	}
	var names []string
	for _, line := range strings.Split(err.Error(), "\n") {
		if rest, ok := strings.CutPrefix(line, "storetest: "); ok {
			name, _, _ := strings.Cut(rest, ": ")
			names = append(names, name)
		}
	}
	return names
}

func TestSuiteCatchesBrokenStores(t *testing.T) {
	for _, c := range []struct {
		name     string
		newStore func() sessions.Store
		want     []string // checks that must fail, among others
	}{
		{"last writer wins", func() sessions.Store { return &lastWins{} }, []string{"create twice", "stale version", "racing creates", "racing saves", "counter"}},
		{"deaf to its context", func() sessions.Store { return deaf{&sessions.Memory{}} }, []string{"done context"}},
	} {
		got := strings.Join(failures(t, c.newStore), ", ")
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: check %q passed; failed: %s", c.name, w, got)
			}
		}
	}
	if got := failures(t, func() sessions.Store { return deaf{&sessions.Memory{}} }); len(got) != 1 {
		t.Errorf("a store deaf to its context fails %v, want the check of done contexts alone", got)
	}
}

func TestStressCatchesLostUpdates(t *testing.T) {
	s := &lastWins{}
	_, err := storetest.Stress(t.Context(), []sessions.Store{s, s, s}, storetest.StressConfig{Sessions: 8, Turns: 50, Padding: 16})
	if err == nil || !strings.Contains(err.Error(), "lost") {
		t.Fatalf("Stress on a store whose last Save wins: %v, want lost updates", err)
	}
}

func TestStressMemory(t *testing.T) {
	s := &sessions.Memory{}
	r, err := storetest.Stress(t.Context(), []sessions.Store{s, s}, storetest.StressConfig{Sessions: 16, Turns: 50})
	if err != nil {
		t.Fatal(err)
	}
	if want := 16 * 2 * 50; r.Attempts != want+r.Conflicts {
		t.Errorf("%d attempts, %d conflicts, want %d turns", r.Attempts, r.Conflicts, want)
	}
	t.Log(r)
}

// With a Context as the state, a store whose last Save wins fails the
// run too: a turn meets a state that lost its replica's earlier turn.
func TestContextStressCatchesLostUpdates(t *testing.T) {
	s := &lastWins{}
	_, err := storetest.Stress(t.Context(), []sessions.Store{s, s, s}, storetest.StressConfig{Sessions: 4, Turns: 30, Turner: storetest.ContextTurner{}})
	// Which a run meets first depends on the interleaving: a state that
	// lost a turn, or a session missing a replica's turns at the end.
	if err == nil || !strings.Contains(err.Error(), "lost") && !strings.Contains(err.Error(), "replicas, want") {
		t.Fatalf("Stress of Contexts on a store whose last Save wins: %v, want lost updates", err)
	}
}

// Replicas racing on Contexts in memory: every turn is applied once, and
// the Context stays within the guard's budget however many turns pass.
func TestContextStressMemory(t *testing.T) {
	s := &sessions.Memory{}
	r, err := storetest.Stress(t.Context(), []sessions.Store{s, s}, storetest.StressConfig{Sessions: 4, Turns: 20, Turner: storetest.ContextTurner{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r)
}

// A ContextTurner refuses a turn applied twice, and Check refuses a
// state that misses a turn.
func TestContextTurnerRefuses(t *testing.T) {
	var ct storetest.ContextTurner
	state, err := ct.Turn(nil, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ct.Turn(state, 0, 0, 0); err == nil {
		t.Error("turn 0 applied twice")
	}
	if _, err := ct.Turn(state, 0, 0, 2); err == nil {
		t.Error("turn 2 applied after turn 0")
	}
	if err := ct.Check(state, 0, 1, 2); err == nil {
		t.Error("a state of one turn passes for two")
	}
	if err := ct.Check(state, 0, 1, 1); err != nil {
		t.Error(err)
	}
}

// The work of one turn of a ContextTurner, without a store: a restore, a
// guarded turn and a save of a conversation that has had n turns.
func BenchmarkContextTurn(b *testing.B) {
	for _, n := range []int{20, 100, 400} {
		b.Run(fmt.Sprintf("after-%d", n), func(b *testing.B) {
			var ct storetest.ContextTurner
			var state []byte
			var err error
			for t := range n {
				if state, err = ct.Turn(state, 0, 0, t); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ct.Turn(state, 0, 0, n); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(state)), "state-bytes")
		})
	}
}

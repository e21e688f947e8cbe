package pruneguard

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ledgerRun is what a Context shows of its memories of pruned calls after
// a scripted session: the saved lists after every Apply, the errors of
// late results and the alerts of refetches.
type ledgerRun struct {
	gone    [][]savedGone
	cleared [][]savedPruned
	late    []string
	alerts  []RefetchAlert
}

// runLedgerScript plays one session, the same for a given seed: calls to
// a closed-world tool and to an unannotated one with arguments that repeat
// up to key order, pruned in batches of up to 9,000 units (some stubbed
// first), then late results and refetches.
func runLedgerScript(t *testing.T, seed uint64) ledgerRun {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	c := NewContext(Config{Resolver: ResolverFunc(func(Pointer) bool { return true })})
	closedTools(t, c, "x")
	require.NoError(t, c.RegisterTool(Tool{Name: "z", Annotations: Annotations{ReadOnlyHint: Bool(true)}}))
	argsOf := func(i int) string {
		a, b := i%5, i%3
		if i%2 == 0 {
			return fmt.Sprintf(`{"a":%d,"b":%d}`, a, b)
		}
		return fmt.Sprintf(`{ "b": %d, "a": %d }`, b, a)
	}
	toolOf := func(i int) string { return []string{"x", "z"}[i%7/5] }
	// The open-world tool's results are irreducible: spilled, they may go.
	// So is a negative result of the closed-world tool, which makes
	// results of one signature differ in class.
	spilled := func(i int, m Message) Message {
		if toolOf(i) == "z" || i%11 == 0 {
			m.Pointer = Pointer{Store: "s", Key: string(m.ID)}
		}
		if i%11 == 0 && len(m.Answers) > 0 {
			m.Facts = NegativeResult
		}
		return m
	}
	var run ledgerRun
	next := 0
	for round := range 4 {
		n := 500 + rng.IntN(9000)
		first := next
		for range n {
			id := fmt.Sprint(next)
			mustAppend(t, c,
				spilled(next, Message{ID: MessageID("a" + id), Calls: []Call{{ID: CallID("k" + id), Tool: toolOf(next), Args: []byte(argsOf(next))}}}),
				spilled(next, Message{ID: MessageID("r" + id), Answers: []CallID{CallID("k" + id)}, Content: []byte("out " + id)}),
			)
			next++
		}
		var stub []MessageID
		for i := first; i < next; i += 1 + rng.IntN(40) {
			stub = append(stub, MessageID(fmt.Sprint("r", i)))
		}
		d, err := c.Prune(Plan{Stub: stub})
		require.NoError(t, err)
		require.NoError(t, c.Apply(d))
		evict := make([]MessageID, 0, next-first)
		for i := first; i < next-rng.IntN(50); i++ {
			evict = append(evict, MessageID(fmt.Sprint("a", i)))
		}
		d, err = c.Prune(Plan{Evict: evict})
		require.NoError(t, err)
		require.Empty(t, d.Refused)
		require.NoError(t, c.Apply(d))
		require.Less(t, len(c.ledger.gone)+len(c.ledger.forgot), ledgerBound, "the ledger's queue is bounded")
		if round%2 == 1 {
			continue // the next round and the late results find the ledger queued
		}
		c.mu.Lock()
		c.settleGone()
		c.settleCleared()
		s := c.state()
		c.mu.Unlock()
		run.gone = append(run.gone, s.Gone)
		run.cleared = append(run.cleared, s.Cleared)
	}
	for range 200 {
		i := rng.IntN(next)
		err := c.Append(Message{ID: MessageID(fmt.Sprint("late", i)), Answers: []CallID{CallID(fmt.Sprint("k", i))}})
		switch {
		case errors.Is(err, ErrPrunedCall):
			run.late = append(run.late, "pruned")
		case errors.Is(err, ErrUnknownCall):
			run.late = append(run.late, "unknown")
		default:
			run.late = append(run.late, fmt.Sprint(err))
		}
	}
	for j := range 100 {
		i := rng.IntN(next)
		id := fmt.Sprint("again", j)
		mustAppend(t, c,
			Message{ID: MessageID("a" + id), Calls: []Call{{ID: CallID("k" + id), Tool: toolOf(i), Args: []byte(argsOf(i + 30))}}},
			Message{ID: MessageID("r" + id), Answers: []CallID{CallID("k" + id)}, Content: []byte("out " + fmt.Sprint(i))},
		)
	}
	run.alerts = c.TakeAlerts()
	return run
}

// The ledger defers hashing what Apply pruned; what the Context then
// shows (the calls and results it remembers, in order, late results
// refused or not, refetch alerts with their classes) is what writing
// each entry at once gives, including past the ledger's bound and past
// the memories' bound within one decision.
func TestLedgerWritesAsIfAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sessions of up to 36,000 units")
	}
	for _, seed := range []uint64{1, 2} {
		bound := ledgerBound
		ledgerBound = 1
		want := runLedgerScript(t, seed)
		ledgerBound = bound
		got := runLedgerScript(t, seed)
		require.Equal(t, len(want.gone), len(got.gone))
		for i := range want.gone {
			assert.Equal(t, want.gone[i], got.gone[i], "gone after Apply %d", i)
			assert.Equal(t, want.cleared[i], got.cleared[i], "cleared after Apply %d", i)
		}
		assert.Equal(t, want.late, got.late)
		assert.Equal(t, want.alerts, got.alerts)
		assert.NotEmpty(t, want.alerts)
		assert.Contains(t, want.late, "pruned")
		assert.Contains(t, want.late, "unknown")
		// A refetch of a closed-world result whose signature a negative
		// result shared reports the higher class.
		merged := false
		for _, a := range want.alerts {
			var i int
			_, err := fmt.Sscanf(string(a.Pruned), "r%d", &i)
			require.NoError(t, err)
			merged = merged || a.Tool == "x" && i%11 != 0 && a.Class == Irreducible
		}
		assert.True(t, merged)
	}
}

// One decision that prunes more calls than the Context remembers keeps
// the last ones: a late result for one of them is ErrPrunedCall, for one
// before them ErrUnknownCall.
func TestOneDecisionPrunesMoreThanRemembered(t *testing.T) {
	c := NewContext(Config{})
	closedTools(t, c, "x")
	n := recentBound + 10
	evict := make([]MessageID, 0, n)
	for i := range n {
		id := fmt.Sprint(i)
		mustAppend(t, c,
			Message{ID: MessageID("a" + id), Calls: []Call{{ID: CallID("k" + id), Tool: "x"}}},
			Message{ID: MessageID("r" + id), Answers: []CallID{CallID("k" + id)}},
		)
		evict = append(evict, MessageID("a"+id))
	}
	d, err := c.Prune(Plan{Evict: evict})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	assert.Equal(t, 0, c.Len())
	assert.NotEmpty(t, c.ledger.gone, "the decision's calls wait in the ledger")
	assert.ErrorIs(t, c.Append(Message{ID: "late", Answers: []CallID{"k9"}}), ErrUnknownCall, "pruned before the last ones")
	assert.Empty(t, c.ledger.gone, "the next message writes the ledger out")
	assert.Empty(t, c.ledger.forgot)
	assert.ErrorIs(t, c.Append(Message{ID: "late", Answers: []CallID{"k10"}}), ErrPrunedCall)
	assert.ErrorIs(t, c.Append(Message{ID: "late", Answers: []CallID{CallID(fmt.Sprint("k", n-1))}}), ErrPrunedCall)
}

// within reports whether b's bytes lie inside one of chunks.
func within(b []byte, chunks [][]byte) bool {
	if len(b) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	for _, ch := range chunks {
		if cap(ch) == 0 {
			continue
		}
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(ch[:1])))
		if p >= lo && p < lo+uintptr(cap(ch)) {
			return true
		}
	}
	return false
}

// A text compaction does not leave the old chunks to the ledger: what the
// queue refers to moves into a buffer of its own, unchanged.
func TestLedgerLetsTheOldTextGo(t *testing.T) {
	c := NewContext(Config{})
	closedTools(t, c, "x")
	var evict []MessageID
	for i := range 3000 {
		id := fmt.Sprint(i)
		mustAppend(t, c,
			Message{ID: MessageID("a" + id), Calls: []Call{{ID: CallID("k" + id), Tool: "x", Args: []byte(`{"n":` + id + `}`)}}},
			Message{ID: MessageID("r" + id), Answers: []CallID{CallID("k" + id)}, Content: []byte(strings.Repeat("z", 200))},
		)
		if i < 2900 {
			evict = append(evict, MessageID("a"+id))
		}
	}
	old := slices.Clone(c.text.chunks)
	d, err := c.Prune(Plan{Evict: evict})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	require.Len(t, c.ledger.gone, 2900)
	require.Len(t, c.ledger.forgot, 2900)
	for i, e := range c.ledger.gone {
		require.Equal(t, fmt.Sprint("k", i), string(e.id))
		require.False(t, within(e.id, old), "gone %d refers to an old chunk", i)
	}
	for i, e := range c.ledger.forgot {
		require.Equal(t, fmt.Sprintf(`{"n":%d}`, i), string(e.args))
		require.False(t, within(e.args, old), "forgot %d refers to an old chunk", i)
	}
}

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
	gone    [][]*savedGone
	cleared [][]*savedPruned
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
				spilled(next, Message{ID: MessageID("a" + id), Role: RoleAssistant, Calls: []Call{{ID: CallID("k" + id), Tool: toolOf(next), Args: []byte(argsOf(next))}}}),
				spilled(next, Message{ID: MessageID("r" + id), Answers: []CallID{CallID("k" + id)}, Content: []byte("out " + id)}),
			)
			next++
		}
		// The model has read the round's results before the check.
		mustAppend(t, c, Message{ID: MessageID(fmt.Sprint("read", round)), Role: RoleAssistant, Content: []byte("read")})
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
		run.gone = append(run.gone, s.Memory.PrunedCalls)
		run.cleared = append(run.cleared, s.Memory.PrunedResults)
	}
	for range 200 {
		i := rng.IntN(next)
		err := c.Append(Message{ID: MessageID(fmt.Sprint("late", i)), Answers: []CallID{CallID(fmt.Sprint("k", i))}})
		run.late = append(run.late, lateOutcome(err))
	}
	for j := range 100 {
		i := rng.IntN(next)
		id := fmt.Sprint("again", j)
		mustAppend(t, c,
			Message{ID: MessageID("a" + id), Role: RoleAssistant, Calls: []Call{{ID: CallID("k" + id), Tool: toolOf(i), Args: []byte(argsOf(i + 30))}}},
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
	for i := range n + 1 {
		id := fmt.Sprint(i)
		mustAppend(t, c,
			Message{ID: MessageID("a" + id), Role: RoleAssistant, Calls: []Call{{ID: CallID("k" + id), Tool: "x"}}},
			Message{ID: MessageID("r" + id), Answers: []CallID{CallID("k" + id)}},
		)
		if i < n {
			evict = append(evict, MessageID("a"+id)) // the model read it before its next call
		}
	}
	d, err := c.Prune(Plan{Evict: evict})
	require.NoError(t, err)
	require.Empty(t, d.Refused)
	require.NoError(t, c.Apply(d))
	assert.Equal(t, 2, c.Len(), "the last round, unread")
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
			Message{ID: MessageID("a" + id), Role: RoleAssistant, Calls: []Call{{ID: CallID("k" + id), Tool: "x", Args: []byte(`{"n":` + id + `}`)}}},
			Message{ID: MessageID("r" + id), Answers: []CallID{CallID("k" + id)}, Content: []byte(strings.Repeat("z", 200))},
		)
		if i < 2900 {
			evict = append(evict, MessageID("a"+id))
		}
	}
	old := slices.Clone(c.text.Chunks())
	// The records of the messages gone are compacted, and the text
	// with them, by the Apply after the one that leaves them dead.
	d, err := c.Prune(Plan{Evict: evict[:2000]})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	d, err = c.Prune(Plan{Evict: evict[2000:]})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	require.Len(t, c.ledger.gone, 2900)
	require.Len(t, c.ledger.forgot, 2900)
	for i, id := range c.ledger.gone {
		require.Equal(t, fmt.Sprint("k", i), string(id))
		require.False(t, within(id, old), "gone %d refers to an old chunk", i)
	}
	for i, e := range c.ledger.forgot {
		require.Equal(t, fmt.Sprintf(`{"n":%d}`, i), string(e.args))
		require.False(t, within(e.args, old), "forgot %d refers to an old chunk", i)
	}
}

// queuedCall and queuedResult are what the ledger queues for a pruned
// call and a pruned result, as it would write them.
type queuedCall struct {
	ID        string
	Abandoned bool
}

type queuedResult struct {
	Tool    string
	Args    string
	ArgsNil bool
	Was     prunedResult
}

// queued is what a ledger queues, in the order it would write it.
type queued struct {
	Calls   []queuedCall
	Results []queuedResult
}

// ledgerQueue returns what c's ledger queues.
func ledgerQueue(c *Context) queued {
	l := &c.ledger
	var calls []queuedCall
	for j := range l.gone {
		i := (l.goneAt + j) % len(l.gone)
		calls = append(calls, queuedCall{string(l.gone[i]), l.wasAbandoned(i)})
	}
	var results []queuedResult
	ds := l.decisions
	for j := range l.forgot {
		for len(ds) > 1 && ds[1].from <= j {
			ds = ds[1:]
		}
		e := &l.forgot[j]
		results = append(results, queuedResult{
			Tool: c.tools[e.tool].t.Name, Args: string(e.args), ArgsNil: e.args == nil,
			Was: e.forgotten(ds[0].d),
		})
	}
	return queued{calls, results}
}

// severalRun is what a Context shows after three decisions queued
// together, across a text compaction, and the ledger's queue before it
// was written.
type severalRun struct {
	queue   queued
	gone    []*savedGone
	cleared []*savedPruned
	alerts  []RefetchAlert
	late    []string
}

// runSeveralDecisions stubs some results, evicts most units (those
// results again among them, and calls abandoned), and stubs more, with no
// message between the decisions, so that the ledger queues what three
// decisions pruned; the evictions leave enough text for a compaction.
func runSeveralDecisions(t *testing.T) severalRun {
	t.Helper()
	c := NewContext(Config{Resolver: ResolverFunc(func(Pointer) bool { return true })})
	closedTools(t, c, "x", "y")
	pad := strings.Repeat("z", 1000)
	negative := func(i int) bool { return i < 400 && i%9 == 1 && i%2 == 1 }
	// The units evicted share 40 signatures, none with a result left.
	argsOf := func(i int) []byte {
		switch {
		case i%7 == 3:
			return nil
		case i < 400:
			return []byte(fmt.Sprintf(`{"n":%d}`, i%40))
		}
		return []byte(fmt.Sprintf(`{"n":%d}`, i))
	}
	var abandoned []CallID
	for i := range 600 {
		id := fmt.Sprint(i)
		a := Message{ID: MessageID("a" + id), Role: RoleAssistant, Calls: []Call{{ID: CallID("k" + id), Tool: []string{"x", "y"}[i%2], Args: argsOf(i)}}}
		if i%10 == 0 {
			a.Calls = append(a.Calls, Call{ID: CallID("lost" + id), Tool: "x", Args: []byte(`{}`)})
			abandoned = append(abandoned, CallID("lost"+id))
		}
		m := Message{ID: MessageID("r" + id), Answers: []CallID{CallID("k" + id)}, Content: []byte(pad + id)}
		if negative(i) {
			// A signature's classes differ; spilled, the result may go.
			m.Facts, m.Pointer = NegativeResult, Pointer{Store: "s", Key: string(m.ID)}
		}
		mustAppend(t, c, a, m)
	}
	require.NoError(t, c.Abandon(abandoned...))
	ids := func(prefix string, from, to, step int) []MessageID {
		var out []MessageID
		for i := from; i < to; i += step {
			out = append(out, MessageID(fmt.Sprint(prefix, i)))
		}
		return out
	}
	apply := func(p Plan) {
		d, err := c.Prune(p)
		require.NoError(t, err)
		require.Empty(t, d.Refused)
		require.NoError(t, c.Apply(d))
	}
	apply(Plan{Stub: ids("r", 0, 100, 2)})
	old := slices.Clone(c.text.Chunks())
	apply(Plan{Evict: ids("a", 0, 400, 1)})
	apply(Plan{Stub: ids("r", 450, 500, 1)})

	c.mu.Lock()
	run := severalRun{queue: ledgerQueue(c)}
	if ledgerBound > 1 {
		require.Len(t, c.ledger.decisions, 3, "the queue holds what each decision pruned")
		for _, id := range c.ledger.gone {
			require.False(t, within(id, old), "a queued call refers to an old chunk")
		}
		for _, e := range c.ledger.forgot {
			require.False(t, e.args != nil && within(e.args, old), "a queued result refers to an old chunk")
		}
	}
	c.settleLedger()
	s := c.state()
	c.mu.Unlock()
	run.gone, run.cleared = s.Memory.PrunedCalls, s.Memory.PrunedResults
	for _, i := range []int{10, 20, 390, 5} {
		err := c.Append(Message{ID: MessageID(fmt.Sprint("late", i)), Answers: []CallID{CallID(fmt.Sprint("lost", i))}})
		run.late = append(run.late, lateOutcome(err))
	}
	for i := range 40 {
		id := fmt.Sprint("again", i)
		mustAppend(t, c,
			Message{ID: MessageID("a" + id), Role: RoleAssistant, Calls: []Call{{ID: CallID("k" + id), Tool: []string{"x", "y"}[i%2], Args: argsOf(i)}}},
			Message{ID: MessageID("r" + id), Answers: []CallID{CallID("k" + id)}, Content: []byte("new " + id)},
		)
	}
	run.alerts = c.TakeAlerts()
	return run
}

// A queue that holds results of several decisions, some stubbed, some
// stubbed and then evicted, and that a text compaction moved, writes
// what writing each at once writes; each entry names its message, class
// and hash from its decision's records.
func TestLedgerQueuesSeveralDecisions(t *testing.T) {
	bound := ledgerBound
	defer func() { ledgerBound = bound }()
	ledgerBound = 1
	want := runSeveralDecisions(t)
	ledgerBound = bound
	got := runSeveralDecisions(t)
	assert.Empty(t, want.queue.Calls, "with a bound of one the ledger writes through")
	assert.Empty(t, want.queue.Results)
	assert.Equal(t, want.gone, got.gone)
	assert.Equal(t, want.cleared, got.cleared)
	assert.Equal(t, want.alerts, got.alerts)
	assert.Equal(t, want.late, got.late)
	assert.NotEmpty(t, got.alerts)
	assert.Equal(t, []string{"abandoned", "abandoned", "abandoned", "unknown"}, got.late)

	// The queue, in order: 50 stubbed, 400 evicted, 50 stubbed.
	q := got.queue
	require.Len(t, q.Results, 500)
	require.Len(t, q.Calls, 400+40, "the calls of the units evicted, the abandoned ones among them")
	expect := func(j, i int, stubbed bool) {
		t.Helper()
		r := q.Results[j]
		assert.Equal(t, MessageID(fmt.Sprint("r", i)), r.Was.msg, "result %d", j)
		assert.Equal(t, stubbed, r.Was.stubbed, "result %d", j)
		assert.Equal(t, []string{"x", "y"}[i%2], r.Tool, "result %d", j)
		args := []byte(fmt.Sprintf(`{"n":%d}`, i%40))
		switch {
		case i%7 == 3:
			args = nil
		case i >= 400:
			args = []byte(fmt.Sprintf(`{"n":%d}`, i))
		}
		assert.Equal(t, string(args), r.Args, "result %d", j)
		assert.Equal(t, args == nil, r.ArgsNil, "result %d", j)
		class := Reconstructible
		if i < 400 && i%9 == 1 && i%2 == 1 {
			class = Irreducible
		}
		assert.Equal(t, class, r.Was.class, "result %d", j)
	}
	for j := range 50 {
		expect(j, 2*j, true)
		expect(450+j, 450+j, true)
	}
	for j := range 400 {
		expect(50+j, j, false)
	}
	n := 0
	for i := range 400 {
		assert.Equal(t, queuedCall{ID: fmt.Sprint("k", i)}, q.Calls[n])
		n++
		if i%10 == 0 {
			assert.Equal(t, queuedCall{ID: fmt.Sprint("lost", i), Abandoned: true}, q.Calls[n])
			n++
		}
	}
}

// A queue of more pruned calls than c.gone keeps holds only the last
// recentBound of them, in order, across decisions, and counts them all
// for its bound; written, c.gone holds what putting each would leave.
func TestLedgerQueuesTheLastCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a session of 6,000 units")
	}
	run := func() (*Context, queued) {
		c := NewContext(Config{})
		closedTools(t, c, "x")
		n := recentBound + 1904
		for i := range n {
			id := fmt.Sprint(i)
			a := Message{ID: MessageID("a" + id), Role: RoleAssistant, Calls: []Call{{ID: CallID("k" + id), Tool: "x"}}}
			if i%3 == 0 {
				a.Calls = append(a.Calls, Call{ID: CallID("lost" + id), Tool: "x"})
			}
			mustAppend(t, c, a, Message{ID: MessageID("r" + id), Answers: []CallID{CallID("k" + id)}})
		}
		mustAppend(t, c, Message{ID: "read", Role: RoleAssistant, Content: []byte("read")})
		var lost []CallID
		for i := 0; i < n; i += 3 {
			lost = append(lost, CallID(fmt.Sprint("lost", i)))
		}
		require.NoError(t, c.Abandon(lost...))
		for _, span := range [][2]int{{0, 1000}, {1000, 5000}, {5000, n}} {
			var evict []MessageID
			for i := span[0]; i < span[1]; i++ {
				evict = append(evict, MessageID(fmt.Sprint("a", i)))
			}
			d, err := c.Prune(Plan{Evict: evict})
			require.NoError(t, err)
			require.NoError(t, c.Apply(d))
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		q := ledgerQueue(c)
		c.settleLedger()
		return c, q
	}
	bound := ledgerBound
	defer func() { ledgerBound = bound }()
	ledgerBound = 1
	want, _ := run()
	ledgerBound = bound
	got, q := run()

	var all []queuedCall
	for i := range recentBound + 1904 {
		all = append(all, queuedCall{ID: fmt.Sprint("k", i)})
		if i%3 == 0 {
			all = append(all, queuedCall{ID: fmt.Sprint("lost", i), Abandoned: true})
		}
	}
	require.Greater(t, len(all), recentBound)
	assert.Equal(t, all[len(all)-recentBound:], q.Calls, "the last calls, in order")
	assert.Equal(t, want.state().Memory.PrunedCalls, got.state().Memory.PrunedCalls)
	assert.Zero(t, got.ledger.goneN)
	assert.Empty(t, got.ledger.gone)
	assert.ErrorIs(t, got.Append(Message{ID: "late0", Answers: []CallID{"k0"}}), ErrUnknownCall)
	assert.ErrorIs(t, got.Append(Message{ID: "late1", Answers: []CallID{CallID(fmt.Sprint("lost", recentBound+1901))}}), ErrAbandonedCall)
}

// The queue is written once it holds ledgerBound entries, counting every
// pruned call queued, also those the full queue of calls let go.
func TestLedgerBoundCountsEveryCall(t *testing.T) {
	bound := ledgerBound
	defer func() { ledgerBound = bound }()
	ledgerBound = 10000
	c := NewContext(Config{})
	closedTools(t, c, "x")
	evict := func(from, to int) {
		var ids []MessageID
		for i := from; i < to; i++ {
			ids = append(ids, MessageID(fmt.Sprint("a", i)))
		}
		d, err := c.Prune(Plan{Evict: ids})
		require.NoError(t, err)
		require.NoError(t, c.Apply(d))
	}
	for i := range 5050 {
		id := fmt.Sprint(i)
		mustAppend(t, c,
			Message{ID: MessageID("a" + id), Role: RoleAssistant, Calls: []Call{{ID: CallID("k" + id), Tool: "x"}}},
			Message{ID: MessageID("r" + id), Answers: []CallID{CallID("k" + id)}},
		)
	}
	mustAppend(t, c, Message{ID: "read", Role: RoleAssistant, Content: []byte("read")})
	evict(0, 4900)
	assert.Len(t, c.ledger.gone, recentBound, "the queue keeps the calls c.gone would keep")
	assert.Equal(t, 4900, c.ledger.goneN)
	assert.Len(t, c.ledger.forgot, 4900)
	evict(4900, 5050) // the 100th unit brings the queue to its bound
	assert.Equal(t, 50, c.ledger.goneN)
	assert.Len(t, c.ledger.gone, 50)
	assert.Len(t, c.ledger.forgot, 50)
	assert.ErrorIs(t, c.Append(Message{ID: "late", Answers: []CallID{"k4999"}}), ErrPrunedCall)
	assert.ErrorIs(t, c.Append(Message{ID: "late", Answers: []CallID{"k5049"}}), ErrPrunedCall)
	assert.ErrorIs(t, c.Append(Message{ID: "late", Answers: []CallID{"k900"}}), ErrUnknownCall)
}

// lateOutcome names what appending a late result gave: refused as
// pruned, abandoned or unknown, or another outcome as printed.
func lateOutcome(err error) string {
	switch {
	case errors.Is(err, ErrAbandonedCall):
		return "abandoned"
	case errors.Is(err, ErrPrunedCall):
		return "pruned"
	case errors.Is(err, ErrUnknownCall):
		return "unknown"
	}
	return fmt.Sprint(err)
}

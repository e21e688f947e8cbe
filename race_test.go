package pruneguard

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkClosedTranscript checks the structural invariants of a Context
// whose call ids are unique and that has settled: every result's call is
// present, every call has its result, units partition the transcript and
// the token counts add up.
func checkClosedTranscript(s state) error {
	var es invariantErrors
	calls := map[CallID]MessageID{}
	answered := map[CallID]MessageID{}
	total := 0
	for _, m := range s.Messages {
		total += m.Tokens
		for _, k := range m.Calls {
			calls[k.ID] = m.ID
		}
		for _, id := range m.Answers {
			if _, ok := calls[id]; !ok {
				es.add(kindBoundary, "result %s answers %s, whose call is not before it", m.ID, id)
			}
			answered[id] = m.ID
		}
	}
	for id, m := range calls {
		if _, ok := answered[id]; !ok && !slices.Contains(s.Pending, id) {
			es.add(kindBoundary, "call %s of %s has no result and is not pending", id, m)
		}
	}
	if total != s.Tokens {
		es.add(kindModel, "Tokens() = %d, messages sum to %d", s.Tokens, total)
	}
	seen := map[MessageID]bool{}
	unitTokens := 0
	for _, u := range s.Units {
		for _, id := range u.Messages {
			if seen[id] {
				es.add(kindModel, "message %s in two units", id)
			}
			seen[id] = true
		}
		unitTokens += u.Tokens
	}
	if len(seen) != len(s.Messages) || unitTokens != total {
		es.add(kindModel, "units cover %d messages and %d tokens; transcript %d and %d", len(seen), unitTokens, len(s.Messages), total)
	}
	return es.err()
}

// Streams write chunks and results land concurrently with budget checks,
// prunes, applies, snapshots and token reads. No write may find its
// message gone, every streamed message must end as the concatenation of
// its chunks, and the settled transcript must keep the invariants.
func TestRaceStreamsAndPrunes(t *testing.T) {
	var liveMu sync.Mutex
	live := map[Pointer]bool{}
	c := NewContext(Config{
		Boundary:  BoundaryRelaxed,
		Regen:     RegenDropUnsafe,
		TextClass: Reconstructible, // user turns may go
		Resolver:  ResolverFunc(func(p Pointer) bool { liveMu.Lock(); defer liveMu.Unlock(); return live[p] }),
	})
	require.NoError(t, c.RegisterTool(Tool{Name: "fetch", Output: Reconstructible}))
	require.NoError(t, c.RegisterTool(Tool{Name: "read_file", Annotations: Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}}))
	// Streamed results come from a tool with default annotations: their
	// outputs are irreducible, so the guard keeps them and they can be
	// compared with their chunks at the end.
	require.NoError(t, c.RegisterTool(Tool{Name: "submit"}))

	const writers, batches, chunks = 8, 25, 8
	var mu sync.Mutex
	want := map[MessageID][]byte{}
	var failures []error
	fail := func(err error) {
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
	}

	done := make(chan struct{})
	var wg, pw sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for b := range batches {
				p := fmt.Sprintf("w%db%d", w, b)
				if err := c.Append(Message{ID: MessageID(p + "u"), Role: RoleUser, Tokens: 40}); err != nil {
					fail(err)
					return
				}
				var calls []Call
				for i := range 1 + r.IntN(4) {
					tool := []string{"fetch", "read_file", "submit"}[r.IntN(3)]
					calls = append(calls, Call{ID: CallID(fmt.Sprintf("%sc%d", p, i)), Tool: tool})
				}
				if err := c.Append(Message{ID: MessageID(p + "a"), Role: RoleAssistant, Tokens: 30, Calls: calls}); err != nil {
					fail(err)
					return
				}
				// Results of the parallel batch arrive concurrently.
				var rw sync.WaitGroup
				for i, k := range calls {
					rw.Add(1)
					go func() {
						defer rw.Done()
						id := MessageID(fmt.Sprintf("%sr%d", p, i))
						if k.Tool != "submit" {
							if err := c.Append(Message{ID: id, Role: RoleTool, Tokens: 200, Answers: []CallID{k.ID}}); err != nil {
								fail(err)
							}
							return
						}
						head := []byte("{" + string(id) + ":")
						if err := c.Open(Message{ID: id, Role: RoleTool, Tokens: 1, Content: head, Answers: []CallID{k.ID}}); err != nil {
							fail(err)
							return
						}
						content := slices.Clone(head)
						for j := range chunks {
							chunk := []byte(fmt.Sprintf("%d,", j))
							if err := c.Write(id, chunk, 20); err != nil {
								fail(fmt.Errorf("chunk %d of %s: %w", j, id, err))
								return
							}
							content = append(content, chunk...)
						}
						if err := c.Close(id); err != nil {
							fail(err)
							return
						}
						mu.Lock()
						want[id] = content
						mu.Unlock()
					}()
				}
				rw.Wait()
			}
		}()
	}
	pruner := func(i int, body func(r *rand.Rand)) {
		pw.Add(1)
		go func() {
			defer pw.Done()
			r := rand.New(rand.NewPCG(uint64(100+i), 9))
			for {
				select {
				case <-done:
					return
				default:
				}
				body(r)
			}
		}()
	}
	guardOK := func(err error) {
		// A policy's snapshot may name messages another goroutine pruned
		// meanwhile: an input error, never anything else.
		if err != nil && !errors.Is(err, ErrInvalidInput) {
			fail(fmt.Errorf("guard: %w", err))
		}
	}
	var applied atomic.Int64
	pruner(0, func(*rand.Rand) {
		res, err := Guard{Budget: 1500, Policy: OldestFirst{Keep: 4}}.Check(c)
		applied.Add(int64(len(res.Decisions)))
		guardOK(err)
	})
	pruner(1, func(*rand.Rand) {
		res, err := Guard{Budget: 1500, Policy: LargestResultsFirst{Stub: true}}.Check(c)
		applied.Add(int64(len(res.Decisions)))
		guardOK(err)
	})
	pruner(2, func(r *rand.Rand) {
		es := c.Snapshot()
		if len(es) == 0 {
			return
		}
		var p Plan
		for range 1 + r.IntN(4) {
			p.Evict = append(p.Evict, es[r.IntN(len(es))].ID)
		}
		p.Split = SplitMode(r.IntN(3))
		d, err := c.Prune(p)
		if err != nil {
			if !errors.Is(err, ErrInvalidInput) && !errors.Is(err, ErrBoundary) && !errors.Is(err, ErrRegen) && !errors.Is(err, ErrDeferred) {
				fail(fmt.Errorf("prune: %w", err))
			}
			return
		}
		if err := c.Apply(d); err != nil && !errors.Is(err, ErrStaleDecision) {
			fail(fmt.Errorf("apply: %w", err))
		} else if err == nil {
			applied.Add(1)
		}
	})
	pruner(3, func(r *rand.Rand) {
		_ = c.Tokens()
		_ = c.Units()
		_ = c.Pending()
		_ = c.OpenMessages()
		_ = c.Tools()
		_ = c.Settled()
		liveMu.Lock()
		live[Pointer{"s", fmt.Sprint(r.IntN(3))}] = r.IntN(2) == 0
		liveMu.Unlock()
	})
	wg.Wait()
	close(done)
	pw.Wait()

	require.Empty(t, failures)
	assert.Positive(t, applied.Load(), "no decision was applied while streams ran")
	t.Logf("%d decisions applied concurrently", applied.Load())
	s := capture(c)
	assert.Empty(t, s.Pending)
	assert.Empty(t, s.Open)
	require.NoError(t, checkClosedTranscript(s))
	require.Len(t, want, len(slices.DeleteFunc(slices.Clone(s.Messages), func(m Message) bool { return want[m.ID] == nil })),
		"every streamed (irreducible) result stays")
	for id, content := range want {
		m, ok := c.Message(id)
		require.True(t, ok, "streamed message %s was pruned", id)
		assert.Equal(t, string(content), string(m.Content), "chunks of %s", id)
	}
	// Whatever the concurrent pruners did, the transcript can still be
	// pruned down safely once settled.
	res, err := Guard{Budget: 1}.Check(c)
	require.NoError(t, err)
	require.NoError(t, checkClosedTranscript(capture(c)))
	t.Logf("%d messages left, %d tokens, last check %v", len(c.Messages()), c.Tokens(), res.Outcome)
}

// A zero Context is documented as ready to use; read-side calls racing
// on it before any event must not write its maps concurrently.
func TestRaceZeroContext(t *testing.T) {
	c := new(Context)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Prune(Plan{}); err != nil {
				t.Error(err)
			}
			_ = c.Snapshot()
			_ = c.Tokens()
			if i == 0 {
				assert.NoError(t, c.Append(Message{ID: "m", Tokens: 1}))
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, c.Tokens())
}

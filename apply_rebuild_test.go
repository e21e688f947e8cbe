package pruneguard

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// indexesMatch checks every index that Apply either keeps up to date
// message by message or leaves to the compaction that follows against
// the messages held: by id, of results, of whole results, by size.
func indexesMatch(t *testing.T, c *Context, gone []MessageID) {
	t.Helper()
	results, whole, sized := []int32{}, []int32{}, []sizeKey{}
	for p := int32(0); p < c.msgs.Len(); p++ {
		x := c.msg(p)
		if x.flags&mDead != 0 {
			continue
		}
		q, ok := c.find(c.id(p))
		require.True(t, ok, "%s is held but not found by id", c.id(p))
		require.Equal(t, p, q)
		if x.ans == none {
			continue
		}
		results = append(results, p)
		if x.flags&mStubbed == 0 && !c.mem.stubRefused(p) {
			whole = append(whole, p)
			sized = append(sized, c.sizeKey(p))
		}
	}
	for _, id := range gone {
		_, ok := c.find(id)
		assert.False(t, ok, "%s left but is found by id", id)
	}
	all := func(n int, sel func(int) (int32, bool)) []int32 {
		out := make([]int32, 0, n)
		for i := range n {
			p, ok := sel(i)
			require.True(t, ok)
			out = append(out, p)
		}
		return out
	}
	assert.Equal(t, results, all(c.results.Len(), c.results.Select), "results")
	assert.Equal(t, whole, all(c.whole.Len(), c.whole.Select), "whole results")
	slices.SortFunc(sized, bySizeOrder)
	bySize := []sizeKey{}
	for i := range c.bySize.Len() {
		k, ok := c.bySize.Select(i)
		require.True(t, ok)
		bySize = append(bySize, k)
	}
	assert.Equal(t, sized, bySize, "results by size")
}

// A decision that leaves more messages gone than held takes them out of
// the indexes of results in a walk over each and leaves the rest to the
// compaction of the next Apply; one that evicts a large share of them
// takes them out in a pass over each index; a small one takes them out
// one by one. All leave the indexes as the messages held make them, and
// the next Apply compacts what the first left.
func TestApplyRebuildsTheIndexesOfALargeDecision(t *testing.T) {
	for _, tc := range []struct {
		name  string
		evict int // rounds evicted, of 1,000
	}{{"one by one", 20}, {"together", 300}, {"rebuilt", 700}} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewContext(Config{})
			closedTools(t, c, "x")
			for i := range 1000 {
				id := fmt.Sprint(i)
				mustAppend(t, c,
					Message{ID: MessageID("a" + id), Role: RoleAssistant, Tokens: 1, Calls: []Call{{ID: CallID("k" + id), Tool: "x", Args: []byte(`{"i":` + id + `}`)}}},
					Message{ID: MessageID("r" + id), Tokens: 10 + i%7, Answers: []CallID{CallID("k" + id)}, Content: []byte("result " + id)},
				)
			}
			// Some results stubbed before, some with their units.
			var stub []MessageID
			for i := 0; i < 1000; i += 9 {
				stub = append(stub, MessageID(fmt.Sprint("r", i)))
			}
			d, err := c.Prune(Plan{Stub: stub})
			require.NoError(t, err)
			require.NoError(t, c.Apply(d))
			before := c.compactions

			var evict, gone []MessageID
			for i := range tc.evict {
				evict = append(evict, MessageID(fmt.Sprint("a", i)))
				gone = append(gone, MessageID(fmt.Sprint("a", i)), MessageID(fmt.Sprint("r", i)))
			}
			d, err = c.Prune(Plan{Evict: evict, Stub: []MessageID{"r990"}})
			require.NoError(t, err)
			require.NoError(t, c.Apply(d))
			assert.Equal(t, before, c.compactions, "the compaction waits for the next Apply")
			assert.Equal(t, 2*(1000-tc.evict), c.Len())
			indexesMatch(t, c, gone)

			// The Context goes on: the largest whole result is found, a
			// result of a pruned call is refused, a prune evicts, and
			// its Apply compacts what the one before left.
			v, err := c.Prune(Plan{Evict: []MessageID{MessageID(fmt.Sprint("r", tc.evict+1))}})
			require.NoError(t, err)
			require.NoError(t, c.Apply(v))
			assert.Equal(t, tc.evict > 500, c.compactions > before, "compacted")
			indexesMatch(t, c, nil)
			assert.ErrorIs(t, c.Append(Message{ID: "late", Answers: []CallID{"k1"}}), ErrPrunedCall)
		})
	}
}

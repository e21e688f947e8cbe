package pruneguard

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pruneguard/pruneguard/internal/arena"
	"github.com/pruneguard/pruneguard/internal/hashindex"
)

// A decision's evictions that leave the indexes together leave them as
// taking them out one by one does: by id, by call id (a call whose id a
// later call took stays out), of results, of whole results and by size;
// and the Context goes on alike.
func TestApplyUnindexesTogetherAsOneByOne(t *testing.T) {
	defer func(b, h int) { batchShare, hashShare = b, h }(batchShare, hashShare)
	rapid.Check(t, func(rt *rapid.T) {
		rounds := rapid.IntRange(1, 60).Draw(rt, "rounds")
		type round struct {
			calls []string
			stub  bool
			big   bool // contents and arguments with slab chunks of their own
		}
		var script []round
		for i := range rounds {
			var r round
			for j := range rapid.IntRange(0, 3).Draw(rt, "calls") {
				id := fmt.Sprint("k", i, "_", j)
				if i > 0 && rapid.IntRange(0, 4).Draw(rt, "reuse") == 0 {
					id = fmt.Sprint("k", rapid.IntRange(0, i-1).Draw(rt, "of"), "_0")
				}
				if !slices.Contains(r.calls, id) {
					r.calls = append(r.calls, id)
				}
			}
			r.stub = rapid.IntRange(0, 3).Draw(rt, "stub") == 0
			r.big = rapid.IntRange(0, 5).Draw(rt, "big") == 0
			script = append(script, r)
		}
		var plan Plan
		for i := range rounds {
			switch rapid.IntRange(0, 4).Draw(rt, "evict") {
			case 0:
				plan.Evict = append(plan.Evict, MessageID(fmt.Sprint("u", i)))
			case 1:
				plan.Evict = append(plan.Evict, MessageID(fmt.Sprint("a", i)))
			case 2:
				if script[i].stub && len(script[i].calls) > 0 {
					plan.Stub = append(plan.Stub, MessageID(fmt.Sprint("r", i, "_0")))
				}
			}
		}
		run := func(share, hash int) *Context {
			batchShare, hashShare = share, hash
			c := NewContext(Config{TextClass: Reconstructible})
			closedTools(t, c, "x")
			for i, r := range script {
				a := Message{ID: MessageID(fmt.Sprint("a", i)), Role: RoleAssistant, Tokens: 2}
				pad := ""
				if r.big {
					pad = strings.Repeat(" ", arena.Large+1)
				}
				for _, id := range r.calls {
					a.Calls = append(a.Calls, Call{ID: CallID(id), Tool: "x", Args: []byte(`{"i":` + strconv.Itoa(i) + pad + `}`)})
				}
				ms := []Message{{ID: MessageID(fmt.Sprint("u", i)), Role: RoleUser, Tokens: 1, Content: []byte(pad)}, a}
				for j, id := range r.calls {
					ms = append(ms, Message{ID: MessageID(fmt.Sprint("r", i, "_", j)), Role: RoleTool, Tokens: 3 + (i*7+j)%11, Answers: []CallID{CallID(id)}, Content: []byte(pad)})
				}
				mustAppend(t, c, ms...)
			}
			// The model has read every round.
			mustAppend(t, c, Message{ID: "read", Role: RoleAssistant, Tokens: 1})
			d, err := c.Prune(plan)
			require.NoError(t, err)
			require.NoError(t, c.Apply(d))
			return c
		}
		// One by one; the indexes of results together and the hash
		// indexes one by one; all together.
		one := run(0, 0)
		together := run(1<<20, rapid.SampledFrom([]int{0, 1 << 20}).Draw(rt, "hash"))
		require.Equal(t, 0, one.compactions)
		require.Equal(t, 0, together.compactions)
		indexesMatch(t, one, plan.Evict)
		indexesMatch(t, together, plan.Evict)
		for _, c := range []*Context{one, together} {
			for _, ix := range []*hashindex.Index{&c.byID, &c.byCall} {
				if err := ix.Check(); err != nil {
					rt.Fatal(err)
				}
			}
		}
		calls := func(c *Context) map[string]int32 {
			m := map[string]int32{}
			for k := range c.byCall.All() {
				m[string(c.callID(k))] = k
			}
			return m
		}
		require.Equal(t, calls(one), calls(together), "by call id")
		require.Equal(t, ledgerQueue(one), ledgerQueue(together), "ledger")
		// Each goes on alike: a late result is refused or taken the same.
		for i := range rounds {
			for _, c := range []*Context{one, together} {
				c.settleLedger()
			}
			late := Message{ID: MessageID(fmt.Sprint("late", i)), Role: RoleTool, Tokens: 1, Answers: []CallID{CallID(fmt.Sprint("k", i, "_0"))}}
			require.Equal(t, fmt.Sprint(one.Append(late)), fmt.Sprint(together.Append(late)), "late result %d", i)
		}
		indexesMatch(t, one, nil)
		indexesMatch(t, together, nil)
	})
}

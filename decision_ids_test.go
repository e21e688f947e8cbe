package pruneguard

import (
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDecisionIDs: whatever the plan's order, duplicates or units named
// in part, a decision's ids are the messages' and units' ids in
// transcript order; it hands the plan's own strings out again exactly
// where the plan names the same message at the same place, and a unit's
// id is the string of its first message when the decision takes it.
func TestDecisionIDs(t *testing.T) {
	build := func() *Context {
		c := NewContext(Config{TextClass: Reconstructible})
		require.NoError(t, c.RegisterTool(Tool{Name: "read_file", Annotations: Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}}))
		for i := range 6 {
			require.NoError(t, c.Append(Message{ID: MessageID(fmt.Sprint("u", i)), Role: RoleUser, Content: []byte("ask")}))
			require.NoError(t, c.Append(Message{ID: MessageID(fmt.Sprint("a", i)), Role: RoleAssistant,
				Calls: []Call{{ID: CallID(fmt.Sprint("k", i)), Tool: "read_file", Args: []byte(`{}`)}, {ID: CallID(fmt.Sprint("j", i)), Tool: "read_file", Args: []byte(`{"x":1}`)}}}))
			require.NoError(t, c.Append(Message{ID: MessageID(fmt.Sprint("r", i)), Answers: []CallID{CallID(fmt.Sprint("k", i))}, Content: []byte("result one")}))
			require.NoError(t, c.Append(Message{ID: MessageID(fmt.Sprint("s", i)), Answers: []CallID{CallID(fmt.Sprint("j", i))}, Content: []byte("result two")}))
		}
		return c
	}
	// fresh gives ids that share no bytes with the Context's or any other.
	fresh := func(ids ...string) []MessageID {
		out := make([]MessageID, len(ids))
		for i, id := range ids {
			out[i] = MessageID(string(append([]byte(nil), id...)))
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		plan        Plan
		evict, unit []string
		stub        []string
		shared      []bool // per decision id: the plan's string
	}{
		{name: "in order", plan: Plan{Evict: fresh("u0", "a0", "r0", "s0", "a1", "r1", "s1")},
			evict: []string{"u0", "a0", "r0", "s0", "a1", "r1", "s1"}, unit: []string{"u0", "a0", "a1"},
			shared: []bool{true, true, true, true, true, true, true}},
		{name: "reversed", plan: Plan{Evict: fresh("s1", "r1", "a1", "u0")},
			evict: []string{"u0", "a1", "r1", "s1"}, unit: []string{"u0", "a1"},
			shared: []bool{false, false, false, false}},
		{name: "grown", plan: Plan{Evict: fresh("u1", "r2"), Split: SplitGrow},
			evict: []string{"u1", "a2", "r2", "s2"}, unit: []string{"u1", "a2"},
			shared: []bool{true, false, false, false}},
		{name: "duplicates", plan: Plan{Evict: fresh("u0", "u0", "u1")},
			evict: []string{"u0", "u1"}, unit: []string{"u0", "u1"},
			shared: []bool{true, false}},
		{name: "stubs", plan: Plan{Evict: fresh("u3"), Stub: fresh("r4", "s4")},
			evict: []string{"u3"}, stub: []string{"r4", "s4"}, unit: []string{"u3"},
			shared: []bool{true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := build()
			d, err := c.Prune(tc.plan)
			require.NoError(t, err)
			var ev, st []string
			for _, id := range d.Evict {
				ev = append(ev, string(id))
			}
			for _, id := range d.Stub {
				st = append(st, string(id))
			}
			assert.Equal(t, tc.evict, ev)
			assert.Equal(t, tc.stub, st)
			var us []string
			for _, r := range d.Records() {
				if !slices.Contains(us, string(r.Unit)) {
					us = append(us, string(r.Unit))
				}
			}
			if tc.stub != nil {
				// A stubbed result's unit is its call's.
				tc.unit = append(tc.unit, "a4")
			}
			assert.Equal(t, tc.unit, us)
			planData := map[*byte]bool{}
			for _, id := range tc.plan.Evict {
				planData[unsafe.StringData(string(id))] = true
			}
			for i, id := range d.Evict {
				assert.Equal(t, tc.shared[i], planData[unsafe.StringData(string(id))], "%s: the plan's string", id)
			}
			// A unit whose first message the decision evicts has that
			// message's string for its id.
			for _, u := range d.Units {
				if k := slices.Index(d.Evict, MessageID(u)); k >= 0 {
					assert.Equal(t, unsafe.StringData(string(d.Evict[k])), unsafe.StringData(string(u)), "unit %s", u)
				}
			}
			require.NoError(t, c.Apply(d))
		})
	}
}

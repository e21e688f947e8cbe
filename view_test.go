package pruneguard

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func ids[T any](seq func(func(T) bool), id func(T) string) []string {
	var out []string
	for x := range seq {
		out = append(out, id(x))
	}
	return out
}

func entryID(e Entry) string { return string(e.ID) }
func unitID(u Unit) string   { return string(u.ID) }

func TestViewWalks(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 50, 70, 50, 70)
	v := c.View()
	assert.Equal(t, []string{"sys", "u0", "a0", "a1", "a2", "a3"}, ids(v.Units(), unitID))
	assert.Equal(t, []string{"r3", "a3", "r2", "a2", "r1", "a1", "r0", "a0", "u0", "sys"}, ids(v.Newest(), entryID))
	assert.Equal(t, []string{"r3", "r2", "r1", "r0"}, ids(v.Results(), entryID))
	assert.Equal(t, []string{"r1", "r3", "r0", "r2"}, ids(v.Largest(), entryID), "ties oldest first")

	d, err := c.Prune(Plan{Stub: []MessageID{"r1"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	v = c.View()
	assert.Equal(t, []string{"r3", "r2", "r1", "r0"}, ids(v.Results(), entryID), "stubbed results are tool uses still")
	assert.Equal(t, []string{"r3", "r2", "r0"}, ids(v.WholeResults(), entryID))
	assert.Equal(t, []string{"r3", "r0", "r2"}, ids(v.Largest(), entryID))

	v.Hide("a2", "u0")
	assert.True(t, v.Hidden("a2"))
	assert.Equal(t, []string{"sys", "a0", "a1", "a3"}, ids(v.Units(), unitID))
	assert.Equal(t, []string{"r3", "r1", "r0"}, ids(v.Results(), entryID))
	var snap []string
	for _, e := range v.Snapshot() {
		snap = append(snap, string(e.ID))
	}
	assert.Equal(t, []string{"sys", "a0", "r0", "a1", "r1", "a3", "r3"}, snap)
	u, ok := v.Unit("a2")
	require.True(t, ok, "Unit answers for hidden units too")
	assert.Equal(t, []MessageID{"a2", "r2"}, u.Messages)
	_, ok = v.Unit("r2")
	assert.False(t, ok, "r2 names no unit")

	var zero View
	assert.Empty(t, ids(zero.Units(), unitID))
	assert.Empty(t, ids(zero.Largest(), entryID))
	assert.Empty(t, zero.Snapshot())
	assert.Zero(t, zero.Tokens())
}

// A walk ends when the Context changes shape under it, and goes on over
// messages appended meanwhile.
func TestViewWalkStopsWhenTheContextChanges(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 10, 20, 30)
	v := c.View()
	var seen []string
	for u := range v.Units() {
		seen = append(seen, string(u.ID))
		if u.ID == "u0" {
			mustAppend(t, c, Message{ID: "late", Tokens: 1})
		}
	}
	assert.Equal(t, []string{"sys", "u0", "a0", "a1", "a2", "late"}, seen)

	seen = nil
	for u := range c.View().Units() {
		seen = append(seen, string(u.ID))
		if u.ID == "u0" {
			d, err := c.Prune(Plan{Evict: []MessageID{"a2"}})
			require.NoError(t, err)
			require.NoError(t, c.Apply(d))
		}
	}
	assert.Equal(t, []string{"sys", "u0"}, seen)
}

// The walks of a View agree with a snapshot of the Context, whatever
// events and prunes built it.
func TestViewMatchesTheSnapshot(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newPropHarness(rapidSource{rt}, pruneOps, 0)
		if err := h.run(rapid.IntRange(1, 150).Draw(rt, "steps")); err != nil {
			rt.Fatal(err)
		}
		c := h.c
		v := c.View()
		es := c.Snapshot()
		var units, newest, res, whole []string
		seen := map[UnitID]bool{}
		for _, e := range es {
			if !seen[e.Unit] {
				seen[e.Unit] = true
				units = append(units, string(e.Unit))
			}
		}
		for _, e := range slices.Backward(es) {
			newest = append(newest, string(e.ID))
			if e.Result {
				res = append(res, string(e.ID))
				if !e.Stubbed {
					whole = append(whole, string(e.ID))
				}
			}
		}
		var rs []Entry
		for _, e := range es {
			if e.Result && !e.Stubbed {
				rs = append(rs, e)
			}
		}
		slices.SortStableFunc(rs, func(a, b Entry) int { return b.Tokens - a.Tokens })
		largest := ids(slices.Values(rs), entryID)
		check := func(name string, got, want []string) {
			if !slices.Equal(got, want) {
				rt.Fatalf("%s: view %v, snapshot %v", name, got, want)
			}
		}
		check("units", ids(v.Units(), unitID), units)
		check("newest", ids(v.Newest(), entryID), newest)
		check("results", ids(v.Results(), entryID), res)
		check("whole results", ids(v.WholeResults(), entryID), whole)
		check("largest", ids(v.Largest(), entryID), largest)
		for k := 1; k <= len(res)+1; k++ {
			b := v.newestResult(k)
			if (b == none) != (k > len(res)) || b != none && string(c.id(b)) != res[k-1] {
				rt.Fatalf("newestResult(%d) = %v, results %v", k, b, res)
			}
		}
	})
}

// Without Exclude, KeepLastToolUses finds the kept uses in logarithmic
// time; with an Exclude list that names no tool in use it walks them.
// Both ways give the same plan.
func TestKeepLastToolUsesBothWays(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newPropHarness(rapidSource{rt}, pruneOps, 0)
		if err := h.run(rapid.IntRange(1, 150).Draw(rt, "steps")); err != nil {
			rt.Fatal(err)
		}
		k := KeepLastToolUses{Keep: rapid.IntRange(0, 6).Draw(rt, "keep"), Stub: rapid.Bool().Draw(rt, "stub"), MinTokens: rapid.IntRange(0, 50).Draw(rt, "min")}
		fast := k.Propose(h.c.View(), 1)
		k.Exclude = []string{"no_such_tool"}
		walked := k.Propose(h.c.View(), 1)
		if fmt.Sprint(fast) != fmt.Sprint(walked) {
			rt.Fatalf("without Exclude %v, with %v", fast, walked)
		}
	})
}

func TestPolicyAdapters(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 10, 20)
	modelReads(t, c, "read")
	var got []Entry
	p := PolicyFunc(func(es []Entry, need int) Plan {
		got = es
		return Plan{Evict: []MessageID{es[len(es)-1].ID}}
	})
	v := c.View()
	v.Hide("a1", "read")
	plan := p.Propose(v, 5)
	require.Len(t, got, 4, "the snapshot leaves the hidden unit out")
	assert.Equal(t, []MessageID{"r0"}, plan.Evict)

	both := ViewFunc(func(v *View, need int) Plan {
		p := LargestResultsFirst{Stub: true, MinTokens: 15}.Propose(v, need)
		if p.Empty() {
			p = OldestFirst{}.Propose(v, need)
		}
		return p
	})
	assert.Equal(t, []MessageID{"r1"}, both.Propose(c.View(), 5).Stub)
	d, err := c.Prune(Plan{Stub: []MessageID{"r1"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	assert.Equal(t, Plan{Evict: []MessageID{"u0"}}, both.Propose(c.View(), 5), "nothing left to stub: oldest first")
}

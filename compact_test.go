package pruneguard

import (
	"slices"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/pruneguard/pruneguard/internal/btree"
	"github.com/pruneguard/pruneguard/internal/hashindex"
)

// A compaction of a random Context leaves every index as building it
// again from the messages held would, even one that lost track: by id, by call id (the latest call
// with each id, renumbered, while a message names it), of results, of
// whole results and by size, with results refused a stub out of the
// last two.
func TestCompactIndexesMatchARebuild(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := NewContext(Config{TextClass: Reconstructible, Regen: RegenDropUnsafe})
		if err := c.RegisterTool(Tool{Name: "x", Annotations: Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}}); err != nil {
			rt.Fatal(err)
		}
		rounds := rapid.SampledFrom([]int{3, 40, 400}).Draw(rt, "rounds")
		var irreducible Plan // results the gates refuse to stub
		for i := range rounds {
			n := strconv.Itoa(i)
			a := Message{ID: MessageID("a" + n), Role: RoleAssistant, Tokens: 5}
			ms := []Message{{ID: MessageID("u" + n), Role: RoleUser, Tokens: rapid.IntRange(0, 30).Draw(rt, "ut")}}
			for j := range rapid.IntRange(0, 3).Draw(rt, "calls") {
				a.Calls = append(a.Calls, Call{ID: CallID("k" + n + "_" + strconv.Itoa(j)), Tool: "x"})
			}
			ms = append(ms, a)
			for _, k := range a.Calls {
				r := Message{ID: MessageID("r" + string(k.ID)), Role: RoleTool, Tokens: rapid.IntRange(0, 9).Draw(rt, "rt"), Answers: []CallID{k.ID}}
				if rapid.IntRange(0, 8).Draw(rt, "irreducible") == 0 {
					r.Class = Irreducible
					irreducible.Stub = append(irreducible.Stub, r.ID)
				}
				ms = append(ms, r)
			}
			for _, m := range ms {
				if err := c.Append(m); err != nil {
					rt.Fatal(err)
				}
			}
		}
		// Some results refused a stub, as a guard remembers them.
		d, err := c.Prune(irreducible)
		if err != nil || len(d.Refused) != len(irreducible.Stub) {
			rt.Fatalf("stubs refused: %v, %v", d, err)
		}
		if added, _ := c.remember(nil, d.Refused); added != len(irreducible.Stub) {
			rt.Fatalf("%d stub refusals remembered of %d", added, len(irreducible.Stub))
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		// Some results stubbed, some counted again.
		for p := int32(0); p < c.msgs.Len(); p++ {
			if c.msg(p).ans == none {
				continue
			}
			refused := c.mem.stubRefused(p)
			switch rapid.IntRange(0, 8).Draw(rt, "result") {
			case 0:
				if !refused {
					c.stub(p)
				}
			case 2:
				c.bySize.Delete(c.sizeKey(p))
				c.setTokens(p, c.tokensOf(p)+1)
				if !refused && c.msg(p).flags&mStubbed == 0 {
					c.bySize.Insert(c.sizeKey(p))
				}
			case 3:
				// An index that lost track of a result, or holds it
				// under a count it no longer has: a rebuild files it
				// as it is.
				if c.bySize.Delete(c.sizeKey(p)) && rapid.Bool().Draw(rt, "stale") {
					c.bySize.Insert(sizeKey{c.msg(p).tokens + 7, p})
				}
			}
		}
		// Units leave: first one by one out of the indexes, then as a
		// decision followed by a compaction leaves them.
		for _, unindex := range []bool{true, false} {
			for u := c.firstUnit(); u != none; {
				next := c.unit(u).next
				if rapid.IntRange(0, 2).Draw(rt, "evict") == 0 {
					for c.unit(u).head != none {
						c.remove(c.unit(u).head, unindex, unindex)
					}
				}
				u = next
			}
		}
		// What a rebuild would file, by id.
		byID, byCall := map[string]int32{}, map[string]int32{}
		var live int32
		for p := int32(0); p < c.msgs.Len(); p++ {
			if c.msg(p).flags&mDead == 0 {
				byID[string(c.msgID(p))] = live
				live++
			}
		}
		cm := make([]int32, c.calls.Len())
		var kept int32
		for k := range cm {
			cm[k] = none
			if c.callLive(int32(k)) {
				cm[k] = kept
				kept++
			}
		}
		for k := range c.byCall.All() {
			// A call whose caller left is out, as remove takes it out
			// when it unindexes.
			if cm[k] == none {
				continue
			}
			if r := c.call(k); r.caller == none || c.msg(r.caller).flags&mDead == 0 {
				byCall[string(c.callID(k))] = cm[k]
			}
		}
		c.compact()
		for name, want := range map[string]struct {
			ix  *hashindex.Index
			ids map[string]int32
		}{"by id": {&c.byID, byID}, "by call": {&c.byCall, byCall}} {
			if want.ix.Len() != len(want.ids) {
				rt.Fatalf("%s: %d ids, a rebuild files %d", name, want.ix.Len(), len(want.ids))
			}
			if err := want.ix.Check(); err != nil {
				rt.Fatalf("%s: %v", name, err)
			}
			for id, r := range want.ids {
				if got, ok := want.ix.Find(id); !ok || got != r {
					rt.Fatalf("%s: find(%s) = %d %v, a rebuild gives %d", name, id, got, ok, r)
				}
			}
		}
		var results, whole []int32
		var sized []sizeKey
		for p := int32(0); p < c.msgs.Len(); p++ {
			if x := c.msg(p); x.ans != none {
				results = append(results, p)
				if x.flags&mStubbed == 0 && !c.mem.stubRefused(p) {
					whole = append(whole, p)
					sized = append(sized, c.sizeKey(p))
				}
			}
		}
		slices.SortFunc(sized, bySizeOrder)
		walk := func(tr *btree.Tree[int32]) (out []int32) {
			tr.Each(func(p int32) { out = append(out, p) })
			return out
		}
		var bySize []sizeKey
		c.bySize.Each(func(k sizeKey) { bySize = append(bySize, k) })
		if !slices.Equal(walk(&c.results), results) || c.results.Len() != len(results) {
			rt.Fatalf("results %v, a rebuild files %v", walk(&c.results), results)
		}
		if !slices.Equal(walk(&c.whole), whole) || c.whole.Len() != len(whole) {
			rt.Fatalf("whole results %v, a rebuild files %v", walk(&c.whole), whole)
		}
		if !slices.Equal(bySize, sized) || c.bySize.Len() != len(sized) {
			rt.Fatalf("by size %v, a rebuild files %v", bySize, sized)
		}
	})
}

// A compaction after messages left without being unindexed leaves the
// index by call id as taking them out one by one would have: a call
// whose caller left is out of it, unless its id names a later call, and
// a call named only by its result stays while the result is held.
func TestCompactUnindexesCallsAsRemoveDoes(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		type step struct {
			calls []string // call ids of the assistant message
			done  []bool   // whether each call is answered
		}
		rounds := rapid.IntRange(1, 300).Draw(rt, "rounds")
		var script []step
		used := 0
		for i := range rounds {
			var st step
			for j := range rapid.IntRange(0, 3).Draw(rt, "calls") {
				id := "k" + strconv.Itoa(i) + "_" + strconv.Itoa(j)
				if used > 0 && rapid.IntRange(0, 3).Draw(rt, "reuse") == 0 {
					// An id made before, answered by then: the later
					// call takes it.
					id = "k" + strconv.Itoa(rapid.IntRange(0, used-1).Draw(rt, "of")) + "_0"
				}
				if !slices.Contains(st.calls, id) {
					st.calls = append(st.calls, id)
					st.done = append(st.done, rapid.IntRange(0, 9).Draw(rt, "open") > 0 || i < rounds-1)
				}
			}
			if len(st.calls) > 0 && st.calls[0] == "k"+strconv.Itoa(i)+"_0" {
				used = i + 1
			}
			script = append(script, st)
		}
		build := func() *Context {
			c := NewContext(Config{Boundary: BoundaryRelaxed, TextClass: Reconstructible})
			if err := c.RegisterTool(Tool{Name: "x", Annotations: Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}}); err != nil {
				rt.Fatal(err)
			}
			for i, st := range script {
				n := strconv.Itoa(i)
				a := Message{ID: MessageID("a" + n), Role: RoleAssistant, Tokens: 5}
				for _, id := range st.calls {
					a.Calls = append(a.Calls, Call{ID: CallID(id), Tool: "x"})
				}
				ms := []Message{{ID: MessageID("u" + n), Role: RoleUser, Tokens: 3}, a}
				for j, id := range st.calls {
					if st.done[j] {
						ms = append(ms, Message{ID: MessageID("r" + n + "_" + strconv.Itoa(j)), Role: RoleTool, Tokens: 7, Answers: []CallID{CallID(id)}})
					}
				}
				for _, m := range ms {
					if err := c.Append(m); err != nil {
						rt.Fatal(err)
					}
				}
			}
			return c
		}
		old, now := build(), build()
		old.mu.Lock()
		defer old.mu.Unlock()
		now.mu.Lock()
		defer now.mu.Unlock()
		// Messages leave, callers without their results among them: one
		// by one out of the indexes from old, left to the compaction from
		// now. Twice, so that calls named only by their results meet a
		// second compaction.
		for range 2 {
			for p := int32(0); p < old.msgs.Len(); p++ {
				if old.msg(p).flags&mDead == 0 && rapid.IntRange(0, 2).Draw(rt, "leave") == 0 {
					old.remove(p, true, true)
					now.remove(p, false, false)
				}
			}
			old.compact()
			now.compact()
			if err := now.byCall.Check(); err != nil {
				rt.Fatal(err)
			}
			want := map[string]int32{}
			for k := range old.byCall.All() {
				want[string(old.callID(k))] = k
			}
			if now.byCall.Len() != len(want) {
				rt.Fatalf("%d call ids filed, removing one by one files %d", now.byCall.Len(), len(want))
			}
			for id, k := range want {
				if got, ok := now.byCall.Find(id); !ok || got != k {
					rt.Fatalf("find(%s) = %d %v, removing one by one gives %d", id, got, ok, k)
				}
			}
		}
	})
}

// checkUnits checks the list of units after a compaction: the units are
// the records 0 to n-1 in the order of the list, linked both ways, and
// each member names its unit.
func checkUnits(rt *rapid.T, c *Context) {
	prev := none
	v := int32(0)
	for u := c.firstUnit(); u != none; u = c.unit(u).next {
		if u != v {
			rt.Fatalf("unit %d at place %d of the list", u, v)
		}
		if c.unit(u).prev != prev {
			rt.Fatalf("unit %d links back to %d, not %d", u, c.unit(u).prev, prev)
		}
		for p := range c.members(u) {
			if c.msg(p).unit != u {
				rt.Fatalf("message %d of unit %d names unit %d", p, u, c.msg(p).unit)
			}
		}
		prev = u
		v++
	}
	if v != c.units.Len() || c.utail != prev {
		rt.Fatalf("%d units listed ending at %d, arena of %d ending at %d", v, prev, c.units.Len(), c.utail)
	}
}

// unitsOrdered reports whether the list of units runs in the order of
// their records.
func unitsOrdered(c *Context) bool {
	last := none
	for u := c.firstUnit(); u != none; u = c.unit(u).next {
		if u <= last {
			return false
		}
		last = u
	}
	return true
}

// A compaction changes nothing a caller sees and leaves the units in
// the order of their list, whether that list ran in the order of their
// records, when they move down in place, or not, after merges moved a
// later unit into an earlier one's place, when they are copied out.
func TestCompactKeepsTheUnitsInEitherOrder(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := NewContext(Config{TextClass: Reconstructible})
		if err := c.RegisterTool(Tool{Name: "read_file", Annotations: Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}}); err != nil {
			rt.Fatal(err)
		}
		rounds := rapid.IntRange(3, 400).Draw(rt, "rounds")
		compactRounds(rt, c, 0, rounds)
		c.mu.Lock()
		reorder := rapid.Bool().Draw(rt, "reorder")
		if reorder {
			// A later unit takes in an earlier one, two or more places
			// before it: it takes that place in the list, out of the
			// order of the records. Later merges may restore it.
			for m := range rapid.IntRange(1, 5).Draw(rt, "merges") {
				var list []int32
				for u := c.firstUnit(); u != none; u = c.unit(u).next {
					list = append(list, u)
				}
				if len(list) < 3 {
					break
				}
				i := rapid.IntRange(0, len(list)-3).Draw(rt, "earlier")
				j := rapid.IntRange(i+2, len(list)-1).Draw(rt, "later")
				c.merge(list[j], list[i])
				if m == 0 && unitsOrdered(c) {
					rt.Fatalf("unit %d took in unit %d and left the units in the order of their records", list[j], list[i])
				}
			}
		}
		// Units leave without being unindexed, as a decision leaves
		// them, until the dead outnumber the live.
		for u := c.firstUnit(); u != none; {
			next := c.unit(u).next
			if rapid.IntRange(0, 3).Draw(rt, "evict") > 0 {
				for c.unit(u).head != none {
					c.remove(c.unit(u).head, false, false)
				}
			}
			u = next
		}
		c.mu.Unlock()
		before := capture(c)
		c.mu.Lock()
		var first *urec
		if c.units.Len() > 0 {
			first = c.units.At(0)
		}
		ordered := unitsOrdered(c)
		listed := 0
		for u := c.firstUnit(); u != none; u = c.unit(u).next {
			listed++
		}
		c.compact()
		checkUnits(rt, c)
		if listed > 0 && (c.units.At(0) == first) != ordered {
			rt.Fatalf("units in order %v, arena kept %v", ordered, c.units.At(0) == first)
		}
		c.mu.Unlock()
		if err := diffState(before, capture(c)); err != nil {
			rt.Fatal(err)
		}
		// It goes on: new rounds join the list after the units kept.
		compactRounds(rt, c, rounds, rounds+3)
		c.mu.Lock()
		checkUnits(rt, c)
		c.mu.Unlock()
	})
}

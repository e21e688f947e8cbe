package pruneguard

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// An index that removes a set of records in one pass holds what one that
// removes them one by one holds, laid out as find needs, and reads no id
// to get there.
func TestIndexRemoveSetMatchesRemove(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var keys []string
		reads := 0
		key := func(i int32) []byte { reads++; return []byte(keys[i]) }
		seed := maphash.MakeSeed()
		set, one := index{seed: seed, key: key}, index{seed: seed, key: key}
		count := rapid.SampledFrom([]int{0, 1, 20, 1000, 5000}).Draw(rt, "count")
		count += rapid.IntRange(0, 50).Draw(rt, "more")
		for i := range count {
			keys = append(keys, "id-"+strconv.Itoa(i))
			set.put(int32(i))
			one.put(int32(i))
		}
		share := rapid.IntRange(1, 10).Draw(rt, "share")
		gone := newRecordSet(int32(count + 5))
		for i := range count + 5 { // a record not held may be in the set
			if rapid.IntRange(0, 9).Draw(rt, "gone") < share {
				gone.add(int32(i))
				if i < count {
					one.remove(int32(i))
				}
			}
		}
		reads = 0
		set.removeSet(gone)
		if reads > 0 {
			rt.Fatalf("removeSet read %d ids", reads)
		}
		checkIndex(rt, &set)
		if set.n != one.n {
			rt.Fatalf("%d records kept, removing one by one keeps %d", set.n, one.n)
		}
		for i, id := range keys {
			r, ok := set.find(id)
			if want := !gone.has(int32(i)); ok != want || ok && r != int32(i) {
				rt.Fatalf("find(%s) = %d %v, want %v", id, r, ok, want)
			}
		}
		// It goes on as an index.
		keys = append(keys, "new")
		set.put(int32(len(keys) - 1))
		checkIndex(rt, &set)
		if r, ok := set.find("new"); !ok || r != int32(len(keys)-1) {
			rt.Fatalf("find(new) = %d %v", r, ok)
		}
	})
}

// A btree that deletes the elements a predicate names in one walk holds
// the others, in order, shaped as fill shapes them, and goes on as a
// btree.
func TestBtreeDeleteWhereMatchesASortedSlice(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.SampledFrom([]int{0, 1, bMax, bMax + 1, bMax * bMax, 5000}).Draw(rt, "n")
		tr := btree[int]{cmp: cmp.Compare[int]}
		var model []int
		for i := range n {
			tr.Insert(i * 2)
			model = append(model, i*2)
		}
		mod := rapid.IntRange(1, 5).Draw(rt, "mod")
		gone := func(x int) bool { return x%mod == 0 }
		tr.deleteWhere(gone)
		model = slices.DeleteFunc(model, gone)
		checkBtree(rt, &tr)
		if len(model) < n {
			checkFilled(rt, &tr)
		}
		var walked []int
		tr.each(func(x int) { walked = append(walked, x) })
		if !slices.Equal(walked, model) || tr.Len() != len(model) {
			rt.Fatalf("walks %v, want %v", walked, model)
		}
		tr.Insert(1)
		model = append([]int{1}, model...)
		if len(model) > 1 && !tr.Delete(model[len(model)/2]) {
			rt.Fatalf("%d not found", model[len(model)/2])
		}
		if len(model) > 1 {
			model = slices.Delete(model, len(model)/2, len(model)/2+1)
		}
		checkBtree(rt, &tr)
		walked = walked[:0]
		tr.each(func(x int) { walked = append(walked, x) })
		if !slices.Equal(walked, model) {
			rt.Fatalf("after edits: walks %v, want %v", walked, model)
		}
	})
}

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
					pad = strings.Repeat(" ", slabMax/4+1)
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
			checkIndex(rt, &c.byID)
			checkIndex(rt, &c.byCall)
		}
		calls := func(c *Context) map[string]int32 {
			m := map[string]int32{}
			for _, s := range c.byCall.slots {
				if s != 0 {
					m[string(c.callID(s-1))] = s - 1
				}
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

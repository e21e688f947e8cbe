package hashindex

import (
	"fmt"
	"hash/maphash"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/pruneguard/pruneguard/internal/arena"
)

// The index against a map: random puts and removes of ids, every id
// looked up after each step.
func TestIndexMatchesAMap(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var keys []string
		ix := New(maphash.MakeSeed(), func(i int32) []byte { return []byte(keys[i]) })
		in := map[string]int32{}
		span := rapid.IntRange(1, 3000).Draw(rt, "span")
		for range rapid.IntRange(1, 4000).Draw(rt, "steps") {
			id := fmt.Sprint("k", rapid.IntRange(0, span).Draw(rt, "k"))
			if r, ok := in[id]; ok && rapid.Bool().Draw(rt, "remove") {
				ix.Remove(r)
				delete(in, id)
			} else if !ok {
				keys = append(keys, id)
				r := int32(len(keys) - 1)
				ix.Put(r)
				in[id] = r
			}
			if ix.Len() != len(in) {
				rt.Fatalf("n %d, model %d", ix.Len(), len(in))
			}
			q := fmt.Sprint("k", rapid.IntRange(0, span).Draw(rt, "q"))
			r, ok := ix.Find(q)
			if w, wok := in[q]; ok != wok || ok && r != w {
				rt.Fatalf("Find(%s) = %d %v, model %d %v", q, r, ok, w, wok)
			}
		}
		for id, r := range in {
			if got, ok := ix.Find(id); !ok || got != r {
				rt.Fatalf("Find(%s) = %d %v, want %d", id, got, ok, r)
			}
		}
	})
}

// checkIndex fails rt when the layout of t is broken (see Check).
func checkIndex(rt *rapid.T, t *Index) {
	if err := t.Check(); err != nil {
		rt.Fatal(err)
	}
}

// Renumbered, an index holds what an index built again by Put holds:
// the ids kept, under their new records, and no other; from a size a
// whole factor shrinks, it reads no id to get there.
func TestIndexRenumberMatchesPut(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var keys, renamed []string
		reads := 0
		ix := New(maphash.MakeSeed(), func(i int32) []byte { return []byte(keys[i]) })
		count := rapid.SampledFrom([]int{0, 5, 100, 1000, 5000}).Draw(rt, "count")
		count += rapid.IntRange(0, 50).Draw(rt, "more")
		for i := range count {
			keys = append(keys, "id-"+strconv.Itoa(i))
			ix.Put(int32(i))
		}
		for i := range count { // some leave one by one
			if rapid.IntRange(0, 9).Draw(rt, "remove") == 0 {
				ix.Remove(int32(i))
				keys[i] = ""
			}
		}
		// The records left are renumbered in order, some dropped.
		m := make([]int32, count)
		want := map[string]int32{}
		for i := range count {
			m[i] = None
			if keys[i] != "" && rapid.IntRange(0, 2).Draw(rt, "drop") > 0 {
				m[i] = int32(len(renamed))
				want[keys[i]] = m[i]
				renamed = append(renamed, keys[i])
			}
		}
		keys = renamed
		ix.key = func(i int32) []byte { reads++; return []byte(keys[i]) }
		fast := len(ix.slots) >= roundFrom && len(ix.slots)/2 >= slotsFor(len(want)*3/2) && len(ix.slots)/2 <= 2*slotsFor(len(want)*3/2)
		estimate := len(want)
		if rapid.Bool().Draw(rt, "underestimate") {
			estimate /= 3
		}
		// Sized within a factor of two of the estimate, it keeps its
		// slots and works in them.
		size := len(ix.slots)
		inPlace := estimate > 0 && size > 0 && size < 2*slotsFor(estimate*3/2)
		var slots *int32
		if size > 0 {
			slots = &ix.slots[0]
		}
		if got := ix.Renumber(m, estimate); got != len(want) {
			rt.Fatalf("Renumber kept %d, want %d", got, len(want))
		}
		if fast && estimate == len(want) && reads > 0 {
			rt.Fatalf("Renumber read %d ids shrinking %d slots by half", reads, len(ix.slots)*2)
		}
		if inPlace && (reads > 0 || len(ix.slots) != size || &ix.slots[0] != slots) {
			rt.Fatalf("Renumber keeping %d slots read %d ids, left %d slots, same %v", size, reads, len(ix.slots), &ix.slots[0] == slots)
		}
		checkIndex(rt, &ix)
		for id, r := range want {
			if got, ok := ix.Find(id); !ok || got != r {
				rt.Fatalf("Find(%s) = %d %v, want %d", id, got, ok, r)
			}
		}
		for i := range count + 10 {
			id := "id-" + strconv.Itoa(i)
			if _, ok := want[id]; !ok {
				if r, ok := ix.Find(id); ok {
					rt.Fatalf("Find(%s) = %d, dropped", id, r)
				}
			}
		}
		// It goes on as an index.
		keys = append(keys, "new")
		ix.Put(int32(len(keys) - 1))
		if r, ok := ix.Find("new"); !ok || r != int32(len(keys)-1) {
			rt.Fatalf("Find(new) = %d %v after renumbering", r, ok)
		}
		checkIndex(rt, &ix)
	})
}

// An index that removes a set of records in one pass holds what one that
// removes them one by one holds, laid out as find needs, and reads no id
// to get there.
func TestIndexRemoveSetMatchesRemove(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var keys []string
		reads := 0
		key := func(i int32) []byte { reads++; return []byte(keys[i]) }
		seed := maphash.MakeSeed()
		set, one := New(seed, key), New(seed, key)
		count := rapid.SampledFrom([]int{0, 1, 20, 1000, 5000}).Draw(rt, "count")
		count += rapid.IntRange(0, 50).Draw(rt, "more")
		for i := range count {
			keys = append(keys, "id-"+strconv.Itoa(i))
			set.Put(int32(i))
			one.Put(int32(i))
		}
		share := rapid.IntRange(1, 10).Draw(rt, "share")
		gone := arena.NewSet(int32(count + 5))
		for i := range count + 5 { // a record not held may be in the set
			if rapid.IntRange(0, 9).Draw(rt, "gone") < share {
				gone.Add(int32(i))
				if i < count {
					one.Remove(int32(i))
				}
			}
		}
		reads = 0
		set.RemoveSet(gone)
		if reads > 0 {
			rt.Fatalf("RemoveSet read %d ids", reads)
		}
		checkIndex(rt, &set)
		if set.Len() != one.Len() {
			rt.Fatalf("%d records kept, removing one by one keeps %d", set.Len(), one.Len())
		}
		for i, id := range keys {
			r, ok := set.Find(id)
			if want := !gone.Has(int32(i)); ok != want || ok && r != int32(i) {
				rt.Fatalf("Find(%s) = %d %v, want %v", id, r, ok, want)
			}
		}
		// It goes on as an index.
		keys = append(keys, "new")
		set.Put(int32(len(keys) - 1))
		checkIndex(rt, &set)
		if r, ok := set.Find("new"); !ok || r != int32(len(keys)-1) {
			rt.Fatalf("Find(new) = %d %v", r, ok)
		}
	})
}

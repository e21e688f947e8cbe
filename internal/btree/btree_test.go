package btree

import (
	"cmp"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// The btree against a sorted slice: random insertions and deletions, with
// every neighbour query checked after each step and the structure's
// invariants checked throughout.
func TestBtreeMatchesASortedSlice(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tr := New(cmp.Compare[int])
		var model []int
		span := rapid.SampledFrom([]int{50, 500, 5000}).Draw(rt, "span")
		steps := rapid.IntRange(1, 3000).Draw(rt, "steps")
		ascending := rapid.Bool().Draw(rt, "ascending")
		next := 0
		for i := 0; i < steps; i++ {
			x := rapid.IntRange(0, span).Draw(rt, "x")
			if ascending && rapid.IntRange(0, 3).Draw(rt, "append") > 0 {
				next++
				x = span + next
			}
			model = editOnce(rt, &tr, model, x, rapid.IntRange(0, 2).Draw(rt, "op") == 0)
			if tr.Len() != len(model) {
				rt.Fatalf("Len %d, model %d", tr.Len(), len(model))
			}
			checkBtree(rt, &tr)
			q := rapid.IntRange(-1, span+next+1).Draw(rt, "q")
			k, found := slices.BinarySearch(model, q)
			a, ok := tr.After(q)
			ka := k
			if found {
				ka++
			}
			if ok != (ka < len(model)) || ok && a != model[ka] {
				rt.Fatalf("After(%d) = %d %v, model %v", q, a, ok, model)
			}
			b, ok := tr.Before(q)
			if ok != (k > 0) || ok && b != model[k-1] {
				rt.Fatalf("Before(%d) = %d %v", q, b, ok)
			}
			r := rapid.IntRange(-1, len(model)).Draw(rt, "rank")
			e, ok := tr.Select(r)
			if ok != (r >= 0 && r < len(model)) || ok && e != model[r] {
				rt.Fatalf("Select(%d) = %d %v, model %v", r, e, ok, model)
			}
		}
		// A full walk both ways.
		var up, down []int
		for x, ok := tr.Min(); ok; x, ok = tr.After(x) {
			up = append(up, x)
		}
		for x, ok := tr.Max(); ok; x, ok = tr.Before(x) {
			down = append(down, x)
		}
		slices.Reverse(down)
		if !slices.Equal(up, model) || !slices.Equal(down, model) {
			rt.Fatalf("walks %v %v, model %v", up, down, model)
		}
	})
}

// checkBtree checks the ordering of every node against its separators
// and the sizes of the nodes.
func checkBtree(rt *rapid.T, t *Tree[int]) {
	if t.root == nil {
		if t.n != 0 {
			rt.Fatalf("empty root, %d elements", t.n)
		}
		return
	}
	n := 0
	var walk func(x *bnode[int], lo, hi *int, root bool)
	walk = func(x *bnode[int], lo, hi *int, root bool) {
		if x.size() > bMax {
			rt.Fatalf("node of %d entries", x.size())
		}
		if x.size() == 0 {
			rt.Fatalf("empty node")
		}
		if x.leaf() {
			if x.count != len(x.items) {
				rt.Fatalf("leaf counts %d of %d", x.count, len(x.items))
			}
			n += len(x.items)
			for i, v := range x.items {
				if i > 0 && x.items[i-1] >= v || lo != nil && v < *lo || hi != nil && v >= *hi {
					rt.Fatalf("leaf out of order: %v within [%v, %v)", x.items, lo, hi)
				}
			}
			return
		}
		if len(x.items) != len(x.kids)-1 {
			rt.Fatalf("%d separators for %d children", len(x.items), len(x.kids))
		}
		sum := 0
		for _, k := range x.kids {
			sum += k.count
		}
		if sum != x.count {
			rt.Fatalf("node counts %d, children hold %d", x.count, sum)
		}
		for i, k := range x.kids {
			l, h := lo, hi
			if i > 0 {
				l = &x.items[i-1]
			}
			if i < len(x.items) {
				h = &x.items[i]
			}
			walk(k, l, h, false)
		}
	}
	walk(t.root, nil, nil, true)
	if n != t.n {
		rt.Fatalf("%d elements in the leaves, Len %d", n, t.n)
	}
}

// Filled in ascending order, the leaves stay full.
func TestBtreeAscendingFillsLeaves(t *testing.T) {
	tr := New(cmp.Compare[int])
	for i := range 100000 {
		tr.Insert(i)
	}
	leaves := 0
	var walk func(x *bnode[int])
	walk = func(x *bnode[int]) {
		if x.leaf() {
			leaves++
			return
		}
		for _, k := range x.kids {
			walk(k)
		}
	}
	walk(tr.root)
	if full := (100000 + bMax - 1) / bMax; leaves > full+1 {
		t.Fatalf("%d leaves for 100,000 elements, %d when full", leaves, full)
	}
}

// deleteWhere leaves the elements the predicate keeps, in a tree of the
// same shape rules, filled as fill fills one, whatever the tree it starts
// from, and the tree goes on as any other.
func TestBtreeDeleteWhere(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tr := New(cmp.Compare[int])
		var model []int
		n := rapid.IntRange(0, 3000).Draw(rt, "n")
		if rapid.Bool().Draw(rt, "filled") {
			for i := range n {
				model = append(model, 2*i)
			}
			tr.Fill(model)
		} else {
			for range n {
				x := rapid.IntRange(0, 4*n).Draw(rt, "x")
				tr.Insert(x)
				if j, found := slices.BinarySearch(model, x); !found {
					model = slices.Insert(model, j, x)
				}
			}
		}
		share := rapid.SampledFrom([]int{0, 1, 5, 30, 60, 90, 100}).Draw(rt, "share")
		seed := rapid.Uint64().Draw(rt, "seed")
		gone := func(x int) bool { return (uint64(x)*0x9e3779b97f4a7c15^seed)%100 < uint64(share) }
		before := len(model)
		tr.DeleteWhere(gone)
		model = slices.DeleteFunc(model, gone)
		checkBtree(rt, &tr)
		var got []int
		tr.Each(func(x int) { got = append(got, x) })
		if !slices.Equal(got, model) || tr.Len() != len(model) {
			rt.Fatalf("after deleteWhere: %d elements %v, model %d", tr.Len(), len(got), len(model))
		}
		if len(model) < before {
			// A deletion builds the leaves again, each but a lone one
			// at least half full; with nothing deleted the tree stays
			// as its inserts left it.
			leaves := tr.leaves()
			for i, l := range leaves {
				if len(leaves) > 1 && len(l.items) < bMax/2 {
					rt.Fatalf("leaf %d of %d holds %d", i, len(leaves), len(l.items))
				}
			}
			checkFilled(rt, &tr)
		}
		// The tree goes on.
		model = editAgainstModel(rt, &tr, model, rapid.IntRange(0, 200).Draw(rt, "ops"), 4*n+10, true)
		for k := range model {
			if e, ok := tr.Select(k); !ok || e != model[k] {
				rt.Fatalf("Select(%d) = %d %v, model %d", k, e, ok, model[k])
			}
		}
	})
}

// editAgainstModel inserts and deletes ops random elements of [-1, top]
// in tr and in model, its elements in order, checking each Delete's
// answer and, with each, the tree's shape after every edit; it returns
// the model.
func editAgainstModel(rt *rapid.T, tr *Tree[int], model []int, ops, top int, each bool) []int {
	for range ops {
		x := rapid.IntRange(-1, top).Draw(rt, "y")
		model = editOnce(rt, tr, model, x, rapid.Bool().Draw(rt, "delete"))
		if each {
			checkBtree(rt, tr)
		}
	}
	return model
}

// editOnce deletes x from tr and model, checking Delete's answer against
// the model, or inserts it in both; it returns the model.
func editOnce(rt *rapid.T, tr *Tree[int], model []int, x int, del bool) []int {
	j, found := slices.BinarySearch(model, x)
	if del {
		if tr.Delete(x) != found {
			rt.Fatalf("Delete(%d) = %v, model %v", x, !found, found)
		}
		if found {
			model = slices.Delete(model, j, j+1)
		}
	} else {
		tr.Insert(x)
		if !found {
			model = slices.Insert(model, j, x)
		}
	}
	return model
}

// A btree that deletes the elements a predicate names in one walk holds
// the others, in order, shaped as fill shapes them, and goes on as a
// btree.
func TestBtreeDeleteWhereMatchesASortedSlice(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.SampledFrom([]int{0, 1, bMax, bMax + 1, bMax * bMax, 5000}).Draw(rt, "n")
		tr := New(cmp.Compare[int])
		var model []int
		for i := range n {
			tr.Insert(i * 2)
			model = append(model, i*2)
		}
		mod := rapid.IntRange(1, 5).Draw(rt, "mod")
		gone := func(x int) bool { return x%mod == 0 }
		tr.DeleteWhere(gone)
		model = slices.DeleteFunc(model, gone)
		checkBtree(rt, &tr)
		if len(model) < n {
			checkFilled(rt, &tr)
		}
		var walked []int
		tr.Each(func(x int) { walked = append(walked, x) })
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
		tr.Each(func(x int) { walked = append(walked, x) })
		if !slices.Equal(walked, model) {
			rt.Fatalf("after edits: walks %v, want %v", walked, model)
		}
	})
}

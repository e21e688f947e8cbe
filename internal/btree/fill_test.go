package btree

import (
	"cmp"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// checkFilled checks what fill promises beyond the order: every leaf at
// one depth, and every node but the root at least half full.
func checkFilled(rt *rapid.T, t *Tree[int]) {
	depth := -1
	var walk func(x *bnode[int], d int, root bool)
	walk = func(x *bnode[int], d int, root bool) {
		if !root && x.size() < bMax/2 {
			rt.Fatalf("node of %d entries", x.size())
		}
		if x.leaf() {
			if depth >= 0 && d != depth {
				rt.Fatalf("leaves at depths %d and %d", depth, d)
			}
			depth = d
			return
		}
		for _, k := range x.kids {
			walk(k, d+1, false)
		}
	}
	if t.root != nil {
		walk(t.root, 0, true)
	}
}

// A btree filled from a sorted slice holds that slice, in the shape its
// invariants ask, and goes on as a btree built by insertions would.
func TestBtreeFillMatchesASortedSlice(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.SampledFrom([]int{0, 1, bMax, bMax + 1, 2 * bMax, bMax * bMax, bMax*bMax + 1, 10000}).Draw(rt, "n")
		n += rapid.IntRange(0, 3).Draw(rt, "extra")
		model := make([]int, 0, n)
		for i := range n {
			model = append(model, 3*i+rapid.IntRange(0, 2).Draw(rt, "x"))
		}
		tr := New(cmp.Compare[int])
		tr.Insert(-5) // fill replaces what was there
		tr.Fill(slices.Clone(model))
		checkBtree(rt, &tr)
		checkFilled(rt, &tr)
		var walked []int
		tr.Each(func(x int) { walked = append(walked, x) })
		if !slices.Equal(walked, model) {
			rt.Fatalf("filled with %d elements, walks %d", len(model), len(walked))
		}
		for i := range model {
			if x, _ := tr.Select(i); x != model[i] {
				rt.Fatalf("Select(%d) = %d, want %d", i, x, model[i])
			}
		}
		model = editAgainstModel(rt, &tr, model, rapid.IntRange(0, 300).Draw(rt, "ops"), 3*n+3, true)
		walked = walked[:0]
		tr.Each(func(x int) { walked = append(walked, x) })
		if !slices.Equal(walked, model) || tr.Len() != len(model) {
			rt.Fatalf("after edits: walks %v, model %v", walked, model)
		}
	})
}

// treeNodes returns the leaves and the internal nodes of a tree.
func treeNodes[T any](t *Tree[T]) (leaves, inner map[*bnode[T]]bool) {
	leaves, inner = map[*bnode[T]]bool{}, map[*bnode[T]]bool{}
	var walk func(x *bnode[T])
	walk = func(x *bnode[T]) {
		if x.leaf() {
			leaves[x] = true
			return
		}
		inner[x] = true
		for _, k := range x.kids {
			walk(k)
		}
	}
	if t.root != nil {
		walk(t.root)
	}
	return leaves, inner
}

// A fill over a tree of any size, built by insertions or by a fill,
// holds what it was given in the shape fill promises, builds in the
// nodes of the tree it replaces as far as they go, and goes on as a
// btree.
func TestBtreeFillReusesTheNodesItReplaces(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		sizes := []int{0, 1, bMax, bMax + 1, 5 * bMax, bMax * bMax, bMax*bMax + 1, 6000}
		old := rapid.SampledFrom(sizes).Draw(rt, "old") + rapid.IntRange(0, 3).Draw(rt, "oldExtra")
		n := rapid.SampledFrom(sizes).Draw(rt, "n") + rapid.IntRange(0, 3).Draw(rt, "extra")
		tr := New(cmp.Compare[int])
		if rapid.Bool().Draw(rt, "inserted") {
			for i := range old {
				tr.Insert(old - i) // descending: half-full leaves
			}
		} else {
			xs := make([]int, old)
			for i := range xs {
				xs[i] = 2 * i
			}
			tr.Fill(xs)
		}
		oldLeaves, oldInner := treeNodes(&tr)
		model := make([]int, 0, n)
		for i := range n {
			model = append(model, 3*i+rapid.IntRange(0, 2).Draw(rt, "x"))
		}
		if rapid.Bool().Draw(rt, "seq") {
			tr.FillSeq(n, slices.Values(model))
		} else {
			tr.Fill(slices.Clone(model))
		}
		checkBtree(rt, &tr)
		checkFilled(rt, &tr)
		var walked []int
		tr.Each(func(x int) { walked = append(walked, x) })
		if !slices.Equal(walked, model) || tr.Len() != n {
			rt.Fatalf("filled with %d elements, walks %d, Len %d", n, len(walked), tr.Len())
		}
		newLeaves, newInner := treeNodes(&tr)
		reused := func(now, before map[*bnode[int]]bool) int {
			k := 0
			for x := range now {
				if before[x] {
					k++
				}
			}
			return k
		}
		if got, want := reused(newLeaves, oldLeaves), min(len(newLeaves), len(oldLeaves)); got != want {
			rt.Fatalf("%d of %d old leaves reused for %d new ones, want %d", got, len(oldLeaves), len(newLeaves), want)
		}
		if got, want := reused(newInner, oldInner), min(len(newInner), len(oldInner)); got != want {
			rt.Fatalf("%d of %d old internal nodes reused for %d new ones, want %d", got, len(oldInner), len(newInner), want)
		}
		model = editAgainstModel(rt, &tr, model, rapid.IntRange(0, 200).Draw(rt, "ops"), 3*n+3, false)
		checkBtree(rt, &tr)
		walked = walked[:0]
		tr.Each(func(x int) { walked = append(walked, x) })
		if !slices.Equal(walked, model) || tr.Len() != len(model) {
			rt.Fatalf("after edits: walks %d, model %d", len(walked), len(model))
		}
	})
}

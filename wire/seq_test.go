package wire

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestSeqRemoveAll checks that removing a batch of messages at once (the
// Fenwick tree built again for a large batch, updated message by message
// for a small one) leaves the applied state exactly as removing them one
// by one does: the kept list both ways, the tree, the counts, and the
// messages reported removed; and that the ranks of a view agree with a
// count.
func TestSeqRemoveAll(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 200).Draw(t, "n")
		a, b := newSeqState(n), newSeqState(n)
		for range rapid.IntRange(1, 4).Draw(t, "batches") {
			var rm []int32
			if n > 0 {
				rm = rapid.SliceOfN(rapid.Int32Range(0, int32(n-1)), 0, n).Draw(t, "rm")
			}
			var want []int32
			for _, i := range rm {
				if !a.removed[i] {
					a.remove(i)
					want = append(want, i)
				}
			}
			var got []int32
			b.removeAll(rm, &got)
			if !slices.Equal(got, want) {
				t.Fatalf("removed %v, one by one %v", got, want)
			}
			if !slices.Equal(a.next, b.next) || !slices.Equal(a.prev, b.prev) || !slices.Equal(a.fen, b.fen) ||
				!slices.Equal(a.removed, b.removed) || a.head != b.head || a.tail != b.tail || a.kept != b.kept || a.version != b.version {
				t.Fatalf("batch state differs from one by one")
			}
			v := view{s: b}
			r := 0
			for i := range int32(n) {
				if b.removed[i] {
					continue
				}
				if got := v.rank(i); got != r {
					t.Fatalf("rank of %d: %d, want %d", i, got, r)
				}
				r++
			}
		}
	})
}

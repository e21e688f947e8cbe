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

// TestSeqOps: removals one by one and in batches, restores of the last
// removed (back to the last growth: a restore puts a message back between
// its neighbours of the time), and growth, in any order, keep the kept
// list, the count and every rank as a plain count of the removed says.
func TestSeqOps(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := newSeqState(rapid.IntRange(0, 150).Draw(t, "n"))
		var stack []int32 // removed, in order
		undoable := 0     // the last of stack a restore may take back
		for step := range rapid.IntRange(1, 30).Draw(t, "steps") {
			switch op := rapid.IntRange(0, 3).Draw(t, "op"); {
			case op == 0 && s.n > 0:
				i := rapid.Int32Range(0, int32(s.n-1)).Draw(t, "i")
				if !s.removed[i] {
					s.remove(i)
					stack = append(stack, i)
					undoable++
				}
			case op == 1 && s.n > 0:
				rm := rapid.SliceOfN(rapid.Int32Range(0, int32(s.n-1)), 0, s.n).Draw(t, "rm")
				n := len(stack)
				s.removeAll(rm, &stack)
				undoable += len(stack) - n
			case op == 2 && undoable > 0:
				s.restore(stack[len(stack)-1])
				stack = stack[:len(stack)-1]
				undoable--
			default:
				undoable = 0
				for range rapid.IntRange(1, 70).Draw(t, "grow") {
					s.grow()
				}
			}
			var kept []int32
			removed := 0
			for i := range int32(s.n) {
				if got := s.removedBefore(i); got != removed {
					t.Fatalf("step %d: removedBefore(%d) = %d, want %d", step, i, got, removed)
				}
				if s.removed[i] {
					removed++
				} else {
					kept = append(kept, i)
				}
			}
			var list []int32
			for j := s.head; j >= 0; j = s.next[j] {
				list = append(list, j)
			}
			if !slices.Equal(list, kept) || s.kept != len(kept) || removed != len(stack) {
				t.Fatalf("step %d: list %v, kept %v (%d), %d removed, %d on the stack", step, list, kept, s.kept, removed, len(stack))
			}
		}
	})
}

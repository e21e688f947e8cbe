package arena

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"
)

// The arena against a slice: pushes, writes through At and truncations,
// every record read back after each step; a pointer At returned stays
// good while nothing is pushed.
func TestArenaMatchesASlice(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var a Arena[int64]
		var model []int64
		if rapid.Bool().Draw(rt, "reserve") {
			a.Reserve(rapid.IntRange(0, 3*Chunk).Draw(rt, "room"))
		}
		for range rapid.IntRange(1, 60).Draw(rt, "steps") {
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0, 1:
				for range rapid.IntRange(1, 2*Chunk).Draw(rt, "pushes") {
					i := a.Push()
					if i != int32(len(model)) || *a.At(i) != 0 {
						rt.Fatalf("Push = %d holding %d, want %d holding 0", i, *a.At(i), len(model))
					}
					*a.At(i) = int64(i) * 7
					model = append(model, int64(i)*7)
				}
			case 2:
				n := rapid.IntRange(0, len(model)).Draw(rt, "keep")
				a.Truncate(int32(n))
				model = model[:n]
			case 3:
				if len(model) > 0 {
					i := rapid.IntRange(0, len(model)-1).Draw(rt, "at")
					p := a.At(int32(i))
					*p = -1
					model[i] = -1
				}
			}
			if a.Len() != int32(len(model)) {
				rt.Fatalf("Len %d, model %d", a.Len(), len(model))
			}
			for i, want := range model {
				if got := *a.At(int32(i)); got != want {
					rt.Fatalf("At(%d) = %d, want %d", i, got, want)
				}
			}
		}
	})
}

// The slab against the strings it was given: adds of small and large
// strings, truncations and releases, every string held read back after
// each step; the bytes of a string released stay as they were.
func TestSlabKeepsWhatItHolds(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var s Slab
		type held struct {
			r    Ref
			want []byte
			b    []byte // what Bytes gave when it was added
		}
		var live []held
		var released []held
		for i := range rapid.IntRange(1, 200).Draw(rt, "steps") {
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0, 1:
				n := rapid.SampledFrom([]int{0, 1, 30, 1000, Large, Large + 1, 2 * Large}).Draw(rt, "n")
				parts := [][]byte{bytes.Repeat([]byte{byte('a' + i%26)}, n/2), bytes.Repeat([]byte{byte('A' + i%26)}, n-n/2)}
				r := s.Add(parts...)
				want := append(append([]byte(nil), parts[0]...), parts[1]...)
				live = append(live, held{r, want, s.Bytes(r)})
			case 2:
				if len(live) > 0 {
					j := rapid.IntRange(0, len(live)-1).Draw(rt, "truncate")
					n := rapid.IntRange(0, len(live[j].want)).Draw(rt, "to")
					live[j].r = s.Truncate(live[j].r, uint32(n))
					live[j].want = live[j].want[:n]
				}
			case 3:
				if len(live) > 0 {
					j := rapid.IntRange(0, len(live)-1).Draw(rt, "release")
					s.Release(live[j].r)
					released = append(released, live[j])
					live = append(live[:j], live[j+1:]...)
				}
			}
			for _, h := range live {
				if got := s.Bytes(h.r); !bytes.Equal(got, h.want) || cap(got) != len(got) {
					rt.Fatalf("Bytes = %d bytes (cap %d), want %d", len(got), cap(got), len(h.want))
				}
			}
		}
		for _, h := range released {
			if !bytes.Equal(h.b[:len(h.want)], h.want) {
				rt.Fatalf("the bytes of a string released were written over")
			}
		}
	})
}

// Released strings leave garbage once they outweigh what is live, and
// not before; a large string leaves none, its chunk going with it.
func TestSlabGarbage(t *testing.T) {
	var s Slab
	small := bytes.Repeat([]byte("x"), 1000)
	var refs []Ref
	for range 600 { // 600 kB: more than a shared chunk's most
		refs = append(refs, s.Add(small))
	}
	for _, r := range refs[:290] {
		s.Release(r)
	}
	if s.Garbage() {
		t.Fatal("garbage with fewer bytes dead than live")
	}
	for _, r := range refs[290:400] {
		s.Release(r)
	}
	if !s.Garbage() {
		t.Fatal("no garbage with 400 kB dead beside 200 kB live")
	}
	var big Slab
	for range 10 {
		big.Release(big.Add(make([]byte, 2*Large)))
	}
	if big.Garbage() || big.dead != 0 {
		t.Fatalf("large strings released leave %d dead bytes", big.dead)
	}
	if n := len(big.Chunks()); n != 1 {
		t.Fatalf("%d chunks for one large string at a time", n)
	}
}

// A set holds what was added to it, and nothing else.
func TestSet(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 1000).Draw(rt, "n")
		s := NewSet(int32(n))
		in := map[int32]bool{}
		for range rapid.IntRange(0, n).Draw(rt, "adds") {
			r := int32(rapid.IntRange(0, max(n-1, 0)).Draw(rt, "r"))
			if n > 0 {
				s.Add(r)
				in[r] = true
			}
		}
		for r := range int32(n) {
			if s.Has(r) != in[r] {
				rt.Fatalf("Has(%d) = %v, want %v", r, s.Has(r), in[r])
			}
		}
	})
}

// Package hashindex maps byte-string ids to int32 record numbers without
// storing the ids: it asks its owner for the id of a record when it needs
// one, and keeps 7 to 11 bytes per id.
package hashindex

import (
	"fmt"
	"hash/maphash"
	"iter"
	"math/bits"

	"github.com/pruneguard/pruneguard/internal/arena"
)

// None is the record number of no record: what [Index.Find] returns for
// an id it does not hold, and what a renumbering maps a record to drop.
const None int32 = -1

// Index maps ids to the records that hold them: open addressing over
// int32 slots (a record's index plus one; zero is empty), Robin Hood
// linear probing, deletion by shifting back. Beside each slot it keeps a
// byte of the id's hash and the slot's distance from where the id
// hashes, so that it reads an id only when the hash bytes match and never
// to delete. It keeps no key: the function given to [New] reads the id of
// a record, or nil for a record gone, which no id matches and a resize
// leaves out. Its load stays between about a half and four fifths, so it
// costs 7 to 11 bytes per id.
//
// Make an Index with [New]. It is not safe for concurrent use.
type Index struct {
	slots []int32
	meta  []uint16 // distance<<8 | hash byte
	lost  []int32  // records a failed place left out, until the resize
	n     int
	seed  maphash.Seed
	key   func(i int32) []byte
}

// New returns an empty index whose ids hash with seed and which reads the
// id of record r as key(r): nil for a record gone.
func New(seed maphash.Seed, key func(r int32) []byte) Index {
	return Index{seed: seed, key: key}
}

// Len returns the number of records the index holds, those gone that no
// resize has left out yet among them.
func (t *Index) Len() int { return t.n }

// Slots returns the number of slots, for tests of how the index grows.
func (t *Index) Slots() int { return len(t.slots) }

// All yields the records the index holds, in the order of its slots.
func (t *Index) All() iter.Seq[int32] {
	return func(yield func(int32) bool) {
		for _, s := range t.slots {
			if s != 0 && !yield(s-1) {
				return
			}
		}
	}
}

func (t *Index) home(h uint64) int { return int(uint64(uint32(h)) * uint64(len(t.slots)) >> 32) }

func (t *Index) next(i int) int {
	if i++; i == len(t.slots) {
		return 0
	}
	return i
}

// Find returns the record holding id, or None and false when none does.
func (t *Index) Find(id string) (int32, bool) {
	if t.n == 0 {
		return None, false
	}
	h := maphash.String(t.seed, id)
	g := uint16(h >> 56)
	for i, d := t.home(h), uint16(0); ; i, d = t.next(i), d+1 {
		s, m := t.slots[i], t.meta[i]
		if s == 0 || m>>8 < d {
			return None, false
		}
		if m == d<<8|g {
			if k := t.key(s - 1); k != nil && string(k) == id {
				return s - 1, true
			}
		}
	}
}

// Put maps the id of record r to r. The id must not be in the index.
func (t *Index) Put(r int32) {
	if (t.n+1)*5 > len(t.slots)*4 {
		t.resize(slotsFor(len(t.slots) * 3 / 2))
	}
	if !t.place(r, maphash.Bytes(t.seed, t.key(r))) {
		t.resize(slotsFor(len(t.slots) * 3 / 2))
	}
	t.n++
}

// place puts record r, whose id hashes to h, taking the slot of any
// record nearer to its home on the way. It reports false, leaving the
// index without some record, when a distance would not fit its byte;
// the caller then resizes, which places every record again.
func (t *Index) place(r int32, h uint64) bool { return t.placeAt(r, t.home(h), uint16(h>>56)) }

// placeAt is place for a record whose home slot is i and whose meta is m
// at distance zero.
func (t *Index) placeAt(r int32, i int, m uint16) bool {
	s := r + 1
	for ; ; i = t.next(i) {
		if t.slots[i] == 0 {
			t.slots[i], t.meta[i] = s, m
			return true
		}
		if t.meta[i]>>8 < m>>8 {
			t.slots[i], s = s, t.slots[i]
			t.meta[i], m = m, t.meta[i]
		}
		if m>>8 == 0xff {
			t.lost = append(t.lost, s-1)
			return false
		}
		m += 1 << 8
	}
}

// Remove unmaps record r.
func (t *Index) Remove(r int32) {
	if t.n == 0 {
		return
	}
	i := t.home(maphash.Bytes(t.seed, t.key(r)))
	for t.slots[i] != r+1 {
		if t.slots[i] == 0 {
			return
		}
		i = t.next(i)
	}
	t.n--
	// Shift back the records after it that are away from home.
	for j := t.next(i); t.slots[j] != 0 && t.meta[j]>>8 > 0; i, j = j, t.next(j) {
		t.slots[i], t.meta[i] = t.slots[j], t.meta[j]-1<<8
	}
	t.slots[i], t.meta[i] = 0, 0
}

// resize rebuilds the index with size slots.
func (t *Index) resize(size int) {
	old := t.slots
	lost := t.lost
	t.lost = nil
	t.slots = make([]int32, size)
	t.meta = make([]uint16, size)
	for _, s := range old {
		if s != 0 {
			t.rehash(s - 1)
		}
	}
	for _, r := range lost {
		t.rehash(r)
	}
}

func (t *Index) rehash(r int32) {
	k := t.key(r)
	if k == nil {
		t.n-- // a record gone: it leaves the index here
		return
	}
	if !t.place(r, maphash.Bytes(t.seed, k)) {
		t.resize(slotsFor(len(t.slots) * 3 / 2))
	}
}

// Reset empties the index and sizes it for n ids.
func (t *Index) Reset(n int) {
	size := slotsFor(n * 3 / 2)
	t.slots = make([]int32, size)
	t.meta = make([]uint16, size)
	t.n = 0
}

// slotsFor rounds a number of slots: at least 16, and from
// roundFrom slots on a multiple of 16, so that Renumber can mostly
// shrink an index by a whole factor.
func slotsFor(n int) int {
	if n < roundFrom {
		return max(16, n)
	}
	return (n + 15) &^ 15
}

const roundFrom = 1024

// Renumber maps every record r of the index to m[r], drops those m maps
// to None, and sizes the index for n records, as Reset does within a
// factor of two. It returns how many it kept. It reads no id when it can
// shrink the index by a whole factor f or keep its size: a slot's home
// in a table of len(slots)/f slots is its home now divided by f, since
// home scales the hash's 32 low bits to the table, and the hash byte
// does not depend on the size. Keeping its size, it works in the slots
// it has (see renumberInPlace); shrinking, in new ones. Otherwise it
// places every record again.
func (t *Index) Renumber(m []int32, n int) int {
	size := len(t.slots)
	want := slotsFor(n * 3 / 2)
	f := max(size/want, 1)
	for size%f != 0 {
		f--
	}
	if n == 0 || size == 0 || size/f > 2*want {
		// Too sparse: place every record again from its id.
		old := t.slots
		t.Reset(n)
		for _, s := range old {
			if s != 0 {
				if r := m[s-1]; r != None {
					t.Put(r)
				}
			}
		}
		return t.n
	}
	if f == 1 {
		t.renumberInPlace(m)
		return t.n
	}
	slots, meta := t.slots, t.meta
	t.slots = make([]int32, size/f)
	t.meta = make([]uint16, size/f)
	t.n = 0
	// From an empty slot on, records come in the order of their homes,
	// counted on past the end of the table rather than wrapping, and a
	// home in the table shrunk is the home divided by f, wrapped or not.
	// Placed in that order, each record lands on its home or just past
	// the one placed before it, which is where a linear probe would put
	// it, in the order of distances that Find relies on.
	start := 0
	for slots[start] != 0 {
		start++
	}
	small := len(t.slots)
	shift := -1 // f as a shift, when it is a power of two
	if f&(f-1) == 0 {
		shift = bits.TrailingZeros(uint(f))
	}
	failed := false
	last := -1 // where the record placed last landed, not wrapped
	for j := range size {
		u := start + 1 + j // the slot, not wrapped
		i := u
		if i >= size {
			i -= size
		}
		s := slots[i]
		if s == 0 {
			continue
		}
		r := m[s-1]
		if r == None {
			continue
		}
		t.n++
		if failed {
			t.lost = append(t.lost, r)
			continue
		}
		home := u - int(meta[i]>>8)
		if shift >= 0 {
			home >>= shift
		} else {
			home /= f
		}
		at := max(home, last+1)
		k := at
		for k >= small {
			k -= small
		}
		if d := at - home; d >= 0xff || t.slots[k] != 0 || t.n*5 > small*4 {
			// Too far from home, or more kept than sized for: the
			// rest wait in lost for a resize.
			failed = true
			t.lost = append(t.lost, r)
			continue
		}
		t.slots[k], t.meta[k] = r+1, uint16(at-home)<<8|meta[i]&0xff
		last = at
	}
	if failed {
		t.resize(slotsFor(max(len(t.slots), t.n) * 3 / 2))
	}
	return t.n
}

// renumberInPlace is Renumber keeping the size, in the slots the index
// has: the pass of keepInPlace, renaming each record r to m[r].
func (t *Index) renumberInPlace(m []int32) {
	t.keepInPlace(func(r int32) int32 { return m[r] })
}

// RemoveSet unmaps every record of gone the index holds, as Remove would
// one by one, in one pass over the slots that reads no id (keepInPlace).
func (t *Index) RemoveSet(gone arena.Set) {
	if t.n == 0 {
		return
	}
	t.keepInPlace(func(r int32) int32 {
		if gone.Has(r) {
			return None
		}
		return r
	})
}

// keepInPlace maps every record r of the index to f(r), dropping those f
// maps to None, in one pass over the slots that reads no id: from an
// empty slot on, each record kept moves back to its home or just past the
// one kept before it, which is where removing the others one by one would
// have shifted it. It moves no further from home than it was, to a slot
// already passed and emptied or its own, so it fits its distance byte and
// meets no record. It takes time in proportion to the slots.
func (t *Index) keepInPlace(f func(r int32) int32) {
	size := len(t.slots)
	start := 0
	for t.slots[start] != 0 {
		start++
	}
	last := -1 // where the record kept last lies, not wrapped
	for j := 1; j <= size; j++ {
		u := start + j // the slot, not wrapped
		i := u
		if i >= size {
			i -= size
		}
		s := t.slots[i]
		if s == 0 {
			continue
		}
		m := t.meta[i]
		t.slots[i], t.meta[i] = 0, 0
		r := f(s - 1)
		if r == None {
			t.n--
			continue
		}
		// A record lies no further from its home than the empty slot
		// before the run it is in, so home is not wrapped either.
		home := u - int(m>>8)
		at := max(home, last+1)
		last = at
		k := at
		if k >= size {
			k -= size
		}
		t.slots[k], t.meta[k] = r+1, uint16(at-home)<<8|m&0xff
	}
}

// Check reports the first fault of the index's layout, for tests: every
// record sits at its distance from its home with its hash byte, no
// record is nearer its home than the one before it in a probe (which
// lets Find stop early), and Len counts the records held.
func (t *Index) Check() error {
	n := 0
	for i, s := range t.slots {
		if s == 0 {
			if t.meta[i] != 0 {
				return fmt.Errorf("empty slot %d with meta %x", i, t.meta[i])
			}
			continue
		}
		n++
		h := maphash.Bytes(t.seed, t.key(s-1))
		d := (i - t.home(h) + len(t.slots)) % len(t.slots)
		if want := uint16(d)<<8 | uint16(h>>56); t.meta[i] != want {
			return fmt.Errorf("slot %d: meta %x, want %x", i, t.meta[i], want)
		}
		if prev := (i + len(t.slots) - 1) % len(t.slots); d > 0 && (t.slots[prev] == 0 || int(t.meta[prev]>>8) < d-1) {
			return fmt.Errorf("slot %d at distance %d after a slot at distance %d", i, d, t.meta[prev]>>8)
		}
	}
	if n != t.n {
		return fmt.Errorf("%d records in the slots, Len %d", n, t.n)
	}
	return nil
}

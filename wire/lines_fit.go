package wire

import (
	"slices"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// Pointer lines that fit: a pointer line carries the description of its
// segment, so that a model can choose what to recall. When a check ends
// over its budget and the lines it added, written with no description,
// would bring it within, those lines are written shorter: each with the
// longest start of its description that still fits (whole parts of it),
// or none, the lines added first keeping theirs first. The key and the
// recall instruction stay in every form, so recall by key, and by query,
// finds the segment as before. A line's text, once shown, does not
// change: only the lines a check adds are cut, and their text is kept
// (and saved) as it was written.

// shortLines are the pointer lines written shorter than their Spiller
// words them: the text of each, by pointer.
type shortLines map[pruneguard.Pointer]string

// pointerCutter is a Spiller that can word a pointer with its
// description cut to a length: *spill.Spiller is one.
type pointerCutter interface {
	PointerTextUpTo(p pruneguard.Pointer, n int) string
}

// lineText returns how the pointer lines of sp are written: as sp words
// them ([spill.PointerText] without sp), but those in short.
func lineText(sp pruneguard.Spiller, short shortLines) func(pruneguard.Pointer) string {
	text := spill.PointerText
	if sp != nil {
		text = pointerTextOf(sp)
	}
	if len(short) == 0 {
		return text
	}
	return func(p pruneguard.Pointer) string {
		if t, ok := short[p]; ok {
			return t
		}
		return text(p)
	}
}

// linePointers returns the distinct pointers of notes, in order: one
// line each.
func linePointers(notes []pruneguard.SpillNote) []pruneguard.Pointer {
	var out []pruneguard.Pointer
	for _, n := range notes {
		if !n.Pointer.IsZero() && !slices.Contains(out, n.Pointer) {
			out = append(out, n.Pointer)
		}
	}
	return out
}

// fitLines writes the lines of the pointers in added (those a check
// added, in order) shorter, in short, when over, which counts how far
// the body is over its budget with the lines as short holds them, is
// positive and written with no description they bring it to zero or
// below; it leaves short as it was otherwise. It returns the pointers
// whose line it cut. The Spiller must be a pointerCutter: the lines of
// another are left as they are.
func fitLines(sp pruneguard.Spiller, added []pruneguard.Pointer, short shortLines, over func() int) []pruneguard.Pointer {
	cut, ok := sp.(pointerCutter)
	if !ok || len(added) == 0 || over() <= 0 {
		return nil
	}
	full := lineText(sp, nil)
	var cuts []pruneguard.Pointer
	for _, p := range added {
		if bare := cut.PointerTextUpTo(p, 0); bare != full(p) {
			short[p] = bare
			cuts = append(cuts, p)
		}
	}
	if len(cuts) == 0 {
		return nil
	}
	if over() > 0 {
		for _, p := range cuts {
			delete(short, p)
		}
		over() // the caller writes the lines as they were
		return nil
	}
	kept := cuts[:0]
	for _, p := range cuts {
		if lengthen(cut, p, full(p), short, over) {
			kept = append(kept, p)
		}
	}
	return kept
}

// lengthen gives the line of p, written bare in short within budget,
// the longest start of its description with which over stays zero or
// below, and reports whether that is shorter than whole, its text in
// full (which short then leaves out).
func lengthen(cut pointerCutter, p pruneguard.Pointer, whole string, short shortLines, over func() int) bool {
	bare := short[p]
	last := ""
	for n := spill.MaxDescriptionLen; n > 0; n-- {
		t := cut.PointerTextUpTo(p, n)
		if t == bare {
			break
		}
		if t == last {
			continue
		}
		last = t
		short[p] = t
		if t == whole {
			delete(short, p)
		}
		if over() <= 0 {
			return t != whole
		}
	}
	short[p] = bare
	over()
	return true
}

package pruneguard

import "slices"

// Pointer lifetime. A message that may leave the prompt only because its
// content was spilled relies on its pointer until the decision is
// carried out: Prune asks the Resolver, and Apply asks again, so that a
// pointer that stopped resolving in between (a store expired it, a
// segment failed its check) never lets content go.

// reliedOn returns the messages of the decision that only their pointer
// let go, in transcript order: those the regenerability gate let go for
// their pointer and that the decision still evicts or stubs.
func (r *pruneRun) reliedOn() []int32 {
	var out []int32
	for _, p := range r.relied {
		if r.has(p, kEvict|kStub) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// lostPointers returns a *StaleError naming the messages of d whose
// pointer no longer resolves, or nil.
func (c *Context) lostPointers(d *Decision) error {
	var lost []MessageID
	for _, p := range d.relied {
		if !c.resolvable(c.pointer(p)) {
			lost = append(lost, c.id(p))
		}
	}
	if lost == nil {
		return nil
	}
	return &StaleError{Messages: lost, Reason: "spill pointers the decision relies on no longer resolve"}
}

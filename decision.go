package pruneguard

import (
	"math"
	"slices"
)

// Decision is the outcome of a successful [Context.Prune]: the closed
// prune set and what must accompany it. It is applied with
// [Context.Apply]. Fields may be added; do not compare Decisions whole.
// A Decision does not change after Prune returns, except for being marked
// applied, so its fields and methods may be read from any goroutine.
type Decision struct {
	// Evict is the closed prune set, in transcript order: whole units only.
	Evict []MessageID
	// Units are the units evicted whole, in transcript order.
	Units []UnitID
	// Stub are the results whose content will be replaced by a stub.
	Stub []MessageID
	// Freed is the number of tokens the decision frees.
	Freed int
	// DropSchemas are the tools whose schema may leave the prompt.
	DropSchemas []string
	// Compress are the accepted schema compressions (lossless, or lossy
	// with a tombstone).
	Compress []CompressedSchema
	// Lossy reports proposed compressions that lose constraints.
	Lossy []LossyCompression
	// Tombstones must be inserted by the runtime, one line per tool, when
	// it applies the decision.
	Tombstones []Tombstone
	// Retire names tombstoned tools whose last arguments leave with this
	// decision: their tombstones may go too.
	Retire []string
	// Pointers lists evicted or stubbed messages that were spilled: keep
	// their pointers where the model can follow them.
	Pointers []SpillNote
	// Refused lists what the plan named that the gates left out (SplitGrow
	// and SplitShrink, RegenDropUnsafe), with the reason.
	Refused []*Violation
	// Hoarded lists large reconstructible messages the decision leaves in
	// (see Config.HoardTokens).
	Hoarded []MessageID

	c     *Context
	gen   uint64 // the Prune's mark generation
	list  uint64 // sub-generation for unit listings
	epoch uint64
	// strict says the decision holds only at a commit boundary: the
	// boundary gate ran in the strict mode.
	strict  bool
	applied bool
	evict   []*msg
	stubs   []*msg
	stamps  []stamp
	// The audit log, compactly: one rec per evicted then stubbed message,
	// and the table of the units they belong to.
	recs    []rec
	unitTab []UnitID
	// argStamps: argument counts of the tools whose schema the decision
	// withdraws, compresses or un-tombstones, as Prune saw them.
	argStamps []argStamp
}

// SpillNote pairs an evicted message with the pointer to its content.
type SpillNote struct {
	Message MessageID
	Pointer Pointer
}

// toolCounts counts calls per tool; a plan touches few tools, so a slice
// searched in order beats a map.
type toolCounts []toolCount

type toolCount struct {
	tool string
	n    int
}

func (t *toolCounts) add(tool string) {
	for i := range *t {
		if (*t)[i].tool == tool {
			(*t)[i].n++
			return
		}
	}
	*t = append(*t, toolCount{tool, 1})
}

func (t toolCounts) get(tool string) int {
	for _, tc := range t {
		if tc.tool == tool {
			return tc.n
		}
	}
	return 0
}

type stamp struct {
	u   *unit
	ver uint64
}

// Empty reports whether the decision changes nothing.
func (d *Decision) Empty() bool {
	return len(d.Evict) == 0 && len(d.Stub) == 0 && len(d.DropSchemas) == 0 && len(d.Compress) == 0 && len(d.Retire) == 0
}

// finish fills the decision from the run: the closing set and the stub
// targets in transcript order, the audit log, the schema edits, and what
// Apply checks the decision against.
func (d *Decision) finish(r *pruneRun) {
	c := r.c
	d.evict, d.stubs = r.evict, r.stubs
	slices.SortFunc(d.evict, func(a, b *msg) int { return cmpSeq(a.seq, b.seq) })
	slices.SortFunc(d.stubs, func(a, b *msg) int { return cmpSeq(a.seq, b.seq) })
	_, stubTokens := c.cfg.stub()

	// Count the distinct units first, so that every slice is allocated
	// once at its size: a prune allocates in proportion to what it returns.
	mark := r.listMark()
	count := func(xs []*msg) (n int) {
		for _, x := range xs {
			if x.unit.listMark != mark {
				x.unit.listMark = mark
				n++
			}
		}
		return n
	}
	nEvictUnits := count(d.evict)
	nUnits := nEvictUnits + count(d.stubs)
	d.unitTab = make([]UnitID, 0, nUnits)
	d.stamps = make([]stamp, 0, nUnits)
	d.recs = make([]rec, 0, len(d.evict)+len(d.stubs))
	d.Evict = make([]MessageID, 0, len(d.evict))
	mark = r.listMark()
	add := func(x *msg) {
		if x.unit.listMark != mark {
			x.unit.listMark = mark
			x.unit.tab = int32(len(d.unitTab))
			d.unitTab = append(d.unitTab, x.unit.id())
			d.stamps = append(d.stamps, stamp{x.unit, x.unit.version})
		}
		d.recs = append(d.recs, rec{tokens: int32(min(x.m.Tokens, math.MaxInt32)), unit: x.unit.tab, class: r.classOf(x)})
		if !x.m.Pointer.IsZero() {
			d.Pointers = append(d.Pointers, SpillNote{x.m.ID, x.m.Pointer})
		}
	}
	for _, x := range d.evict {
		d.Evict = append(d.Evict, x.m.ID)
		d.Freed += x.m.Tokens
		add(x)
	}
	if r.whole {
		d.Units = d.unitTab[:nEvictUnits:nEvictUnits]
	}
	if len(d.stubs) > 0 {
		d.Stub = make([]MessageID, 0, len(d.stubs))
	}
	for _, x := range d.stubs {
		d.Stub = append(d.Stub, x.m.ID)
		if x.m.Tokens > stubTokens {
			d.Freed += x.m.Tokens - stubTokens
		}
		add(x)
	}
	for _, e := range r.edits {
		if e.compressed != nil {
			d.Compress = append(d.Compress, CompressedSchema{Tool: e.tool, Schema: e.compressed})
		} else {
			d.DropSchemas = append(d.DropSchemas, e.tool)
		}
		if e.tomb != nil {
			d.Tombstones = append(d.Tombstones, *e.tomb)
		}
	}
	d.Hoarded = r.hoarded()
	d.stampArgs(c)
}

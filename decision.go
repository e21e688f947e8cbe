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
//
// The zero Decision changes nothing and belongs to no Context: Apply
// refuses it with ErrForeignDecision.
type Decision struct {
	// Evict is the closed prune set, in transcript order: whole units only.
	Evict []MessageID
	// Units are the units evicted whole, in transcript order.
	Units []UnitID
	// Stub are the results whose content will be replaced by a stub.
	Stub []MessageID
	// Freed is the number of tokens the decision frees: those of the
	// messages it evicts, and of the results it stubs less the stubs'
	// (each stub counts as a stubbed message does: see
	// Config.PointerTokens; a stub not smaller frees nothing); with
	// Config.PointerTokens set, less PointerTokens for each pointer line
	// its evictions add; and with Config.Counter set, those of the
	// schemas it withdraws or compresses and of the tombstones it
	// retires, less those of the compressed schemas and tombstones it
	// adds. A decision that only adds tombstones or lines frees a
	// negative number.
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
	// their pointers where the model can follow them. A stubbed message
	// listed here must show its pointer's text (spill.PointerText says
	// where the content is and how to read it back), never the stub
	// text, which tells the model to call the tool again; a stubbed
	// message not listed here went because it is reconstructible (or no
	// step of a sealed plan needs it), and only it carries the stub text.
	// The Context keeps the pointer on the message after Apply.
	Pointers []SpillNote
	// Refused lists what the plan named that the gates left out (SplitGrow
	// and SplitShrink, RegenDropUnsafe), with the reason.
	Refused []*Violation
	// Hoarded lists large reconstructible messages the decision leaves in
	// (see Config.HoardTokens).
	Hoarded []MessageID

	c     *Context
	epoch uint64
	// compactions is the Context's count when the decision was made: a
	// compaction since moves the messages the decision names.
	compactions int
	// strict says the decision holds only at a commit boundary: the
	// boundary gate ran in the strict mode.
	strict  bool
	applied bool
	evict   []int32
	stubs   []int32
	stamps  []stamp
	// The audit log, compactly: one rec per evicted then stubbed message,
	// and the table of the units they belong to.
	recs    []rec
	unitTab []UnitID
	// argStamps: argument counts of the tools whose schema the decision
	// withdraws, compresses or un-tombstones, as Prune saw them.
	argStamps []argStamp
	// soundGen is Context.unsoundGen as Prune saw it.
	soundGen uint64
	// relied: the evicted or stubbed messages that may go only while
	// their pointer resolves; Apply asks the Resolver again.
	relied []int32
}

// SpillNote pairs an evicted message with the pointer to its content.
//
// The zero SpillNote names no message and no pointer.
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

// stamp records the version of a unit a decision names.
type stamp struct {
	unit int32
	ver  uint32
}

// Empty reports whether the decision changes nothing.
func (d *Decision) Empty() bool {
	return len(d.Evict) == 0 && len(d.Stub) == 0 && len(d.DropSchemas) == 0 && len(d.Compress) == 0 && len(d.Retire) == 0 &&
		len(d.Tombstones) == 0
}

// finish fills the decision from the run: the closing set and the stub
// targets in transcript order, the audit log, the schema edits, and what
// Apply checks the decision against. Every id it hands out is cut from
// one string.
func (d *Decision) finish(r *pruneRun) {
	c := r.c
	d.evict, d.stubs = r.evict, r.stubs
	slices.Sort(d.evict)
	slices.Sort(d.stubs)
	hoarded := r.hoarded()

	// The units, in the order of the messages, each once: counted first,
	// so that every slice is allocated once at its size and a prune
	// allocates in proportion to what it returns.
	count := func(ps []int32, t uint32) (n int) {
		for _, p := range ps {
			if un := c.unit(c.msg(p).unit); un.mark != t {
				un.mark = t
				n++
			}
		}
		return n
	}
	t := r.pass()
	nUnits := count(d.evict, t) + count(d.stubs, t)
	heads := make([]int32, 0, nUnits)
	d.stamps = make([]stamp, 0, nUnits)
	t = r.pass()
	unitsOf := func(ps []int32) {
		for _, p := range ps {
			u := c.msg(p).unit
			if un := c.unit(u); un.mark != t {
				un.mark, un.aux = t, int32(len(heads))
				heads = append(heads, un.head)
				d.stamps = append(d.stamps, stamp{u, un.version})
			}
		}
	}
	unitsOf(d.evict)
	nEvictUnits := len(heads)
	unitsOf(d.stubs)
	// Every id, cut from one string.
	d.Evict = make([]MessageID, len(d.evict))
	if len(d.stubs) > 0 {
		d.Stub = make([]MessageID, len(d.stubs))
	}
	d.unitTab = make([]UnitID, len(heads))
	if len(hoarded) > 0 {
		d.Hoarded = make([]MessageID, len(hoarded))
	}
	all, at := c.joinIDs(d.evict, d.stubs, heads, hoarded), 0
	next := func(p int32) string {
		l := int(c.msg(p).idLen)
		at += l
		return all[at-l : at]
	}
	for i, p := range d.evict {
		d.Evict[i] = MessageID(next(p))
	}
	for i, p := range d.stubs {
		d.Stub[i] = MessageID(next(p))
	}
	for i, p := range heads {
		d.unitTab[i] = UnitID(next(p))
	}
	for i, p := range hoarded {
		d.Hoarded[i] = MessageID(next(p))
	}

	d.recs = make([]rec, 0, len(d.evict)+len(d.stubs))
	add := func(p int32, id MessageID, tokens int) {
		rc := rec{tokens: int32(min(tokens, math.MaxInt32)), unit: c.unit(c.msg(p).unit).aux, class: r.classOf(p)}
		if c.carriesResult(p) {
			rc.hash = hashOf(c.content(p))
		}
		d.recs = append(d.recs, rc)
		if ptr := c.pointer(p); !ptr.IsZero() {
			d.Pointers = append(d.Pointers, SpillNote{id, ptr})
		}
	}
	var lined map[Pointer]struct{} // the pointer lines the evictions add
	for i, p := range d.evict {
		tokens := c.tokensOf(p)
		d.Freed += tokens
		if ptr, ok := c.lineAdds(p); ok {
			if _, seen := lined[ptr]; !seen {
				if lined == nil {
					lined = make(map[Pointer]struct{})
				}
				lined[ptr] = struct{}{}
				d.Freed -= c.cfg.PointerTokens
			}
		}
		add(p, d.Evict[i], tokens)
	}
	if r.whole {
		d.Units = d.unitTab[:nEvictUnits:nEvictUnits]
	}
	for i, p := range d.stubs {
		n := c.tokensOf(p)
		if stub := c.stubTokens(p); n > stub {
			d.Freed += n - stub
		}
		add(p, d.Stub[i], n)
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
	d.stampArgs(c)
	d.finishTools(r)
	d.relied = r.reliedOn()
}

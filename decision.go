package pruneguard

import (
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
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
	// Lossy reports proposed compressions that lose constraints, or
	// narrow the schema against arguments that stay: the gate treats them
	// as withdrawing the schema (a tombstone stands, or the plan is
	// refused).
	Lossy []LossyCompression
	// Narrowed reports accepted compressions that narrow the schema
	// without contradicting an argument that stays.
	Narrowed []NarrowedCompression
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
	// Summary is the accepted summary of a summary plan, nil for any
	// other: its Replace is the run, whole units in transcript order (as
	// Evict), its Tokens what it counts. Apply puts the summary message
	// in the place of the run's first message.
	Summary *Summary

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
	// holds: a summary's, the facts of its run it carries.
	holds []heldFact
	// takes and adds are the tokens Apply takes from what the Context
	// holds and adds to it (stubs, pointer lines, schemas, tombstones, a
	// summary), for the check that the total fits an int.
	takes int
	adds  tally
}

// fits reports whether what the Context holds, once d is applied, fits
// an int. Under a lock.
func (d *Decision) fits(c *Context) bool {
	return !d.adds.over && d.adds.n <= math.MaxInt-max(0, c.heldTokens()-d.takes)
}

// SpillNote pairs an evicted message with the pointer to its content.
//
// The zero SpillNote names no message and no pointer.
type SpillNote struct {
	Message MessageID
	Pointer Pointer
}

// record fills rc with the audit record of message p, whose record is
// x, all but the hash of a result's content unless it is empty, and
// returns its tokens and, for a result, the length of its content.
func (r *pruneRun) record(rc *rec, p int32, x *mrec) (tokens, hashLen int) {
	c := r.c
	tokens = int(x.tokens)
	if x.flags&mBig != 0 {
		tokens = c.sideOf(p).tokens
	}
	*rc = rec{tokens: int32(min(tokens, math.MaxInt32)), unit: c.unit(x.unit).aux, class: r.classOfRec(p, x)}
	carries := x.ans != none // it holds a result: it answers a call, or carries a server call
	for k := x.call; !carries && k != none; k = c.call(k).sib {
		carries = c.call(k).flags&cServer != 0
	}
	if carries {
		// Empty content, as in a wire body's view, hashes to a constant.
		if hashLen = len(c.content(p)); hashLen == 0 {
			rc.hash = emptyHash
		} else {
			rc.result = true
		}
	}
	return tokens, hashLen
}

// hashResults fills the hash of each result's audit record from its
// content. Hashing is most of what a large decision's records cost, so
// from parallelHashMin bytes on it is shared among up to
// runtime.GOMAXPROCS(0) goroutines, each taking a run of records of
// about the same bytes and writing only their hashes; the decision is
// the same either way. It returns when every hash is written. Under the
// read lock, which the goroutines share: they only read the Context.
func (d *Decision) hashResults(c *Context, bytes int) {
	hash := func(from, to int) {
		for i := from; i < to; i++ {
			if rc := &d.recs[i]; rc.result {
				rc.hash = hashOf(c.content(d.at(i)))
			}
		}
	}
	if bytes == 0 {
		return // no result holds content
	}
	parts := min(runtime.GOMAXPROCS(0), maxHashParts, bytes/parallelHashMin)
	if parts <= 1 {
		hash(0, len(d.recs))
		return
	}
	// Cut the records into parts of about bytes/parts each; the last part
	// is this goroutine's.
	var wg sync.WaitGroup
	from, sum, part := 0, 0, bytes/parts
	for i := range d.recs {
		if d.recs[i].result {
			sum += len(c.content(d.at(i)))
		}
		if sum >= part && parts > 1 {
			wg.Add(1)
			go func(from, to int) {
				defer wg.Done()
				hash(from, to)
			}(from, i+1)
			from, sum = i+1, 0
			parts--
		}
	}
	hash(from, len(d.recs))
	wg.Wait()
}

// parallelHashMin is the fewest bytes of results per goroutine from
// which hashResults shares the hashing out, and maxHashParts the most
// goroutines it uses. Variables so that tests can choose the path.
var parallelHashMin, maxHashParts = 256 << 10, 4

// toolCounts counts calls per tool; a plan touches few tools, so a slice
// searched in order beats a map.
type toolCounts []toolCount

type toolCount struct {
	tool string
	idx  int32 // the tool's record in Context.tools
	n    int
}

// add counts a call to the tool whose record is Context.tools[idx].
func (t *toolCounts) add(idx int32, tool string) {
	for i := range *t {
		if (*t)[i].idx == idx {
			(*t)[i].n++
			return
		}
	}
	*t = append(*t, toolCount{tool, idx, 1})
}

func (t toolCounts) get(tool string) int {
	for _, tc := range t {
		if tc.tool == tool {
			return tc.n
		}
	}
	return 0
}

// unitMet is a unit a decision names: the position of its first message,
// and the message it was met at, as an index in Decision.evict then
// Decision.stubs.
type unitMet struct{ head, at int32 }

// at returns the position of the i-th message the decision takes: an
// index in d.evict, then d.stubs.
func (d *Decision) at(i int) int32 {
	if i < len(d.evict) {
		return d.evict[i]
	}
	return d.stubs[i-len(d.evict)]
}

// id returns the id of the i-th message the decision takes, counted as
// at counts.
func (d *Decision) id(i int) MessageID {
	if i < len(d.evict) {
		return d.Evict[i]
	}
	return d.Stub[i-len(d.evict)]
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
// Apply checks the decision against.
//
// The ids it hands out are the plan's own strings where the plan named
// the same message at the same place in its list (as a policy walking the
// transcript in order does), a unit's id is the string of its first
// message where the decision takes that message, and every other id is
// cut from one string. It reads the messages in three passes: one counts
// the units and the bytes of the ids to write, so that every slice is
// allocated once at its size and a prune allocates in proportion to what
// it returns; one writes those ids and lists the units, in the order of
// the messages, each once; one cuts the ids and makes the audit log.
func (d *Decision) finish(r *pruneRun) {
	c := r.c
	d.evict, d.stubs = r.evict, r.stubs
	slices.Sort(d.evict)
	slices.Sort(d.stubs)
	hoarded := r.hoarded()
	ids := idCutter{c: c, plan: r.p.Evict}
	nUnits, size := d.measureIDs(r, &ids, hoarded)
	// Made here, so that the list of units stays on the stack when short.
	heads, nEvictUnits := d.writeIDs(r, &ids, hoarded, make([]unitMet, 0, nUnits), size)

	d.Evict = make([]MessageID, len(d.evict))
	if len(d.stubs) > 0 {
		d.Stub = make([]MessageID, len(d.stubs))
	}
	d.recs = make([]rec, len(d.evict)+len(d.stubs))
	hashBytes := d.cutEvictions(r, &ids)
	hashBytes += d.cutStubs(r, &ids)
	d.hashResults(c, hashBytes)
	d.unitTab = make([]UnitID, len(heads))
	for i, h := range heads {
		if h.head == d.at(int(h.at)) {
			d.unitTab[i] = UnitID(d.id(int(h.at)))
		} else {
			d.unitTab[i] = UnitID(ids.next(c.msg(h.head)))
		}
	}
	if r.whole {
		d.Units = d.unitTab[:nEvictUnits:nEvictUnits]
	}
	if len(hoarded) > 0 {
		d.Hoarded = make([]MessageID, len(hoarded))
		for i, p := range hoarded {
			d.Hoarded[i] = MessageID(ids.next(c.msg(p)))
		}
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
	if r.sum != nil && len(d.evict) > 0 {
		d.finishSummary(r) // a run the gates left empty replaces nothing
	}
}

// idCutter hands out the ids of a decision's messages: the plan's own
// strings where it names a message at the same place in its list, the
// others cut in turn from one string written end to end.
type idCutter struct {
	c    *Context
	plan []MessageID // the plan's evictions
	all  string      // the ids written
	at   int         // the length of those cut
}

// named reports whether the plan names the i-th message evicted, x, as
// its own i-th: its string can be handed out again.
func (w *idCutter) named(i int, x *mrec) bool {
	return i < len(w.plan) && len(w.plan[i]) == int(x.idLen) && string(w.plan[i]) == string(w.c.text.Bytes(x.text)[:x.idLen])
}

// next cuts the id of x, the next one written.
func (w *idCutter) next(x *mrec) string {
	l := int(x.idLen)
	w.at += l
	return w.all[w.at-l : w.at]
}

// measureIDs counts the units the decision takes and the bytes of the ids
// to write, so that every slice is allocated once at its size.
func (d *Decision) measureIDs(r *pruneRun, ids *idCutter, hoarded []int32) (nUnits, size int) {
	c := r.c
	t := r.pass()
	for k, ps := range [2][]int32{d.evict, d.stubs} {
		for i, p := range ps {
			x := c.msg(p)
			if k == 1 || !ids.named(i, x) {
				size += int(x.idLen)
			}
			if un := c.unit(x.unit); un.mark != t {
				un.mark = t
				nUnits++
				if un.head != p {
					size += int(c.msg(un.head).idLen)
				}
			}
		}
	}
	for _, p := range hoarded {
		size += int(c.msg(p).idLen)
	}
	return nUnits, size
}

// writeIDs writes the ids to cut, end to end in one string: the evicted
// the plan does not name, the stubbed, the units' first messages the
// decision does not take, and the hoarded. It appends to heads, which
// has room for them, the units in the order of the messages, each once
// by the message it was met at (an index in d.evict then d.stubs),
// stamps their versions, and returns them with the number met among the
// evictions.
func (d *Decision) writeIDs(r *pruneRun, ids *idCutter, hoarded []int32, heads []unitMet, size int) ([]unitMet, int) {
	c := r.c
	var b strings.Builder
	b.Grow(size)
	d.stamps = make([]stamp, 0, cap(heads))
	nEvictUnits := 0
	t := r.pass()
	base := 0
	for k, ps := range [2][]int32{d.evict, d.stubs} {
		for i, p := range ps {
			x := c.msg(p)
			if k == 1 || !ids.named(i, x) {
				b.Write(c.text.Bytes(x.text)[:x.idLen])
			}
			if un := c.unit(x.unit); un.mark != t {
				un.mark, un.aux = t, int32(len(heads))
				heads = append(heads, unitMet{un.head, int32(base + i)})
				d.stamps = append(d.stamps, stamp{x.unit, un.version})
			}
		}
		base += len(ps)
		if k == 0 {
			nEvictUnits = len(heads)
		}
	}
	for _, h := range heads {
		if h.head != d.at(int(h.at)) {
			b.Write(c.msgID(h.head))
		}
	}
	for _, p := range hoarded {
		b.Write(c.msgID(p))
	}
	ids.all = b.String()
	return heads, nEvictUnits
}

// cutEvictions hands out the ids of the evictions and makes their audit
// records, counting the tokens freed less the pointer lines the
// evictions add, each once. It returns the bytes of content to hash.
func (d *Decision) cutEvictions(r *pruneRun, ids *idCutter) (hashBytes int) {
	c := r.c
	var lined map[Pointer]struct{} // the pointer lines the evictions add
	for i, p := range d.evict {
		x := c.msg(p)
		var id MessageID
		if ids.named(i, x) {
			id = ids.plan[i]
		} else {
			id = MessageID(ids.next(x))
		}
		d.Evict[i] = id
		tokens, n := r.record(&d.recs[i], p, x)
		hashBytes += n
		d.Freed += tokens
		d.takes += tokens
		if x.side == 0 {
			continue // no pointer
		}
		ptr := c.pointer(p)
		if ptr.IsZero() {
			continue
		}
		d.Pointers = append(d.Pointers, SpillNote{id, ptr})
		if lp, ok := c.lineAdds(p); ok && r.sum == nil {
			if _, seen := lined[lp]; !seen {
				if lined == nil {
					lined = make(map[Pointer]struct{})
				}
				lined[lp] = struct{}{}
				d.Freed -= c.cfg.PointerTokens
				d.adds.add(c.cfg.PointerTokens)
			}
		}
	}
	return hashBytes
}

// cutStubs hands out the ids of the stubs and makes their audit records,
// counting the tokens freed. It returns the bytes of content to hash.
func (d *Decision) cutStubs(r *pruneRun, ids *idCutter) (hashBytes int) {
	c := r.c
	for i, p := range d.stubs {
		x := c.msg(p)
		id := MessageID(ids.next(x))
		d.Stub[i] = id
		n, h := r.record(&d.recs[len(d.evict)+i], p, x)
		hashBytes += h
		stub := c.stubTokens(p)
		if n > stub {
			d.Freed += n - stub
		}
		d.takes += n
		d.adds.add(stub)
		if x.side != 0 {
			if ptr := c.pointer(p); !ptr.IsZero() {
				d.Pointers = append(d.Pointers, SpillNote{id, ptr})
			}
		}
	}
	return hashBytes
}

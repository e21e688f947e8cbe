package pruneguard

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"

	"github.com/pruneguard/pruneguard/internal/schemadiff"
)

// Config sets how a [Context]'s gates decide. It is a plain value, copied
// into the Context; its Oracle and Resolver are called from whichever
// goroutine calls Prune, so they must be safe for that. The zero Config is the
// strictest reading of each gate: any pending call or streaming message
// defers every prune, split units grow to whole units, any unsafe
// candidate refuses the whole plan, tombstones are available, and
// messages with no tool origin are reconstructible.
type Config struct {
	// Boundary chooses the strict (default) or relaxed commit boundary.
	Boundary BoundaryMode
	// Regen chooses whether one unsafe candidate refuses the whole plan
	// (RegenRefuse, the default) or only its own unit (RegenDropUnsafe).
	Regen RegenMode
	// Oracle, if set, classifies messages that carry no explicit Class.
	Oracle Oracle
	// Resolver, if set, decides whether spill pointers still resolve.
	// Without one no pointer counts.
	Resolver Resolver
	// TextClass is the class of messages that answer no call and carry no
	// explicit class (user, assistant and system text). Zero means
	// Reconstructible: mark what must stay with Facts, Class or Pin.
	TextClass Class
	// NoTombstones says the runtime cannot insert tombstones at all.
	NoTombstones bool
	// Ceiling, when positive, is the hard token limit: a Prune that must
	// defer while the Context holds more tokens than this fails loudly
	// with a [*CeilingError] instead, and a [Guard] with no ceiling of its
	// own uses it.
	Ceiling int
	// HoardTokens, when positive, makes every decision list in
	// [Decision.Hoarded] the reconstructible messages of at least this
	// many tokens that it leaves in the prompt.
	HoardTokens int
	// StubText replaces a stubbed result's content. Empty means
	// DefaultStubText. StubTokens is its token count (default
	// DefaultStubTokens).
	StubText   string
	StubTokens int
}

// RegenMode chooses what the regenerability gate does with an unsafe
// candidate.
type RegenMode uint8

const (
	// RegenRefuse, the default, refuses the whole plan.
	RegenRefuse RegenMode = iota
	// RegenDropUnsafe leaves out the unsafe candidates' units and reports
	// them in [Decision.Refused].
	RegenDropUnsafe
)

// DefaultStubText is the placeholder a stubbed tool result carries, and
// DefaultStubTokens the token count the guard gives it.
const (
	DefaultStubText   = "[tool result removed to save context; call the tool again if you need it]"
	DefaultStubTokens = 8
)

func (cfg Config) stub() ([]byte, int) {
	text, n := cfg.StubText, cfg.StubTokens
	if text == "" {
		text = DefaultStubText
	}
	if n <= 0 {
		n = DefaultStubTokens
	}
	return []byte(text), n
}

// Plan is what a salience policy proposes: messages to evict, results to
// stub, schemas to withdraw or compress. The guard disposes. A Plan is a
// plain value; Prune only reads it.
type Plan struct {
	// Evict names messages to remove from the prompt.
	Evict []MessageID
	// Stub names tool results whose content should be replaced by a short
	// placeholder while the call, the result and their ids stay. The
	// content is gone either way, so the regenerability gate applies.
	Stub []MessageID
	// DropSchemas names tools whose schema should leave the prompt.
	DropSchemas []string
	// CompressSchemas proposes smaller schemas. One that drops required
	// fields, enum members or types counts as withdrawing the schema.
	CompressSchemas map[string]json.RawMessage
	// Split says how to treat units the plan names only in part.
	Split SplitMode
}

// Empty reports whether the plan proposes nothing.
func (p Plan) Empty() bool {
	return len(p.Evict) == 0 && len(p.Stub) == 0 && len(p.DropSchemas) == 0 && len(p.CompressSchemas) == 0
}

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

	c      *Context
	gen    uint64 // the Prune's mark generation
	list   uint64 // sub-generation for unit listings
	tools  toolCounts
	evict  []*msg
	stubs  []*msg
	stamps []stamp
	// The audit log, compactly: one rec per evicted then stubbed message,
	// and the table of the units they belong to.
	recs    []rec
	unitTab []UnitID
	epoch   uint64
	applied bool
	// argStamps: argument counts of the tools whose schema the decision
	// withdraws, compresses or un-tombstones, as Prune saw them.
	argStamps []argStamp
}

// Record is one audit entry of a [Decision]. A spilled message's pointer
// is in [Decision.Pointers].
type Record struct {
	Message MessageID
	Unit    UnitID
	Class   Class
	Tokens  int
	Stubbed bool // the content was stubbed; the message stays
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

type rec struct {
	tokens int32 // the message's tokens when the decision was made
	unit   int32 // index in unitTab
	class  Class
}

type stamp struct {
	u   *unit
	ver uint64
}

// Empty reports whether the decision changes nothing.
func (d *Decision) Empty() bool {
	return len(d.Evict) == 0 && len(d.Stub) == 0 && len(d.DropSchemas) == 0 && len(d.Compress) == 0 && len(d.Retire) == 0
}

func (d *Decision) stubbed(x *msg) bool { return x.stubMark == d.gen }

func (d *Decision) markStub(x *msg) {
	x.stubMark = d.gen
	d.stubs = append(d.stubs, x)
}

func (d *Decision) inEvict(x *msg) bool { return x.evictMark == d.gen }

func (d *Decision) markEvict(x *msg) { x.evictMark = d.gen }

func (d *Decision) add(tool string, compressed json.RawMessage, ts *Tombstone) {
	if compressed != nil {
		d.Compress = append(d.Compress, CompressedSchema{Tool: tool, Schema: compressed})
	} else {
		d.DropSchemas = append(d.DropSchemas, tool)
	}
	if ts != nil {
		d.Tombstones = append(d.Tombstones, *ts)
	}
}

// Prune decides whether plan p may be carried out, and what it really
// takes. It changes nothing; pass the decision to [Context.Apply].
//
// The gates run in this order, and every violation of every gate is
// reported at once:
//
//  1. Commit boundary. In the strict mode (the default) a pending call or
//     a streaming message anywhere defers the prune ([*DeferredError]). A
//     unit named in part is grown, shrunk or refused as p.Split says; a
//     unit with a pinned message, and in the relaxed mode a unit in
//     flight, is never pruned. The result is a union of whole units.
//  2. Regenerability. Every evicted or stubbed message must be
//     reconstructible, or spilled behind a resolvable pointer, or outside
//     every step of a sealed plan; no message a pending planned step names
//     may go. Facts make a message irreducible whatever else is said.
//  3. Evict-or-tombstone, over what survives the first two: a schema may
//     leave when no arguments of calls to its tool survive, or behind a
//     tombstone; a mutation tool that cannot be tombstoned keeps it.
//
// A plan naming a message, tool or schema the Context does not hold is an
// [*InputError]. A refused plan yields a [*PruneError]. Equal Contexts and
// plans give equal decisions. The cost is proportional to the plan and
// the units it touches, not to the length of the Context; the one
// exception is the hoarding report, when Config.HoardTokens is set, which
// looks at every message of at least that many tokens.
func (c *Context) Prune(p Plan) (*Decision, error) {
	return c.prune(p, true)
}

// prune is Prune; with ceiling false a deferral past Config.Ceiling stays
// a deferral, for the Guard, which applies its own ceiling.
func (c *Context) prune(p Plan, ceiling bool) (*Decision, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	// A zero Context's nil maps read as empty: only an empty plan is valid.
	if err := c.checkPlan(p); err != nil {
		return nil, err
	}
	c.pruneMu.Lock()
	defer c.pruneMu.Unlock()
	c.pruneGen++
	d := &Decision{c: c, epoch: c.epoch, gen: c.pruneGen}
	d.evict = make([]*msg, 0, len(p.Evict))

	vs, deferred := c.boundaryGate(p, d)
	if deferred != nil {
		if ceiling && c.cfg.Ceiling > 0 && c.tokens > c.cfg.Ceiling {
			return nil, &CeilingError{Tokens: c.tokens, Ceiling: c.cfg.Ceiling, Cause: deferred}
		}
		return nil, deferred
	}

	// Regenerability, over the closed set and the stub targets.
	var unsafeUnits []*unit
	d.list++
	mark := d.gen + d.list<<48
	for _, first := range d.evict {
		u := first.unit
		if u.listMark == mark {
			continue
		}
		u.listMark = mark
		var uv []*Violation
		for _, x := range u.members {
			if d.inEvict(x) {
				uv = append(uv, c.regenCheck(x)...)
			}
		}
		if len(uv) > 0 {
			unsafeUnits = append(unsafeUnits, u)
			if c.cfg.Regen == RegenDropUnsafe {
				d.Refused = append(d.Refused, uv...)
			} else {
				vs = append(vs, uv...)
			}
		}
	}
	var okStubs []*msg
	for _, x := range d.stubs {
		if sv := c.regenCheck(x); len(sv) > 0 {
			if c.cfg.Regen == RegenDropUnsafe {
				d.Refused = append(d.Refused, sv...)
			} else {
				vs = append(vs, sv...)
			}
			continue
		}
		okStubs = append(okStubs, x)
	}
	if c.cfg.Regen == RegenDropUnsafe {
		d.stubs = okStubs
		for _, u := range unsafeUnits {
			d.dropUnit(u)
		}
	}

	// Evict-or-tombstone, after message eviction is settled.
	for _, x := range d.evict {
		for _, r := range x.calls {
			d.tools.add(r.tool)
		}
	}
	vs = append(vs, c.schemaGate(p, d.tools, d)...)

	if len(vs) > 0 {
		sortViolations(vs)
		return nil, &PruneError{Violations: vs}
	}
	if len(d.Refused) > 0 {
		sortViolations(d.Refused)
	}
	d.finish(c)
	d.tools = nil
	return d, nil
}

// checkPlan rejects a plan that names what the Context does not hold.
func (c *Context) checkPlan(p Plan) error {
	for _, id := range p.Evict {
		if _, ok := c.byID[id]; !ok {
			return inputErr("plan.evict", string(id), ErrUnknownMessage)
		}
	}
	for _, id := range p.Stub {
		x, ok := c.byID[id]
		if !ok {
			return inputErr("plan.stub", string(id), ErrUnknownMessage)
		}
		if len(x.results) == 0 {
			return inputErr("plan.stub", string(id), ErrNotResult)
		}
	}
	for _, name := range p.DropSchemas {
		if r, ok := c.tools[name]; !ok || !r.registered {
			return inputErr("plan.drop_schemas", name, ErrUnknownTool)
		}
	}
	// In name order, so that equal plans give equal errors.
	for _, name := range slices.Sorted(maps.Keys(p.CompressSchemas)) {
		r, ok := c.tools[name]
		if !ok || !r.registered {
			return inputErr("plan.compress_schemas", name, ErrUnknownTool)
		}
		if _, err := schemadiff.Compare(r.t.Schema, p.CompressSchemas[name]); err != nil {
			return inputErr("plan.compress_schemas", name, ErrBadSchema)
		}
	}
	return nil
}

func (d *Decision) dropUnit(u *unit) {
	d.evict = slices.DeleteFunc(d.evict, func(x *msg) bool {
		if x.unit == u {
			x.evictMark = 0
			return true
		}
		return false
	})
}

// finish fills the exported fields from the internal sets.
func (d *Decision) finish(c *Context) {
	slices.SortFunc(d.evict, func(a, b *msg) int { return cmpSeq(a.seq, b.seq) })
	slices.SortFunc(d.stubs, func(a, b *msg) int { return cmpSeq(a.seq, b.seq) })
	_, stubTokens := c.cfg.stub()

	// Count the distinct units first, so that every slice is allocated
	// once at its size: a prune allocates in proportion to what it returns.
	d.list++
	mark := d.gen + d.list<<48
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
	d.list++
	mark = d.gen + d.list<<48
	add := func(x *msg) {
		if x.unit.listMark != mark {
			x.unit.listMark = mark
			x.unit.tab = int32(len(d.unitTab))
			d.unitTab = append(d.unitTab, x.unit.id())
			d.stamps = append(d.stamps, stamp{x.unit, x.unit.version})
		}
		d.recs = append(d.recs, rec{tokens: int32(min(x.m.Tokens, math.MaxInt32)), unit: x.unit.tab, class: x.pruneClass})
		if !x.m.Pointer.IsZero() {
			d.Pointers = append(d.Pointers, SpillNote{x.m.ID, x.m.Pointer})
		}
	}
	for _, x := range d.evict {
		d.Evict = append(d.Evict, x.m.ID)
		d.Freed += x.m.Tokens
		add(x)
	}
	if c.disabled&disableBoundary == 0 {
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
	d.Hoarded = c.hoarded(d)
	d.stampArgs(c)
}

// Records returns the audit log of the decision: one entry per evicted or
// stubbed message, evictions first, each in transcript order, with the
// regenerability class it had when the decision was made. Log it:
// correlated with [ToolState.Refetches] it shows pruning that cost a
// re-run.
func (d *Decision) Records() []Record {
	out := make([]Record, len(d.recs))
	for i, r := range d.recs {
		out[i] = Record{Unit: d.unitTab[r.unit], Class: r.class, Tokens: int(r.tokens)}
		if i < len(d.Evict) {
			out[i].Message = d.Evict[i]
		} else {
			out[i].Message, out[i].Stubbed = d.Stub[i-len(d.Evict)], true
		}
	}
	return out
}

// Apply carries out a decision of [Context.Prune] atomically: it removes
// the evicted messages, stubs the results, and records withdrawn,
// compressed and tombstoned schemas. It refuses with a [*StaleError],
// changing nothing, when events since Prune invalidated the decision: a
// unit it names changed (a chunk, a result, a coupling, a pin, a spill, a
// new step reference), the tool registry or the task plan changed, or, in
// the strict mode, the Context left the commit boundary. A decision can
// be applied once, to the Context that made it.
func (c *Context) Apply(d *Decision) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if d == nil || d.c != c || d.applied {
		return inputErr("apply", "", ErrForeignDecision)
	}
	if c.disabled&disableBoundary == 0 && c.cfg.Boundary == BoundaryStrict && (c.nPending > 0 || len(c.open) > 0) && !d.Empty() {
		return &StaleError{Reason: "the context is no longer at a commit boundary"}
	}
	var changed []UnitID
	stale := false
	for _, s := range d.stamps {
		if s.u.dead || s.u.version != s.ver {
			stale = true
			// A unit merged into another is named by the one that holds
			// its messages now.
			u := s.u
			for u.into != nil {
				u = u.into
			}
			if len(u.members) > 0 && !slices.Contains(changed, u.id()) {
				changed = append(changed, u.id())
			}
		}
	}
	if stale {
		return &StaleError{Units: changed, Reason: "units changed since the decision"}
	}
	if d.epoch != c.epoch {
		return &StaleError{Reason: "tools, steps or earlier decisions changed the context"}
	}
	if d.argsChanged() {
		return &StaleError{Reason: "calls to a tool whose schema the decision withdraws arrived since the decision"}
	}

	for i, x := range d.evict {
		for _, r := range x.results {
			c.forget(r, d.recs[i].class)
		}
		c.remove(x)
	}
	text, n := c.cfg.stub()
	for i, x := range d.stubs {
		for _, r := range x.results {
			c.forget(r, d.recs[len(d.evict)+i].class)
		}
		delta := n - x.m.Tokens
		x.m.Content = slices.Clone(text)
		x.m.Tokens = n
		x.stubbed = true
		x.unit.tokens += delta
		x.unit.version++
		c.tokens += delta
		c.trackLarge(x)
	}
	tomb := make(map[string]bool, len(d.Tombstones))
	for _, t := range d.Tombstones {
		tomb[t.Tool] = true
	}
	for _, name := range d.DropSchemas {
		r := c.tools[name]
		r.resident, r.compressed = false, nil
		r.tombstoned = tomb[name]
	}
	for _, cs := range d.Compress {
		r := c.tools[cs.Tool]
		r.compressed = slices.Clone(cs.Schema)
		r.tombstoned = tomb[cs.Tool]
	}
	for _, name := range d.Retire {
		c.tools[name].tombstoned = false
	}
	d.applied = true
	c.epoch++
	return nil
}

// remove takes x out of the transcript and its unit.
func (c *Context) remove(x *msg) {
	if x.prev != nil {
		x.prev.next = x.next
	} else {
		c.head = x.next
	}
	if x.next != nil {
		x.next.prev = x.prev
	} else {
		c.tail = x.prev
	}
	x.prev, x.next = nil, nil
	delete(c.byID, x.m.ID)
	delete(c.large, x)
	c.tokens -= x.m.Tokens

	u := x.unit
	u.members = slices.DeleteFunc(u.members, func(m *msg) bool { return m == x })
	u.tokens -= x.m.Tokens
	if x.m.Pinned {
		u.pinned--
	}
	if x.open {
		u.open--
		delete(c.open, x)
	}
	for _, r := range x.calls {
		if r.pendingN {
			r.pendingN = false
			u.pending--
			c.nPending--
		}
		if c.pending[r.id] == r {
			delete(c.pending, r.id)
		}
		if c.answered[r.id] == r {
			delete(c.answered, r.id)
		}
		c.gone[r.id] = struct{}{}
		if t := c.tools[r.tool]; t != nil {
			t.args--
			delete(t.live, r)
		}
	}
	for _, r := range x.results {
		if r.result == x {
			r.result = nil
		}
	}
	u.version++
	if len(u.members) == 0 {
		u.dead = true
	}
}

// Policy proposes what to prune. It sees a snapshot of the Context and
// the number of tokens to free, and returns a [Plan]; the guard then
// decides what of it is safe. Implementations must be safe for the
// concurrency their callers use; the built-in ones are stateless values.
type Policy interface {
	Propose(entries []Entry, need int) Plan
}

// PolicyFunc adapts a function to a [Policy].
type PolicyFunc func(entries []Entry, need int) Plan

// Propose calls f.
func (f PolicyFunc) Propose(entries []Entry, need int) Plan { return f(entries, need) }

// unitsInOrder groups entries by unit, in order of each unit's first entry.
func unitsInOrder(entries []Entry) (order []UnitID, members map[UnitID][]Entry) {
	members = make(map[UnitID][]Entry)
	for _, e := range entries {
		if _, ok := members[e.Unit]; !ok {
			order = append(order, e.Unit)
		}
		members[e.Unit] = append(members[e.Unit], e)
	}
	return order, members
}

func prunable(es []Entry) bool {
	for _, e := range es {
		if e.Pinned || e.Open || e.Pending {
			return false
		}
	}
	return true
}

// OldestFirst proposes whole units, oldest first, until enough tokens
// would be freed. It skips units that are pinned or in flight, and keeps
// the last Keep messages of the transcript, with the units they belong
// to, out of its proposals.
type OldestFirst struct {
	Keep int
}

// Propose implements [Policy].
func (o OldestFirst) Propose(entries []Entry, need int) Plan {
	kept := make(map[UnitID]bool)
	if o.Keep > 0 {
		// A unit with a message among the last Keep stays whole.
		for _, e := range entries[max(0, len(entries)-o.Keep):] {
			kept[e.Unit] = true
		}
	}
	order, members := unitsInOrder(entries)
	var p Plan
	freed := 0
	for _, u := range order {
		if freed >= need {
			break
		}
		es := members[u]
		if kept[u] || !prunable(es) {
			continue
		}
		for _, e := range es {
			p.Evict = append(p.Evict, e.ID)
			freed += e.Tokens
		}
	}
	return p
}

// LargestResultsFirst proposes the largest tool results first until
// enough tokens would be freed: their whole units, or with Stub set, the
// results alone replaced by stubs. When stubbing it skips results of
// MinTokens or fewer (zero means 8, the default stub's size), which a
// stub would not make smaller.
type LargestResultsFirst struct {
	Stub      bool
	MinTokens int
}

func stubFloor(n int) int {
	if n <= 0 {
		return DefaultStubTokens
	}
	return n
}

// Propose implements [Policy].
func (l LargestResultsFirst) Propose(entries []Entry, need int) Plan {
	_, members := unitsInOrder(entries)
	var results []Entry
	for _, e := range entries {
		if e.Result && !e.Stubbed {
			results = append(results, e)
		}
	}
	slices.SortStableFunc(results, func(a, b Entry) int { return b.Tokens - a.Tokens })
	var p Plan
	freed := 0
	taken := make(map[UnitID]bool)
	for _, e := range results {
		if freed >= need {
			break
		}
		if !prunable(members[e.Unit]) || taken[e.Unit] {
			continue
		}
		if l.Stub {
			if e.Tokens > stubFloor(l.MinTokens) {
				p.Stub = append(p.Stub, e.ID)
				freed += max(0, e.Tokens-DefaultStubTokens)
			}
			continue
		}
		taken[e.Unit] = true
		for _, m := range members[e.Unit] {
			p.Evict = append(p.Evict, m.ID)
			freed += m.Tokens
		}
	}
	return p
}

// KeepLastToolUses clears every tool use but the last Keep (default 3),
// oldest first, as Anthropic's clear_tool_uses context edit does. Tools
// named in Exclude are never cleared. With Stub set the results are
// replaced by placeholders and the calls stay, as that edit does;
// otherwise the whole units go. When stubbing it skips results of
// MinTokens or fewer (zero means 8, the default stub's size). It ignores
// need: once the guard asks, it clears everything older than the kept
// tool uses.
type KeepLastToolUses struct {
	Keep      int
	Exclude   []string
	Stub      bool
	MinTokens int
}

// Propose implements [Policy].
func (k KeepLastToolUses) Propose(entries []Entry, need int) Plan {
	keep := k.Keep
	if keep <= 0 {
		keep = 3
	}
	excluded := func(e Entry) bool {
		return slices.ContainsFunc(e.Tools, func(t string) bool { return slices.Contains(k.Exclude, t) })
	}
	// Tool uses are results; the last keep of them stay.
	var uses []Entry
	protect := make(map[UnitID]bool)
	for _, e := range entries {
		if !e.Result {
			continue
		}
		if excluded(e) {
			protect[e.Unit] = true
			continue
		}
		uses = append(uses, e)
	}
	if len(uses) <= keep {
		return Plan{}
	}
	for _, e := range uses[len(uses)-keep:] {
		protect[e.Unit] = true
	}
	_, members := unitsInOrder(entries)
	var p Plan
	taken := make(map[UnitID]bool)
	for _, e := range uses[:len(uses)-keep] {
		if !prunable(members[e.Unit]) {
			continue
		}
		if k.Stub {
			if !e.Stubbed && e.Tokens > stubFloor(k.MinTokens) {
				p.Stub = append(p.Stub, e.ID)
			}
			continue
		}
		if taken[e.Unit] || protect[e.Unit] {
			continue
		}
		taken[e.Unit] = true
		for _, m := range members[e.Unit] {
			p.Evict = append(p.Evict, m.ID)
		}
	}
	return p
}

func excludeRefused(vs []*Violation, units map[UnitID]bool, tools map[string]bool) {
	for _, v := range vs {
		for _, u := range v.Units {
			units[u] = true
		}
		if v.Gate == GateSchema {
			for _, t := range v.Tools {
				tools[t] = true
			}
		}
	}
}

// without returns p less the messages of the given units (as entries
// place them) and the given tools.
func (p Plan) without(entries []Entry, units map[UnitID]bool, tools map[string]bool) Plan {
	unitOf := make(map[MessageID]UnitID, len(entries))
	for _, e := range entries {
		unitOf[e.ID] = e.Unit
	}
	drop := func(id MessageID) bool { return units[unitOf[id]] }
	q := p
	q.Evict = slices.DeleteFunc(slices.Clone(p.Evict), drop)
	q.Stub = slices.DeleteFunc(slices.Clone(p.Stub), drop)
	q.DropSchemas = slices.DeleteFunc(slices.Clone(p.DropSchemas), func(t string) bool { return tools[t] })
	if len(p.CompressSchemas) > 0 {
		q.CompressSchemas = make(map[string]json.RawMessage, len(p.CompressSchemas))
		for t, s := range p.CompressSchemas {
			if !tools[t] {
				q.CompressSchemas[t] = s
			}
		}
	}
	return q
}

// Outcome is the answer of [Guard.Check].
type Outcome uint8

const (
	// UnderBudget: nothing needed doing.
	UnderBudget Outcome = iota
	// Pruned: decisions were applied. Result.After may still exceed the
	// budget when the guard refused the rest; it is under the ceiling.
	Pruned
	// Deferred: the Context could not be pruned safely now (a call
	// pending, a message streaming, or every proposal refused) and is
	// still under its hard ceiling. Retry at the next budget check.
	Deferred
)

// String returns the name of the outcome.
func (o Outcome) String() string {
	switch o {
	case UnderBudget:
		return "under_budget"
	case Pruned:
		return "pruned"
	case Deferred:
		return "deferred"
	}
	return "outcome(?)"
}

// Guard is the helper a runtime calls before each model invocation: it
// checks the budget and, when over it, lets Policy propose and the gates
// dispose until the Context fits or nothing more can safely go.
//
// A Guard is a plain value; it may be shared by goroutines as long as its
// Policy may.
type Guard struct {
	// Budget is the token count to prune down to.
	Budget int
	// Ceiling, when positive, is the hard limit: above it a Context that
	// cannot be pruned safely makes Check fail with a [*CeilingError].
	// Zero means the Context's Config.Ceiling.
	Ceiling int
	// Policy proposes what to prune; nil means OldestFirst{}.
	Policy Policy
	// Split is passed on in every plan that leaves it unset.
	Split SplitMode
	// Rounds bounds the propose-refuse cycles of one Check (default 64).
	// Each round either applies a decision or hides at least one refused
	// unit from the policy, so the bound only stops a policy that keeps
	// proposing what changes nothing.
	Rounds int
}

// Result reports what [Guard.Check] did.
type Result struct {
	Outcome Outcome
	Before  int // tokens before the check
	After   int // tokens after it
	// Decisions are the applied decisions, in order.
	Decisions []*Decision
	// Refused lists every refusal met on the way, once each, in the order
	// met: units held back by the boundary, irreducible content, schemas a
	// mutation tool could not lose. It explains a Deferred outcome or a
	// Pruned one still over budget.
	Refused []*Violation
	// Reason is the last error met (a *DeferredError, *PruneError or
	// *StaleError), if any.
	Reason error
}

// refuse records vs in r.Refused, skipping those already there.
func (r *Result) refuse(vs []*Violation) {
	for _, v := range vs {
		if !slices.ContainsFunc(r.Refused, v.same) {
			r.Refused = append(r.Refused, v)
		}
	}
}

// Check brings c under g.Budget if it safely can. Under budget it returns
// at once, in constant time and without allocating. Otherwise it asks
// the policy for a plan, prunes and applies it; units and tools the gates
// refuse are hidden from the policy and it is asked again, up to Rounds
// times. It fails with a [*CeilingError] when c ends above a positive
// Ceiling, and with the [*InputError] when the policy proposes ids or
// tools the Context does not hold.
func (g Guard) Check(c *Context) (Result, error) {
	before := c.Tokens()
	if before <= g.Budget {
		return Result{Outcome: UnderBudget, Before: before, After: before}, nil
	}
	pol := g.Policy
	if pol == nil {
		pol = OldestFirst{}
	}
	cfg := c.Config()
	if g.Ceiling <= 0 {
		g.Ceiling = cfg.Ceiling
	}
	rounds := g.Rounds
	if rounds <= 0 {
		rounds = 64
	}
	res := Result{Before: before}
	excludeUnits := make(map[UnitID]bool)
	excludeTools := make(map[string]bool)
	if cfg.Boundary == BoundaryStrict && !c.Settled() {
		// Nothing may go while a call is pending or a stream is open; say
		// which, without asking the policy.
		if _, err := c.prune(Plan{}, false); err != nil {
			res.Reason = err
			rounds = 0
		}
	}
	for i := 0; i < rounds; i++ {
		now := c.Tokens()
		if now <= g.Budget {
			break
		}
		entries := slices.DeleteFunc(c.Snapshot(), func(e Entry) bool { return excludeUnits[e.Unit] })
		p := pol.Propose(entries, now-g.Budget)
		p.DropSchemas = slices.DeleteFunc(p.DropSchemas, func(t string) bool { return excludeTools[t] })
		for t := range excludeTools {
			delete(p.CompressSchemas, t)
		}
		if p.Split == SplitGrow {
			p.Split = g.Split
		}
		if p.Empty() {
			break
		}
		d, err := c.prune(p, false)
		for retry := 0; err != nil && retry < 4; retry++ {
			// Take the refused units and tools out of the plan and try
			// what is left, without asking the policy again.
			var pe *PruneError
			if !errors.As(err, &pe) {
				break
			}
			res.Reason = err
			res.refuse(pe.Violations)
			excludeRefused(pe.Violations, excludeUnits, excludeTools)
			p = p.without(entries, excludeUnits, excludeTools)
			if p.Empty() {
				break
			}
			d, err = c.prune(p, false)
		}
		if err != nil {
			res.Reason = err
			var ie *InputError
			if errors.As(err, &ie) && slices.ContainsFunc(entries, func(e Entry) bool { return string(e.ID) == ie.ID }) {
				// Another goroutine pruned what the snapshot showed: look again.
				continue
			}
			if errors.Is(err, ErrInvalidInput) {
				// The policy named what the Context does not hold.
				res.After = c.Tokens()
				res.Outcome = Deferred
				if len(res.Decisions) > 0 {
					res.Outcome = Pruned
				}
				return res, err
			}
			var pe *PruneError
			if !errors.As(err, &pe) {
				break // deferred
			}
			res.refuse(pe.Violations)
			excludeRefused(pe.Violations, excludeUnits, excludeTools)
			continue
		}
		res.refuse(d.Refused)
		excludeRefused(d.Refused, excludeUnits, excludeTools)
		if len(d.Refused) > 0 {
			res.Reason = &PruneError{Violations: d.Refused}
		}
		if d.Empty() {
			continue
		}
		if err := c.Apply(d); err != nil {
			res.Reason = err
			continue
		}
		res.Decisions = append(res.Decisions, d)
	}
	res.After = c.Tokens()
	switch {
	case res.After <= g.Budget:
		res.Outcome = Pruned
	case g.Ceiling > 0 && res.After > g.Ceiling:
		res.Outcome = Deferred
		if len(res.Decisions) > 0 {
			res.Outcome = Pruned
		}
		return res, &CeilingError{Tokens: res.After, Ceiling: g.Ceiling, Cause: res.Reason}
	case len(res.Decisions) > 0:
		res.Outcome = Pruned
	default:
		res.Outcome = Deferred
		if res.Reason == nil && !c.Settled() {
			res.Reason = &DeferredError{Pending: c.Pending(), Open: c.OpenMessages()}
		}
	}
	return res, nil
}

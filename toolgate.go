package pruneguard

import (
	"slices"
	"strings"

	"github.com/pruneguard/pruneguard/internal/schemadiff"
)

// The evict-or-tombstone gate per tool, per turn: what a plan's schema
// edits cannot see. A tool's arguments can come to stand behind no schema
// without any plan asking for it (the model calls a tool whose schema was
// withdrawn while no arguments stood), and a message can require a schema
// the prompt no longer shows. The Context keeps the set of such tools as
// events happen, at a constant cost per event, and every decision looks
// at each of them, at a cost in proportion to the set.

// notShown reports whether the tool's schema is not in the prompt whole:
// withdrawn, or compressed with losses.
func (t *toolRec) notShown() bool { return !t.resident || t.lossy }

// isUnsound reports whether arguments of calls to the tool stand behind
// no schema and no tombstone, or messages require its schema while it is
// not shown whole.
func (t *toolRec) isUnsound() bool {
	return t.notShown() && (t.args > 0 && !t.tombstoned || len(t.reqBy) > 0)
}

// recheck brings tool i's place in Context.unsound up to date. Every
// event that changes what isUnsound reads calls it.
func (c *Context) recheck(i int32) {
	t := &c.tools[i]
	in := t.unsound != 0
	switch bad := t.isUnsound(); {
	case bad && !in:
		c.unsound = append(c.unsound, i)
		t.unsound = int32(len(c.unsound))
		c.unsoundGen++
	case !bad && in:
		j := t.unsound - 1
		last := c.unsound[len(c.unsound)-1]
		c.unsound[j] = last
		c.tools[last].unsound = j + 1
		c.unsound = c.unsound[:len(c.unsound)-1]
		t.unsound = 0
	}
}

// Unsound returns the names of the tools, sorted, whose arguments stand
// in the Context behind no schema and no tombstone, or whose schema a
// message requires while the prompt does not show it whole (see
// [ToolState.Ghost]). The next decision repairs them or Prune refuses;
// only read-only tools that cannot be tombstoned may stay so. With none,
// it takes constant time and does not allocate.
func (c *Context) Unsound() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.unsound) == 0 {
		return nil
	}
	out := make([]string, len(c.unsound))
	for i, t := range c.unsound {
		out[i] = c.tools[t].t.Name
	}
	slices.Sort(out)
	return out
}

// require records that message p requires the schemas of the tools
// named.
func (c *Context) require(p int32, names []string) {
	if len(names) == 0 {
		return
	}
	ts := make([]int32, 0, len(names))
	for _, name := range names {
		t := c.tool(name)
		if slices.Contains(ts, t) {
			continue
		}
		ts = append(ts, t)
		c.tools[t].reqBy = append(c.tools[t].reqBy, p)
		c.recheck(t)
	}
	c.side(p).requires = ts
}

// unrequire drops the requirements of message p, which leaves the prompt
// or loses its content.
func (c *Context) unrequire(p int32) {
	s := c.sideOf(p)
	if s == nil || s.requires == nil {
		return
	}
	for _, t := range s.requires {
		r := &c.tools[t]
		r.reqBy = slices.DeleteFunc(r.reqBy, func(q int32) bool { return q == p })
		c.recheck(t)
	}
	s.requires = nil
}

// requirers lists the messages that require t's schema and that the run
// neither evicts nor stubs, in transcript order.
func (r *pruneRun) requirers(t *toolRec) []int32 {
	var out []int32
	for _, p := range t.reqBy {
		if !r.has(p, kEvict|kStub) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// requiredViolation objects to taking t's schema from the messages ps
// that require it.
func (r *pruneRun) requiredViolation(t *toolRec, ps []int32) *Violation {
	ids := make([]MessageID, len(ps))
	for i, p := range ps {
		ids[i] = r.c.id(p)
	}
	return &Violation{Gate: GateSchema, Code: CodeRequiredTool, Tools: []string{t.t.Name}, Messages: ids, pos: uint64(ps[0])}
}

// toolGate looks at every tool whose arguments, or requiring messages,
// stand behind no schema before the plan, and that the plan's schema
// edits left alone (schemaGate decides those). Arguments that survive the
// closing set get a tombstone, or, for a mutation tool that cannot have
// one, refuse the plan; a read-only tool without tombstones is left so,
// as it fails closed. A requiring message that survives refuses the plan
// whatever the tombstones: the provider refuses it without the schema.
// A closing set that takes the last arguments, and the last requiring
// messages, repairs the tool without a tombstone.
func (r *pruneRun) toolGate() {
	c := r.c
	if len(c.unsound) == 0 {
		return
	}
	ts := slices.Clone(c.unsound)
	slices.SortFunc(ts, func(a, b int32) int { return strings.Compare(c.tools[a].t.Name, c.tools[b].t.Name) })
	for _, i := range ts {
		t := &c.tools[i]
		name := t.t.Name
		if t.resident && r.planEdits(name) {
			continue // the plan's edit decides it
		}
		if ps := r.requirers(t); len(ps) > 0 {
			r.object(r.requiredViolation(t, ps))
		}
		if t.tombstoned || t.args-r.tools.get(name) <= 0 {
			continue
		}
		mut := t.t.Mutating()
		switch noTomb := c.cfg.NoTombstones || t.t.NoTombstone; {
		case !noTomb:
			tomb := Tombstone{Tool: name, Mutating: mut, Text: tombstoneText(name, mut)}
			if t.ver > 0 {
				tomb.Stale = c.staleCalls(t)
			}
			r.repairs = append(r.repairs, tomb)
		case mut:
			r.object(&Violation{Gate: GateSchema, Code: CodeGhostTool, Tools: []string{name}, Calls: r.survivingCalls(t)})
		}
	}
}

// planEdits reports whether the plan asks to withdraw or compress the
// schema of tool name.
func (r *pruneRun) planEdits(name string) bool {
	_, ok := r.p.CompressSchemas[name]
	return ok || slices.Contains(r.p.DropSchemas, name)
}

// finishTools adds to the decision what the tools need: the repairing
// tombstones, the tokens the schema edits and tombstones free or cost,
// and what Apply checks the tools against.
func (d *Decision) finishTools(r *pruneRun) {
	c := r.c
	d.Tombstones = append(d.Tombstones, r.repairs...)
	tombOf := func(name string) string {
		for _, t := range d.Tombstones {
			if t.Tool == name {
				return t.Text
			}
		}
		return ""
	}
	edit := func(t *toolRec, after tally) {
		d.Freed += t.held - after.n
		d.takes += t.held
		d.adds.plus(after)
	}
	for _, name := range d.DropSchemas {
		t := c.toolRec(name)
		edit(t, c.toolTokensAfter(t, true, nil, tombOf(name)))
	}
	for _, cs := range d.Compress {
		t := c.toolRec(cs.Tool)
		edit(t, c.toolTokensAfter(t, false, cs.Schema, tombOf(cs.Tool)))
	}
	for _, name := range d.Retire {
		d.Freed += c.toolRec(name).tombTok
		d.takes += c.toolRec(name).tombTok
	}
	for _, tomb := range r.repairs {
		n := c.count([]byte(tomb.Text))
		d.Freed -= n
		d.adds.add(n)
	}
	d.soundGen = c.unsoundGen
	for _, i := range c.unsound {
		d.argStamps = append(d.argStamps, argStamp{i, c.tools[i].args, len(c.tools[i].reqBy)})
	}
}

// applyTools carries out the tool side of decision d, after Apply has
// withdrawn, compressed, tombstoned and retired what it names: the
// repairing tombstones stand, lossy compressions are marked, and each
// tool touched is recounted and rechecked.
func (c *Context) applyTools(d *Decision) {
	touch := func(name string) {
		i := c.toolIdx[name]
		c.retally(i)
		c.recheck(i)
	}
	for _, t := range d.Tombstones {
		r := c.toolRec(t.Tool)
		r.tombstoned = true
		r.tombTok = c.count([]byte(t.Text))
	}
	for _, name := range d.DropSchemas {
		c.toolRec(name).lossy = false
	}
	for _, cs := range d.Compress {
		r := c.toolRec(cs.Tool)
		r.compTok = c.count(cs.Schema)
		r.lossy = slices.ContainsFunc(d.Lossy, func(l LossyCompression) bool { return l.Tool == cs.Tool })
	}
	for _, name := range d.Retire {
		c.toolRec(name).tombTok = 0
	}
	for _, t := range d.Tombstones {
		touch(t.Tool)
	}
	for _, name := range d.DropSchemas {
		touch(name)
	}
	for _, cs := range d.Compress {
		touch(cs.Tool)
	}
	for _, name := range d.Retire {
		touch(name)
	}
	// Evictions may have taken the last arguments or requiring messages
	// of a tool; remove and stub rechecked those as they went.
}

// registered brings tool i up to date with its registration, unless
// same says its schema did not change and has no compression: the
// properties and kinds of its schema, the tokens of its schema, whether
// a compression kept from before loses constraints of the schema now, or
// narrows it under arguments in the Context (which costs a validation of
// each of the tool's calls).
func (c *Context) registered(i int32, same bool) {
	if same {
		return
	}
	t := &c.tools[i]
	t.props = schemaProps(t.t.Schema)
	t.schemaTok = c.count(t.t.Schema)
	t.lossy = false
	if t.compressed != nil {
		lossy, err := schemadiff.Compare(t.t.Schema, t.compressed)
		t.lossy = err != nil || len(lossy) > 0
		if !t.lossy {
			// Against the schema registered now, the compression kept may
			// narrow it under arguments already made.
			_, invalid := c.narrowing(t, t.compressed, func(int32) bool { return true })
			t.lossy = len(invalid) > 0
		}
		t.compTok = c.count(t.compressed)
	}
	c.retally(i)
	c.recheck(i)
}

// requested brings tool i up to date once the model asked for its schema
// back: the schema is shown whole, and its ghost episode ends.
func (c *Context) requested(i int32) {
	t := &c.tools[i]
	t.lossy = false
	if ep := t.ep; ep != nil {
		ep.ev.Reexpanded = true
		c.endEpisode(ep)
	}
	c.retally(i)
	c.recheck(i)
}

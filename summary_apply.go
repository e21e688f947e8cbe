package pruneguard

import "slices"

// finishSummary fills the summary of a decision from its run.
func (d *Decision) finishSummary(r *pruneRun) {
	s := r.sum.s
	n := r.c.summaryTokens(s)
	var carried []Pointer
	for _, p := range s.Pointers {
		if r.sum.carried[p] && r.c.resolvable(p) && !slices.Contains(carried, p) {
			carried = append(carried, p)
		}
	}
	d.Summary = &Summary{Replace: slices.Clone(d.Evict), ID: s.ID, Text: s.Text, Tokens: n, Pointers: carried}
	d.Freed -= n
	d.adds.add(n)
	// What the summary carries of its run, for a later summary of it.
	seen := map[string]bool{}
	for _, p := range d.evict {
		fs, _ := r.sum.factsOf(r.c, p)
		for _, f := range fs {
			if !seen[f.Text] && r.sum.carrier.Carries(f.Fact) {
				seen[f.Text] = true
				d.holds = append(d.holds, f)
			}
		}
	}
}

// placeSummary puts the summary of decision d, whose run Apply has just
// removed, in the place of the run's first message: it takes that
// message's record, whose calls it lets go of, in a unit of its own,
// linked after unit before (none: first). Under the write lock.
func (c *Context) placeSummary(d *Decision, before int32) {
	s := d.Summary
	p := d.evict[0]
	x := c.msg(p)
	// The calls the record made stay behind, with no caller, until a
	// compaction drops them.
	for k := x.call; k != none; k = c.call(k).sib {
		c.call(k).caller = none
	}
	for k := x.ans; k != none; k = c.call(k).nextAns {
		if c.call(k).result == p {
			c.call(k).result = none
		}
	}
	*x = mrec{idLen: uint32(len(s.ID)), unit: none, nextM: none, call: none, ans: none, class: Irreducible}
	x.text = c.text.Add([]byte(s.ID), []byte(s.Text))
	if r := c.internRole(RoleSummary); r == roleSide {
		c.side(p).role = RoleSummary
		c.msg(p).role = roleSide
	} else {
		c.msg(p).role = r
	}
	c.setTokens(p, s.Tokens)
	if len(s.Pointers) > 0 {
		c.side(p).carries = slices.Clone(s.Pointers)
	}
	if len(d.holds) > 0 {
		c.side(p).holds = d.holds
	}
	c.live++
	c.dead--
	c.byID.Put(p)
	u := c.newUnit()
	c.unlinkUnit(u)
	next := c.uhead
	if before != none {
		next = c.unit(before).next
	}
	c.relinkUnit(u, before, next)
	c.link(p, u)
	c.mem.moved()
}

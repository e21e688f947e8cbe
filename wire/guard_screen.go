package wire

import "github.com/pruneguard/pruneguard"

// CodeScreenUnsplit is the code of a "wire" refusal of a whole decision
// the screen found to break a provider rule the input kept, where
// trying its units and stubs one by one found none to blame: all of it
// is left out. The screen's own checks make this rare; it stands so that
// no decision it does not pass is ever applied.
const CodeScreenUnsplit = "unsplit"

// guardedScreen is the pruneguard.Screen a [Guarded] check gives the
// core guard. The guard asks it about every decision it is about to
// apply, whichever part of the check made it (the policy's plans, the
// furthest safe prune, spill-then-evict, the hoarding rule), so none
// reaches the body unscreened. Each is screened against the body as the
// decisions applied before it in the same check left it: the decision
// passed last is carried out on the edit state first, when the guard
// applied it. What it refuses is returned as violations with gate
// GateScreen naming what to take out (the tools of schema edits, the
// stubs, or else the units), and kept as refusals for the report.
type guardedScreen struct {
	g *Guarded
	// outer is the caller's own Guard.Screen, asked about a decision the
	// wire screen passed; nil for none.
	outer pruneguard.Screen
	// last is the decision passed last, not yet carried out on the edit
	// state.
	last *pruneguard.Decision
	// recorded lists the decisions carried out on the edit state so far.
	recorded []*pruneguard.Decision
	screenRefusals
}

// screenRefusals are what a screen refused in one check: the wire
// refusals, with indexes and the provider's wording, and own, the
// violations made of them, which the report takes from refs instead.
type screenRefusals struct {
	refs []Refusal
	own  map[*pruneguard.Violation]bool
}

// Screen implements pruneguard.Screen.
func (sc *guardedScreen) Screen(d *pruneguard.Decision) []*pruneguard.Violation {
	sc.catchUp()
	if _, refused, _, all := sc.g.screen(d); !all {
		if len(refused) == 0 {
			refused = []Refusal{{Gate: "wire", Code: CodeScreenUnsplit}}
		}
		return sc.refuse(refused)
	}
	if sc.outer != nil {
		if vs := sc.outer.Screen(d); len(vs) > 0 {
			return vs
		}
	}
	sc.last = d
	return nil
}

// catchUp carries out on the edit state the decision passed last, if
// the guard applied it.
func (sc *guardedScreen) catchUp() {
	if sc.last != nil && sc.g.applied(sc.last) {
		sc.recorded = append(sc.recorded, sc.last)
		sc.g.record(sc.last)
	}
	sc.last = nil
}

// refuse keeps wire refusals and turns them into the screen violations
// the guard takes out, remembering them as the screen's own.
func (sc *screenRefusals) refuse(refs []Refusal) []*pruneguard.Violation {
	sc.refs = append(sc.refs, refs...)
	vs := screenViolations(refs)
	if sc.own == nil {
		sc.own = make(map[*pruneguard.Violation]bool, len(vs))
	}
	for _, v := range vs {
		sc.own[v] = true
	}
	return vs
}

// screenViolations turns wire refusals into violations of gate
// GateScreen naming the same units, messages and tools.
func screenViolations(refs []Refusal) []*pruneguard.Violation {
	vs := make([]*pruneguard.Violation, len(refs))
	for i, r := range refs {
		vs[i] = &pruneguard.Violation{Gate: pruneguard.GateScreen, Code: pruneguard.Code(r.Code),
			Units: r.Units, Messages: r.Messages, Tools: r.Tools}
	}
	return vs
}

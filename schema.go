package pruneguard

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/pruneguard/pruneguard/internal/schemadiff"
)

func tombstoneText(name string, mutating bool) string {
	if mutating {
		return fmt.Sprintf("[pruneguard] tool %q is still available but its schema was withdrawn; it changes state: ask for its schema before calling it, do not rebuild a call from earlier arguments.", name)
	}
	return fmt.Sprintf("[pruneguard] tool %q is still available but its schema was withdrawn; ask for its schema before calling it.", name)
}

// schemaEdit is one schema change a plan asks for: a withdrawal, or a
// compression that keeps every constraint (lossless) or not.
type schemaEdit struct {
	tool       string
	r          *toolRec
	compressed json.RawMessage // nil: the schema is withdrawn
	lossless   bool
	surviving  int        // calls to the tool whose arguments stay
	tomb       *Tombstone // the tombstone that stands in for the schema
}

// narrowing judges a compression that keeps every constraint of the
// registered schema but may add some: what it adds (narrows, nil when
// nothing), and the calls to t whose arguments stay (keep says which)
// and that the compressed schema rejects or may reject. It validates
// only the tool's calls, and only when the compression narrows.
func (c *Context) narrowing(t *toolRec, compressed []byte, keep func(k int32) bool) (narrows []string, invalid []CallID) {
	ls, err := schemadiff.Compare(compressed, t.t.Schema)
	if err != nil || len(ls) == 0 {
		return nil, nil
	}
	v, err := schemadiff.NewValidator(compressed)
	invalid = c.callIDs(t, func(k int32) bool {
		return keep(k) && (err != nil || c.call(k).flags&cArgsNil != 0 || v.Validate(c.args(k)) != schemadiff.Valid)
	})
	return lossStrings(ls), invalid
}

// takeSchemas carries out the plan's schema edits as named, once the
// closing set is settled: it counts the calls whose arguments leave with
// it, lists the edits of schemas still in the prompt (withdrawals first,
// then compressions by tool name), reports lossy compressions, and
// retires the tombstones of tools whose last arguments leave.
func (r *pruneRun) takeSchemas() {
	c, p := r.c, r.p
	for _, q := range r.evict {
		for k := range c.callsOf(q) {
			// Only calls that count in their tool's Args: a server call's
			// arguments stand behind no schema.
			if k := c.call(k); k.flags&cArgsMade != 0 {
				r.tools.add(k.tool, c.tools[k.tool].t.Name)
			}
		}
	}
	seen := map[string]bool{} // the tools an edit was taken for
	take := func(name string, compressed json.RawMessage) {
		if seen[name] {
			return
		}
		seen[name] = true
		t := c.toolRec(name)
		if !t.resident {
			return // already withdrawn
		}
		e := schemaEdit{tool: name, r: t, compressed: compressed, surviving: t.args - r.tools.get(name)}
		if compressed != nil {
			lossy, _ := schemadiff.Compare(t.t.Schema, compressed) // validated in checkPlan
			e.lossless = len(lossy) == 0
			if !e.lossless {
				r.d.Lossy = append(r.d.Lossy, LossyCompression{Tool: name, Losses: lossStrings(lossy)})
			} else if narrows, invalid := c.narrowing(t, compressed, r.survives); len(invalid) > 0 {
				// Arguments the model made are invalid under the schema it
				// would be shown: a withdrawal for them.
				e.lossless = false
				r.d.Lossy = append(r.d.Lossy, LossyCompression{Tool: name, Narrows: narrows, Invalid: invalid})
			} else if len(narrows) > 0 {
				r.d.Narrowed = append(r.d.Narrowed, NarrowedCompression{Tool: name, Narrows: narrows})
			}
		}
		r.edits = append(r.edits, e)
	}
	for _, name := range p.DropSchemas {
		take(name, nil)
	}
	for _, name := range slices.Sorted(maps.Keys(p.CompressSchemas)) {
		take(name, slices.Clone(p.CompressSchemas[name]))
	}
	for _, tc := range r.tools {
		if t := c.toolRec(tc.tool); t != nil && t.tombstoned && t.args-tc.n <= 0 && !seen[tc.tool] {
			r.d.Retire = append(r.d.Retire, tc.tool)
		}
	}
	slices.Sort(r.d.Retire)
}

// schemaGate decides each edit that takes a schema, or a constraint of
// it, away from arguments that stay: it stands behind a tombstone, a
// read-only tool without tombstones fails closed (the model asks for it
// back), and a mutation tool without tombstones keeps its schema and
// refuses the plan. An edit that takes a schema from a message requiring
// it refuses the plan, tombstone or not.
func (r *pruneRun) schemaGate() {
	c := r.c
	kept := r.edits[:0]
	for _, e := range r.edits {
		if !e.lossless {
			if ps := r.requirers(e.r); len(ps) > 0 {
				r.object(r.requiredViolation(e.r, ps))
				continue
			}
		}
		if !e.lossless && e.surviving > 0 {
			t := e.r
			mut := t.t.Mutating()
			switch noTomb := c.cfg.NoTombstones || t.t.NoTombstone; {
			case noTomb && mut:
				r.object(&Violation{Gate: GateSchema, Code: CodeGhostTool, Tools: []string{e.tool}, Calls: r.survivingCalls(t)})
				continue
			case !noTomb:
				e.tomb = &Tombstone{Tool: e.tool, Mutating: mut, Text: tombstoneText(e.tool, mut), Stale: c.staleCalls(t)}
			}
		}
		kept = append(kept, e)
	}
	r.edits = kept
}

func lossStrings(ls []schemadiff.Loss) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.String()
	}
	return out
}

// survivingCalls lists the calls to t whose arguments stay after the run.
func (r *pruneRun) survivingCalls(t *toolRec) []CallID { return r.c.callIDs(t, r.survives) }

// survives reports whether the arguments of call k stay after the run.
func (r *pruneRun) survives(k int32) bool { return !r.has(r.c.call(k).caller, kEvict) }

// CompressedSchema is a schema a decision replaces with a compressed form
// that keeps every structural constraint.
//
// The zero CompressedSchema names no tool.
type CompressedSchema struct {
	Tool   string
	Schema json.RawMessage
}

// LossyCompression reports a proposed compression that the gate treats as
// withdrawing the schema: it may accept arguments the registered schema
// rejects (Losses: a constraint dropped or weakened, named by its place),
// or it narrows the schema (Narrows: a constraint it adds) so that
// arguments of calls that stay in the prompt are invalid under it, or
// may be (Invalid): the model would see a call it made rejected by the
// schema it is shown. Arguments are checked against the compressed
// schema by a validator of a subset of JSON Schema; what it does not
// check (format, unevaluatedProperties, $dynamicRef, unknown keywords,
// references it cannot follow) counts as possibly invalid.
//
// The zero LossyCompression names no tool and no loss.
type LossyCompression struct {
	Tool    string
	Losses  []string
	Narrows []string
	Invalid []CallID
}

// NarrowedCompression reports a compression accepted as it is that
// narrows the registered schema: it adds constraints (Narrows, named by
// their place in the compressed schema), against which no argument that
// stays in the prompt goes (a oneOf branch removed that no call took).
// The model is shown a stricter schema than the tool's: calls it makes
// from now on keep to it.
//
// The zero NarrowedCompression names no tool.
type NarrowedCompression struct {
	Tool    string
	Narrows []string
}

// argStamp records how many calls to a tool had their arguments in the
// Context, and how many messages required its schema, when a decision
// about its schema was made.
type argStamp struct {
	tool int32
	args int
	req  int
}

// stampArgs records the argument counts of the tools whose schema d
// changes. A call arriving between Prune and Apply (in the relaxed mode,
// or completed before Apply in the strict one) would otherwise leave
// arguments behind a schema the decision withdrew without a tombstone.
func (d *Decision) stampArgs(c *Context) {
	d.argStamps = d.argStamps[:0]
	add := func(name string) {
		if t, ok := c.toolIdx[name]; ok {
			d.argStamps = append(d.argStamps, argStamp{t, c.tools[t].args, len(c.tools[t].reqBy)})
		}
	}
	for _, name := range d.DropSchemas {
		add(name)
	}
	for _, cs := range d.Compress {
		add(cs.Tool)
	}
	for _, name := range d.Retire {
		add(name)
	}
}

// argsChanged reports whether calls to a tool stamped by stampArgs were
// added since.
func (d *Decision) argsChanged() bool {
	for _, s := range d.argStamps {
		if t := &d.c.tools[s.tool]; t.args != s.args || len(t.reqBy) != s.req {
			return true
		}
	}
	return false
}

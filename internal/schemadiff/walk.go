package schemadiff

import (
	"math"
	"strconv"
	"strings"
)

// Bounds on the work of one comparison. Past them the comparison stops
// and reports a "limit" loss: a schema too large or too deep to judge is
// judged lossy.
const (
	maxDepth  = 256
	maxSteps  = 50000
	maxLosses = 64
)

// walker proves, schema by schema, that every instance the compressed side
// accepts is accepted by the original side; whatever it cannot prove is a
// loss. diff is its one step.
//
// Recursive schemas are compared coinductively: a comparison met again
// while it is still under way is assumed to hold, but only if the walk has
// gone down into the instance (a property, an item) since; every instance
// is finite, so such an assumption is proved by the rest of the walk. A
// comparison met again at the same instance is a reference cycle that
// constrains nothing a validator could finish checking, and is a loss.
type walker struct {
	ids       int
	steps     int
	exhausted bool
	depth     int
	descents  int
	active    map[string]frame
	proven    map[string]bool
	failed    map[string]failure
	same      map[string]bool // equivalent pairs of schemas
	sameLog   []string        // the pairs found equivalent, in order
	cycles    int             // reference cycles met that never reach into the instance
	hypLow    int             // the shallowest assumption the current step relied on
	scratch   *doc
	types     map[string]*node // {"type": name} nodes, by name
}

// frame is a comparison under way: its depth and descents.
type frame struct{ depth, descents int }

// failure is a comparison that found losses, at the path it was made.
type failure struct {
	path   string
	losses []Loss
}

// newWalker starts a comparison.
func newWalker() *walker {
	w := &walker{active: map[string]frame{}, proven: map[string]bool{}, failed: map[string]failure{}, same: map[string]bool{}, types: map[string]*node{}, hypLow: math.MaxInt}
	w.scratch = newDoc(nil, &w.ids)
	return w
}

// limitLoss is the loss of a comparison cut short.
func (w *walker) limitLoss(path string) []Loss {
	return []Loss{{Path: path, Kind: "limit", What: "schema too large or too deep to compare"}}
}

// diff returns what o constrains that the conjunction cs does not, found
// at path (the place of o in the original, through references).
func (w *walker) diff(path string, o *node, in []*node) []Loss {
	if w.exhausted {
		return w.limitLoss(path)
	}
	w.steps++
	if w.steps > maxSteps || w.depth >= maxDepth {
		w.exhausted = true
		return w.limitLoss(path)
	}
	cs := flatten(in)
	for _, c := range cs {
		if w.equivalent(o, c) {
			return nil
		}
	}
	key := o.key() + "|" + conjKey(cs)
	if w.proven[key] {
		return nil
	}
	if f, ok := w.failed[key]; ok {
		// The same comparison elsewhere: the same losses, at this path.
		out := make([]Loss, len(f.losses))
		for i, l := range f.losses {
			l.Path = path + strings.TrimPrefix(l.Path, f.path)
			out[i] = l
		}
		return out
	}
	if fr, ok := w.active[key]; ok {
		if w.descents > fr.descents {
			w.hypLow = min(w.hypLow, fr.depth)
			return nil
		}
		w.cycles++
		return []Loss{{Path: path, Kind: "$ref", What: "cycle that never reaches into the instance"}}
	}
	cycles := w.cycles
	w.depth++
	depth := w.depth
	w.active[key] = frame{depth, w.descents}
	saved := w.hypLow
	w.hypLow = math.MaxInt
	losses := w.check(path, o, cs)
	if len(losses) > 0 && w.split(o, cs) {
		losses = nil
	}
	if len(losses) > maxLosses {
		// Losses that multiply through shared references are listed up
		// to a bound: one is enough to judge.
		losses = append(losses[:maxLosses:maxLosses], Loss{Path: path, Kind: "limit", What: "more losses not listed"})
	}
	delete(w.active, key)
	switch {
	case len(losses) == 0 && w.hypLow >= depth:
		w.proven[key] = true
	case len(losses) > 0 && w.cycles == cycles && !w.exhausted:
		// Assumptions only ever hide losses, so these are losses
		// wherever the comparison is made; a cycle met is not.
		w.failed[key] = failure{path, losses}
	}
	w.hypLow = min(saved, w.hypLow)
	w.depth--
	return losses
}

// holds reports whether cs keeps every constraint of o.
func (w *walker) holds(o *node, cs []*node) bool { return len(w.diff("", o, cs)) == 0 }

// down is diff for a subschema that applies to a part of the instance.
func (w *walker) down(path string, o *node, cs []*node) []Loss {
	w.descents++
	defer func() { w.descents-- }()
	return w.diff(path, o, cs)
}

// split tries the proof once per branch of the first disjunction of the
// conjunction (anyOf, oneOf read as anyOf, if-then-else read as then or
// else): the conjunction keeps o's constraints if every branch does.
func (w *walker) split(o *node, cs []*node) bool {
	for i, c := range cs {
		alts := alternatives(c)
		if alts == nil {
			continue
		}
		rest := make([]*node, 0, len(cs))
		rest = append(rest, cs[:i]...)
		rest = append(rest, cs[i+1:]...)
		for _, alt := range alts {
			if !w.holds(o, append(cloneNodes(rest), alt...)) {
				return false
			}
		}
		return true
	}
	return false
}

// alternatives lists the ways an instance may satisfy c's first
// disjunction, each as c without it plus the branch; nil when c has none.
func alternatives(c *node) [][]*node {
	for _, k := range []string{"anyOf", "oneOf"} {
		bit := dropAnyOf
		if k == "oneOf" {
			bit = dropOneOf
		}
		l, present, ok := c.subs(k)
		if !present {
			continue
		}
		if !ok || len(l) == 0 {
			return [][]*node{{c.without(bit)}} // not a disjunction a validator accepts: read as nothing
		}
		out := make([][]*node, len(l))
		for i, b := range l {
			out[i] = []*node{c.without(bit, b), b}
		}
		return out
	}
	iff := c.sub("if")
	then, els := c.sub("then"), c.sub("else")
	if iff == nil || (then == nil && els == nil) {
		return nil
	}
	yes := []*node{iff}
	if then != nil {
		yes = append(yes, then)
	}
	var nope []*node
	if els != nil {
		nope = append(nope, els)
	}
	return [][]*node{
		append([]*node{c.without(dropIf, yes...)}, yes...),
		append([]*node{c.without(dropIf, nope...), negation(iff)}, nope...),
	}
}

// cloneNodes copies a list of nodes.
func cloneNodes(l []*node) []*node { return append([]*node(nil), l...) }

// join adds a token to a path.
func join(path, token string) string { return path + "/" + escape(token) }

// joinIndex adds a keyword and an index to a path.
func joinIndex(path, k string, i int) string { return path + "/" + k + "/" + strconv.Itoa(i) }

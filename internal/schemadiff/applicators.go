package schemadiff

import (
	"slices"
	"strconv"
)

// splitting applies check to cs and, if that finds losses, to each
// alternative of the first disjunction of cs in turn, or else of the first
// dependentSchemas entry it leaves open (the property present, or absent):
// the constraint is kept if it is kept in every alternative.
func (w *walker) splitting(cs []*node, check func([]*node) []Loss) []Loss {
	direct := check(cs)
	if len(direct) == 0 {
		return nil
	}
	alts, ok := w.splits(cs)
	if !ok {
		return direct
	}
	for _, alt := range alts {
		if w.exhausted {
			return direct
		}
		w.steps++
		if len(w.splitting(flatten(alt), check)) > 0 {
			return direct
		}
	}
	return nil
}

// splits lists the alternatives splitting uses, and whether there are
// any.
func (w *walker) splits(cs []*node) ([][]*node, bool) {
	for i, c := range cs {
		alts := alternatives(c)
		if alts == nil {
			continue
		}
		rest := append(cloneNodes(cs[:i]), cs[i+1:]...)
		out := make([][]*node, len(alts))
		for j, alt := range alts {
			out[j] = append(cloneNodes(rest), alt...)
		}
		return out, true
	}
	for _, c := range cs {
		for _, k := range [2]string{"dependentSchemas", "dependencies"} {
			deps, _, _ := c.subMap(k)
			for _, d := range deps {
				if _, isList := d.n.val.([]any); isList || requires(cs, d.name) || forbidden(cs, d.name) {
					continue
				}
				return [][]*node{
					append(cloneNodes(cs), w.synthetic(map[string]any{"required": []any{d.name}})),
					append(cloneNodes(cs), w.synthetic(map[string]any{"properties": map[string]any{d.name: false}})),
				}, true
			}
		}
	}
	return nil, false
}

// anyOf is kept when one branch is, or when each branch of the compressed
// side's own disjunction keeps one of its branches. The losses reported
// are those of the nearest branch.
func (w *walker) anyOf(path string, o *node, cs []*node) []Loss {
	branches, _, ok := o.subs("anyOf")
	if !ok {
		return same(path, o, "anyOf", cs)
	}
	if len(branches) == 0 {
		return []Loss{{Path: path, Kind: "anyOf", What: "[]"}}
	}
	fits := func(alt []*node, prefer int) []Loss {
		var best []Loss
		for _, i := range order(len(branches), prefer) {
			l := w.diff(joinIndex(path, "anyOf", i), branches[i], alt)
			if len(l) == 0 {
				return nil
			}
			if best == nil || len(l) < len(best) {
				best = l
			}
		}
		return best
	}
	direct := fits(cs, 0)
	if len(direct) == 0 {
		return nil
	}
	// A type array against branches by type: each kind fits a branch.
	if alts := w.kindSplits(cs); alts != nil {
		var first []Loss // the losses of the first kind that fits no branch
		for _, alt := range alts {
			if first = fits(alt, 0); len(first) > 0 {
				break
			}
		}
		if len(first) == 0 {
			return nil
		}
		direct = first
	}
	// Split the compressed side's own anyOf (or oneOf), branch by branch.
	for i, c := range cs {
		for _, k := range [2]string{"anyOf", "oneOf"} {
			bit := dropAnyOf
			if k == "oneOf" {
				bit = dropOneOf
			}
			cb, present, ok := c.subs(k)
			if !present || !ok || len(cb) == 0 {
				continue
			}
			for j, b := range cb {
				alt := append(cloneNodes(cs[:i]), c.without(bit, b))
				alt = append(alt, cs[i+1:]...)
				if l := fits(append(alt, b), j); len(l) > 0 {
					return l
				}
			}
			return nil
		}
	}
	return direct
}

// order lists 0..n-1 with prefer first.
func order(n, prefer int) []int {
	out := make([]int, 0, n)
	if prefer < n {
		out = append(out, prefer)
	}
	for i := range n {
		if i != prefer {
			out = append(out, i)
		}
	}
	return out
}

// oneOf is kept when the compressed side has the same branches, each
// equivalent within the rest of it, or keeps one branch while plainly
// matching none of the others. oneOf is not monotone: narrowing a branch
// may let an instance match two, so nothing less is kept.
func (w *walker) oneOf(path string, o *node, cs []*node) []Loss {
	branches, _, ok := o.subs("oneOf")
	if !ok {
		return same(path, o, "oneOf", cs)
	}
	if len(branches) == 0 {
		return []Loss{{Path: path, Kind: "oneOf", What: "[]"}}
	}
	// The same branches on the compressed side, each equivalent within
	// the rest of the conjunction: exactly one still matches.
	var aligned []Loss
	for i, c := range cs {
		cb, present, ok := c.subs("oneOf")
		if !present || !ok || len(cb) != len(branches) {
			continue
		}
		rest := func(taken *node) []*node {
			r := append(cloneNodes(cs[:i]), c.without(dropOneOf, taken))
			return append(append(r, cs[i+1:]...), taken)
		}
		aligned = nil
		equal := true
		for j := range branches {
			l := w.diff(joinIndex(path, "oneOf", j), branches[j], rest(cb[j]))
			aligned = append(aligned, l...)
			if len(l) > 0 || !w.holds(cb[j], rest(branches[j])) {
				equal = false
			}
		}
		if equal {
			return nil
		}
	}
	// Or one branch holds and the others plainly cannot match.
	exclusive := func(alt []*node) (fit bool, ok bool) {
		for i, b := range branches {
			if !w.holds(b, alt) {
				continue
			}
			fit = true
			others := true
			for j, b2 := range branches {
				if j != i && !w.disjoint(alt, []*node{b2}, 0) {
					others = false
					break
				}
			}
			if others {
				return true, true
			}
		}
		return fit, false
	}
	fit, ok := exclusive(cs)
	if ok {
		return nil
	}
	if alts := w.kindSplits(cs); alts != nil && !slices.ContainsFunc(alts, func(alt []*node) bool { _, ok := exclusive(alt); return !ok }) {
		return nil
	}
	for i, c := range cs {
		alts := alternatives(c)
		if alts == nil {
			continue
		}
		all := true
		for _, alt := range alts {
			if _, ok := exclusive(append(append(cloneNodes(cs[:i]), cs[i+1:]...), alt...)); !ok {
				all = false
				break
			}
		}
		if all {
			return nil
		}
		break
	}
	switch {
	case len(aligned) > 0:
		return aligned
	case fit:
		return []Loss{{Path: path, Kind: "oneOf", What: "branches no longer exclusive"}}
	}
	var best []Loss
	for i, b := range branches {
		l := w.diff(joinIndex(path, "oneOf", i), b, cs)
		if best == nil || len(l) < len(best) {
			best = l
		}
	}
	if len(best) == 0 {
		best = []Loss{{Path: path, Kind: "oneOf", What: "branches no longer exclusive"}}
	}
	return best
}

// not is kept when the compressed side excludes at least what it
// excludes, or plainly accepts nothing it would exclude.
func (w *walker) not(path string, o *node, cs []*node) []Loss {
	n := o.sub("not")
	for _, c := range cs {
		if cn := c.sub("not"); cn != nil && w.holds(cn, append(cloneNodes(cs), n)) {
			return nil
		}
	}
	if w.disjoint(cs, []*node{n}, 0) {
		return nil
	}
	return []Loss{{Path: path, Kind: "not"}}
}

// ifThenElse is kept when then and else both hold, or the compressed side
// surely meets (then holds) or surely fails (else holds) the condition,
// or it has an equivalent condition with branches that keep these.
func (w *walker) ifThenElse(path string, o *node, cs []*node) []Loss {
	iff, then, els := o.sub("if"), o.sub("then"), o.sub("else")
	if then == nil && els == nil {
		return nil
	}
	branch := func(k string, s *node, alt []*node) []Loss {
		if s == nil {
			return nil
		}
		return w.diff(join(path, k), s, alt)
	}
	lt, le := branch("then", then, cs), branch("else", els, cs)
	switch {
	case len(lt) == 0 && len(le) == 0:
		return nil
	case len(lt) == 0 && w.holds(iff, cs):
		return nil
	case len(le) == 0 && w.disjoint(cs, []*node{iff}, 0):
		return nil
	}
	for i, c := range cs {
		ci := c.sub("if")
		if ci == nil {
			continue
		}
		// c with its condition settled, taken standing in its place.
		rest := func(taken ...*node) []*node {
			r := append(cloneNodes(cs[:i]), c.without(dropIf, taken...))
			return append(r, cs[i+1:]...)
		}
		// Which branch matched is not known while the conditions are
		// compared: every one is taken.
		all := append([]*node{ci}, c.subsOf("then", "else")...)
		if !w.holds(iff, append(rest(all...), ci)) || !w.holds(ci, append(rest(all...), iff)) {
			continue
		}
		taken := append([]*node{ci}, c.subsOf("then")...)
		yes := append(rest(taken...), taken...)
		taken = c.subsOf("else")
		nope := append(rest(taken...), taken...)
		lt2, le2 := branch("then", then, yes), branch("else", els, nope)
		if len(lt2) == 0 && len(le2) == 0 {
			return nil
		}
		return append(lt2, le2...)
	}
	return append(lt, le...)
}

// disjoint says whether no instance satisfies both conjunctions, on plain
// evidence: kinds that do not meet, values the other side rejects, or a
// required property whose values cannot meet.
func (w *walker) disjoint(a, b []*node, depth int) bool {
	a, b = flatten(a), flatten(b)
	fa, fb := w.factsOf(a), w.factsOf(b)
	common := fa.kinds & fb.kinds
	if common == 0 {
		return true
	}
	for _, p := range [2]struct {
		f     facts
		other []*node
	}{{fa, b}, {fb, a}} {
		if !p.f.finite {
			continue
		}
		all := true
		for _, v := range p.f.values {
			if !rejects(p.other, v) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	// One side excludes what the other keeps to.
	for _, p := range [2][2][]*node{{a, b}, {b, a}} {
		for _, x := range p[0] {
			if n := x.sub("not"); n != nil && depth < 4 && w.holds(n, p[1]) {
				return true
			}
		}
	}
	if common != kObject || depth >= 4 {
		return false
	}
	for _, name := range append(requiredNames(a), requiredNames(b)...) {
		pa, pb := applicable(a, name), applicable(b, name)
		if len(pa) > 0 && len(pb) > 0 && w.disjoint(pa, pb, depth+1) {
			return true
		}
	}
	return false
}

// kindGroups are the kinds of instance a conjunction may be split by.
var kindGroups = []struct {
	name string
	bits uint8
}{{"null", kNull}, {"boolean", kBool}, {"object", kObject}, {"array", kArray}, {"string", kString}, {"number", kNumber}}

// kindSplits splits a conjunction that accepts several kinds of instance
// (a type array, nullable) into one alternative per kind; nil when it
// accepts one kind only.
func (w *walker) kindSplits(cs []*node) [][]*node {
	kinds := w.factsOf(cs).kinds
	var out [][]*node
	for _, g := range kindGroups {
		if kinds&g.bits != 0 {
			out = append(out, append(cloneNodes(cs), w.typeNode(g.name)))
		}
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// typeNode is the schema {"type": name}, made once per comparison.
func (w *walker) typeNode(name string) *node {
	if n, ok := w.types[name]; ok {
		return n
	}
	n := w.synthetic(map[string]any{"type": name})
	w.types[name] = n
	return n
}

// synthetic makes a node of a value built for a comparison.
func (w *walker) synthetic(v any) *node {
	return w.scratch.at("/"+strconv.Itoa(w.ids+1), v, "")
}

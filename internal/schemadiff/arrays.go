package schemadiff

import (
	"strconv"
	"strings"
)

// items checks the leading item schemas (prefixItems, or items as an
// array) index by index, and the schema of the rest (items, or
// additionalItems) from the first index past them.
func (w *walker) items(path string, o *node, cs []*node) []Loss {
	if _, ok := o.kw("prefixItems"); ok {
		if v, ok := o.kw("items"); ok {
			if _, arr := v.([]any); arr {
				return same(path, o, "items", cs) // items as an array beside prefixItems: no rule
			}
		}
	}
	leadKw, restKw := "items", "additionalItems"
	if _, ok := o.kw("prefixItems"); ok {
		leadKw, restKw = "prefixItems", "items"
	} else if v, ok := o.kw("items"); ok {
		if _, arr := v.([]any); !arr {
			restKw = "items"
		}
	}
	for _, x := range [2]string{leadKw, restKw} {
		if v, ok := o.kw(x); ok && subschemaShape[x] == shapeList {
			if _, arr := v.([]any); !arr {
				return same(path, o, x, cs)
			}
		}
	}
	lead, rest := tuple(o)
	cmax := maxLen(cs, "maxItems")
	var out []Loss
	if _, ok := o.kw("prefixItems"); ok {
		if _, ok := o.kw("additionalItems"); ok {
			// No keyword of 2020-12, but one of 2019-09: kept only as it is.
			out = append(out, same(path, o, "additionalItems", cs)...)
		}
	}
	for i, s := range lead {
		if cmax >= 0 && i >= cmax {
			break
		}
		app := atIndex(cs, i)
		if len(app) == 0 {
			out = append(out, w.collapse(path, leadKw, strconv.Itoa(i), s)...)
			continue
		}
		out = append(out, w.down(joinIndex(path, leadKw, i), s, app)...)
	}
	if rest != nil {
		out = append(out, w.restItems(path, restKw, rest, len(lead), cs)...)
	}
	return out
}

// restItems checks schema s, which applies to every item from index from.
func (w *walker) restItems(path, k string, s *node, from int, cs []*node) []Loss {
	if b, ok := s.boolean(); ok && b {
		return nil
	}
	cmax := maxLen(cs, "maxItems")
	p := join(path, k)
	var out []Loss
	clead, complete := leadAll(cs)
	for j := from; j < clead && (cmax < 0 || j < cmax); j++ {
		out = append(out, w.down(p, s, atIndex(cs, j))...)
	}
	if cmax >= 0 && cmax <= max(from, clead) {
		return out
	}
	if rest := restOf(cs); len(rest) > 0 && complete {
		out = append(out, w.down(p, s, rest)...)
	} else {
		out = append(out, w.collapse(path, k, "", s)...)
	}
	return out
}

// unevaluatedItems applies to the items nothing evaluated: past the
// leading lists of o, its allOf members, reference targets and the
// conditional subschemas the compressed side surely satisfies, an item is
// evaluated if one of their contains matches it, so the constraint per
// item is unevaluatedItems or any such contains.
func (w *walker) unevaluatedItems(path string, o *node, cs []*node) []Loss {
	return w.splitting(cs, func(cs []*node) []Loss {
		sources, _ := w.evaluators(o, cs, "items")
		if sources == nil {
			return nil // every item is evaluated
		}
		s := []*node{o.sub("unevaluatedItems")}
		for _, n := range sources {
			s = append(s, n.subsOf("contains")...)
		}
		out := w.restItems(path, "unevaluatedItems", union(s), leadLen(sources), cs)
		if len(s) > 1 {
			// The union is made for the comparison: its branches are no
			// place of the original.
			made := join(path, "unevaluatedItems") + "/anyOf"
			for i, l := range out {
				if strings.HasPrefix(l.Path, made) {
					out[i] = Loss{Path: path, Kind: "unevaluatedItems"}
				}
			}
		}
		return out
	})
}

// contains checks contains with minContains (at least so many items
// match) and maxContains (at most so many do).
func (w *walker) contains(path string, o *node, cs []*node) []Loss {
	s := o.sub("contains")
	minC, maxC := decInt(1), dec{}
	hasMax := false
	if _, ok := o.kw("minContains"); ok {
		d, ok := o.limit("minContains")
		if !ok {
			return same(path, o, "minContains", cs)
		}
		minC = d
	}
	if _, ok := o.kw("maxContains"); ok {
		d, ok := o.limit("maxContains")
		if !ok {
			return same(path, o, "maxContains", cs)
		}
		maxC, hasMax = d, true
	}
	var out []Loss
	if !minC.zero() && !w.containsAtLeast(s, minC, cs) {
		k := "contains"
		if _, ok := o.kw("minContains"); ok {
			k = "minContains"
		}
		out = append(out, Loss{Path: path, Kind: k, What: display(mustKw(o, k))})
	}
	if hasMax && !w.containsAtMost(s, maxC, cs) {
		out = append(out, Loss{Path: path, Kind: "maxContains", What: display(mustKw(o, "maxContains"))})
	}
	return out
}

// mustKw is the value of a keyword n is known to state.
func mustKw(n *node, k string) any {
	v, _ := n.kw(k)
	return v
}

// containsAtLeast says whether the conjunction makes at least n items
// match s.
func (w *walker) containsAtLeast(s *node, n dec, cs []*node) bool {
	w.descents++
	defer func() { w.descents-- }()
	for _, c := range cs {
		cs2 := c.sub("contains")
		if cs2 == nil {
			continue
		}
		cmin := decInt(1)
		if _, ok := c.kw("minContains"); ok {
			d, ok := c.limit("minContains")
			if !ok {
				continue
			}
			cmin = d
		}
		if cmpDec(cmin, n) >= 0 && w.holds(s, []*node{cs2}) {
			return true
		}
	}
	// Leading items that every instance has and that match s.
	if need := minLen(cs, "minItems"); !need.zero() {
		count := 0
		for i := 0; i < leadLen(cs) && cmpDec(decInt(i), need) < 0; i++ {
			if app := atIndex(cs, i); len(app) > 0 && w.holds(s, app) {
				count++
			}
		}
		if cmpDec(decInt(count), n) >= 0 {
			return true
		}
	}
	// Every item matches s, and there are enough of them.
	if l, ok := leadAll(cs); ok && l == 0 && cmpDec(minLen(cs, "minItems"), n) >= 0 {
		if rest := restOf(cs); len(rest) > 0 && w.holds(s, rest) {
			return true
		}
	}
	return false
}

// containsAtMost says whether the conjunction lets at most n items match s.
func (w *walker) containsAtMost(s *node, n dec, cs []*node) bool {
	if m := maxLen(cs, "maxItems"); m >= 0 && cmpDec(decInt(m), n) <= 0 {
		return true
	}
	w.descents++
	defer func() { w.descents-- }()
	for _, c := range cs {
		cs2 := c.sub("contains")
		if cs2 == nil {
			continue
		}
		d, ok := c.limit("maxContains")
		if ok && cmpDec(d, n) <= 0 && w.holds(cs2, []*node{s}) {
			return true
		}
	}
	return false
}

package schemadiff

import (
	"maps"
	"slices"
)

// closedNames lists the only property names the conjunction allows, when a
// member closes its properties (additionalProperties false, no
// patternProperties); nil otherwise.
func closedNames(cs []*node) []string {
	for _, n := range cs {
		ap := n.sub("additionalProperties")
		if ap == nil {
			continue
		}
		if b, ok := ap.boolean(); !ok || b {
			continue
		}
		if _, ok := n.kw("patternProperties"); ok {
			continue
		}
		ps, _, _ := n.subMap("properties")
		names := make([]string, 0, len(ps))
		for _, p := range ps {
			if !forbidden(cs, p.name) {
				names = append(names, p.name)
			}
		}
		return names
	}
	return nil
}

// dependencies checks dependentRequired, dependentSchemas and the
// draft-07 dependencies (an array is read as the one, a schema as the
// other). A dependency is kept when the compressed side states it too,
// requires its names outright, meets its schema anyway, or forbids the
// property it hangs on.
func (w *walker) dependencies(path string, o *node, k string, cs []*node) []Loss {
	deps, present, ok := o.subMap(k)
	if present && !ok {
		return same(path, o, k, cs)
	}
	var out []Loss
	for _, d := range deps {
		if forbidden(cs, d.name) {
			continue
		}
		if names, ok := strList(d.n.val); ok && k != "dependentSchemas" {
			for _, q := range names {
				if !requires(cs, q) && !dependsOn(cs, d.name, q) {
					out = append(out, Loss{Path: path, Kind: k, What: d.name + " requires " + q})
				}
			}
			continue
		}
		if k == "dependentRequired" {
			out = append(out, same(path, o, k, cs)...)
			continue
		}
		p := join(join(path, k), d.name)
		losses := w.diff(p, d.n, cs)
		if len(losses) == 0 {
			continue
		}
		for _, c := range cs {
			for _, ck := range [2]string{"dependentSchemas", "dependencies"} {
				l, _, _ := c.subMap(ck)
				for _, e := range l {
					if e.name != d.name || e.n.val == nil {
						continue
					}
					if _, isList := e.n.val.([]any); isList {
						continue
					}
					if again := w.diff(p, d.n, append(cloneNodes(cs), e.n)); len(again) < len(losses) {
						losses = again
					}
				}
			}
		}
		out = append(out, losses...)
	}
	return out
}

// dependsOn says whether a member of the conjunction requires q whenever
// p is present.
func dependsOn(cs []*node, p, q string) bool {
	for _, c := range cs {
		for _, k := range [2]string{"dependentRequired", "dependencies"} {
			v, _ := c.kw(k)
			m, _ := v.(map[string]any)
			l, _ := strList(m[p])
			if slices.Contains(l, q) {
				return true
			}
		}
	}
	return false
}

// properties checks each properties entry against what the compressed
// side applies to that name; a name it has nothing for is one loss.
func (w *walker) properties(path string, o *node, cs []*node) []Loss {
	props, _, ok := o.subMap("properties")
	if !ok {
		return same(path, o, "properties", cs)
	}
	var out []Loss
	for _, p := range props {
		app := applicable(cs, p.name)
		if len(app) == 0 {
			out = append(out, w.collapse(path, "properties", p.name, p.n)...)
			continue
		}
		out = append(out, w.down(join(join(path, "properties"), p.name), p.n, app)...)
	}
	return out
}

// patternProperties checks each pattern against what the compressed side
// applies to every name the pattern may match: the names it lists, the
// patterns it has (the same pattern covers all), and the rest.
func (w *walker) patternProperties(path string, o *node, cs []*node) []Loss {
	pps, _, ok := o.subMap("patternProperties")
	if !ok {
		return same(path, o, "patternProperties", cs)
	}
	names, groups, complete := classes(cs)
	var out []Loss
	for _, pp := range pps {
		p := join(join(path, "patternProperties"), pp.name)
		// The same pattern on the compressed side applies to every name
		// this one matches.
		var losses []Loss
		for _, name := range names {
			if matches(pp.n.doc, pp.name, name) != no {
				losses = append(losses, w.down(p, pp.n, applicable(cs, name))...)
			}
		}
		if slices.ContainsFunc(patternGroups(cs), func(g patternGroup) bool { return g.pattern == pp.name }) {
			// The same pattern applies to every other name this one matches.
			out = append(out, append(losses, w.down(p, pp.n, patternApplicable(cs, pp.name))...)...)
			continue
		}
		for _, g := range groups {
			losses = append(losses, w.down(p, pp.n, patternApplicable(cs, g.pattern))...)
		}
		if rest := others(cs); len(rest) > 0 && complete {
			losses = append(losses, w.down(p, pp.n, rest)...)
		} else {
			losses = append(losses, w.collapse(path, "patternProperties", pp.name, pp.n)...)
		}
		out = append(out, losses...)
	}
	return out
}

// additional checks additionalProperties: it applies to the names the
// node neither lists nor matches.
func (w *walker) additional(path string, o *node, cs []*node) []Loss {
	listed := map[string]bool{}
	for _, name := range propNames([]*node{o}) {
		listed[name] = true
	}
	var patterns []string
	for _, g := range patternGroups([]*node{o}) {
		patterns = append(patterns, g.pattern)
	}
	return w.beyond(path, "additionalProperties", o.sub("additionalProperties"), listed, patterns, cs)
}

// unevaluatedProperties applies to the names nothing evaluated. Taken as
// evaluated: what o and its allOf members and reference targets list or
// match, the names every branch of an anyOf or oneOf lists, and what the
// conditional subschemas the compressed side surely satisfies list or
// match. Other conditional evaluation is ignored, which only makes the
// original read stricter.
func (w *walker) unevaluatedProperties(path string, o *node, cs []*node) []Loss {
	return w.splitting(cs, func(cs []*node) []Loss {
		sources, listed := w.evaluators(o, cs, "properties")
		if sources == nil {
			return nil // every property is evaluated
		}
		var patterns []string
		for _, n := range sources {
			for _, name := range propNames([]*node{n}) {
				listed[name] = true
			}
			for _, g := range patternGroups([]*node{n}) {
				patterns = append(patterns, g.pattern)
			}
		}
		return w.beyond(path, "unevaluatedProperties", o.sub("unevaluatedProperties"), listed, patterns, cs)
	})
}

// evaluators lists the schemas whose evaluation of properties (or items)
// o surely has for instances of cs: o flattened, and the conditional
// subschemas cs surely satisfies (flattened), with the property names
// every branch of an anyOf or oneOf lists. It returns nil when one of them
// evaluates every property (or item).
func (w *walker) evaluators(o *node, cs []*node, what string) ([]*node, map[string]bool) {
	sources := flatten([]*node{o})
	listed := map[string]bool{}
	for i := 0; i < len(sources); i++ {
		n := sources[i]
		var sure []*node
		for _, k := range [2]string{"anyOf", "oneOf"} {
			branches, _, _ := n.subs(k)
			var common map[string]bool
			for _, b := range branches {
				if w.holds(b, cs) {
					sure = append(sure, b)
				}
				names := map[string]bool{}
				for _, f := range flatten([]*node{b}) {
					for _, name := range propNames([]*node{f}) {
						names[name] = true
					}
				}
				if common == nil {
					common = names
				} else {
					maps.DeleteFunc(common, func(k string, _ bool) bool { return !names[k] })
				}
			}
			maps.Copy(listed, common)
		}
		if iff := n.sub("if"); iff != nil {
			if w.holds(iff, cs) {
				sure = append(sure, iff)
				sure = append(sure, n.subsOf("then")...)
			}
			if w.disjoint(cs, []*node{iff}, 0) {
				sure = append(sure, n.subsOf("else")...)
			}
		}
		ds, _, _ := n.subMap("dependentSchemas")
		for _, d := range ds {
			if requires(cs, d.name) {
				sure = append(sure, d.n)
			}
		}
		for _, f := range flatten(sure) {
			if !slices.ContainsFunc(sources, func(s *node) bool { return s.key() == f.key() }) {
				sources = append(sources, f)
			}
		}
	}
	for _, n := range sources {
		keys := []string{"additionalProperties", "unevaluatedProperties"}
		if what == "items" {
			keys = []string{"unevaluatedItems"}
			if _, rest := tuple(n); rest != nil {
				return nil, nil
			}
		}
		for _, k := range keys {
			if _, ok := n.kw(k); ok && !(n == o && k[0] == 'u') {
				return nil, nil
			}
		}
	}
	return sources, listed
}

// beyond checks schema s, which applies to the property names outside
// listed and the patterns.
func (w *walker) beyond(path, k string, s *node, listed map[string]bool, patterns []string, cs []*node) []Loss {
	if b, ok := s.boolean(); ok && b {
		return nil
	}
	names, groups, complete := classes(cs)
	p := join(path, k)
	var out []Loss
	for _, name := range names {
		if listed[name] || slices.ContainsFunc(patterns, func(q string) bool { return matches(s.doc, q, name) == yes }) {
			continue
		}
		out = append(out, w.down(p, s, applicable(cs, name))...)
	}
	for _, g := range groups {
		if slices.Contains(patterns, g.pattern) {
			continue
		}
		out = append(out, w.down(p, s, patternApplicable(cs, g.pattern))...)
	}
	if rest := others(cs); len(rest) > 0 && complete {
		out = append(out, w.down(p, s, rest)...)
	} else {
		out = append(out, w.collapse(path, k, "", s)...)
	}
	return out
}

// propertyNames is kept by a propertyNames of the compressed side that is
// at least as strict, or by a compressed side whose only allowed names
// all pass it.
func (w *walker) propertyNames(path string, o *node, cs []*node) []Loss {
	s := o.sub("propertyNames")
	p := join(path, "propertyNames")
	str := w.synthetic(map[string]any{"type": "string"})
	if w.holds(s, []*node{str}) {
		return nil // it accepts every name
	}
	var last []Loss
	for _, c := range cs {
		if cn := c.sub("propertyNames"); cn != nil {
			if last = w.down(p, s, []*node{cn, str}); len(last) == 0 {
				return nil
			}
		}
	}
	if names := closedNames(cs); names != nil {
		ok := true
		for _, name := range names {
			if len(w.down(p, s, []*node{w.synthetic(map[string]any{"const": name})})) > 0 {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
	}
	if last != nil {
		return last
	}
	return []Loss{{Path: path, Kind: "propertyNames"}}
}

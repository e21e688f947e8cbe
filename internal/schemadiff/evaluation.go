package schemadiff

import (
	"slices"
	"strings"
)

// unevaluatedProperties and unevaluatedItems apply to what nothing else
// evaluated, and what evaluates a property or an item may depend on which
// branches of anyOf, oneOf or if matched. On the compressed side such a
// keyword is read as the union of itself with every schema that might
// have evaluated the property or item instead: a value either was not
// evaluated, or some such schema accepted it. That reading never makes
// the compressed side stricter than it is.

// subsOf returns n's subschemas under the single-schema keywords ks.
func (n *node) subsOf(ks ...string) []*node {
	var out []*node
	for _, k := range ks {
		if s := n.sub(k); s != nil {
			out = append(out, s)
		}
	}
	return out
}

// conditionals lists, flattened, the subschemas the conjunction applies
// only under a condition, and theirs in turn: the branches of anyOf (all
// of them, even once the conjunction was split on one, since others may
// match as well), of oneOf and of if-then-else (unless split on: then the
// others surely did not match or apply, and the branch taken is in the
// scope, surely applied), and dependentSchemas (unless
// ctx, the whole conjunction, forbids their property). ok is false when
// they nest too deep to list.
func conditionals(scope, ctx []*node) (out []*node, ok bool) {
	seen := map[string]bool{}
	frontier := scope
	for depth := 0; len(frontier) > 0; depth++ {
		if depth > 8 {
			return out, false
		}
		var next []*node
		for _, c := range frontier {
			for _, f := range flatten(conditionalSubs(c, ctx)) {
				if !seen[f.key()] {
					seen[f.key()] = true
					out = append(out, f)
					next = append(next, f)
				}
			}
		}
		frontier = next
	}
	return out, true
}

// conditionalSubs lists the subschemas c applies under a condition.
func conditionalSubs(c *node, ctx []*node) []*node {
	base := c
	if c.orig != nil {
		base = c.orig
	}
	l, _, _ := base.subs("anyOf")
	out := slices.Clone(l)
	l, _, _ = c.subs("oneOf")
	out = append(out, l...)
	out = append(out, c.subsOf("if", "then", "else")...)
	for _, k := range [2]string{"dependentSchemas", "dependencies"} {
		m, _, _ := c.subMap(k)
		for _, e := range m {
			if _, isList := e.n.val.([]any); !isList && !forbiddenPlainly(ctx, e.name) {
				out = append(out, e.n)
			}
		}
	}
	return out
}

// evaluatedHere says whether a member of the conjunction surely (or, for a
// pattern it cannot judge, maybe) evaluates property name itself.
func evaluatedHere(cs []*node, name string) bool {
	for _, c := range cs {
		if c.prop(name) != nil {
			return true
		}
		if _, ok := c.kw("additionalProperties"); ok {
			return true
		}
		pps, _, _ := c.subMap("patternProperties")
		for _, pp := range pps {
			if matches(pp.n.doc, pp.name, name) != no {
				return true
			}
		}
	}
	return false
}

// unevaluated reads keyword k (unevaluatedProperties or unevaluatedItems)
// of each member of the conjunction whose own subschemas (itself, its
// allOf members and reference targets, and for a member split on a
// disjunction the branches taken: the scope the keyword sees) do not
// evaluate the property or item (here says whether they do): as the union
// of itself with what the conditional subschemas of that scope might have
// applied instead (what lists it for one of them). For items, matching
// contains evaluate them too.
func unevaluated(cs []*node, k string, here func(scope []*node) bool, what func(d *node) []*node) []*node {
	var out []*node
	for _, c := range cs {
		u := c.sub(k)
		if u == nil {
			continue
		}
		scope := flatten(append([]*node{c}, c.taken...))
		if here(scope) {
			continue
		}
		conds, ok := conditionals(scope, cs)
		if !ok {
			continue
		}
		alts := []*node{u}
		for _, d := range conds {
			alts = append(alts, what(d)...)
		}
		if k == "unevaluatedItems" {
			for _, d := range scope {
				alts = append(alts, d.subsOf("contains")...)
			}
		}
		out = append(out, union(alts))
	}
	return out
}

// hasAny says whether a member of scope has one of the keywords.
func hasAny(scope []*node, ks ...string) bool {
	for _, n := range scope {
		for _, k := range ks {
			if _, ok := n.kw(k); ok {
				return true
			}
		}
	}
	return false
}

// union is a schema that accepts what any of alts accepts: an anyOf made
// for the comparison, named by its members.
func union(alts []*node) *node {
	seen := map[string]bool{}
	var keep []*node
	for _, a := range alts {
		if !seen[a.key()] {
			seen[a.key()] = true
			keep = append(keep, a)
		}
	}
	if len(keep) == 1 {
		return keep[0]
	}
	keys := make([]string, len(keep))
	for i, a := range keep {
		keys[i] = a.key()
	}
	slices.Sort(keys)
	return &node{doc: keep[0].doc, obj: map[string]any{"anyOf": []any{}}, alts: keep, vkey: "u(" + strings.Join(keys, ",") + ")"}
}

// negation is a schema that accepts what s rejects: a not made for the
// comparison.
func negation(s *node) *node {
	return &node{doc: s.doc, obj: map[string]any{"not": true}, neg: s, vkey: "n(" + s.key() + ")"}
}

// classes lists the property names and the patterns the conjunction or
// its conditional subschemas mention: every other name falls to others.
func classes(cs []*node) ([]string, []patternGroup, bool) {
	conds, ok := conditionals(cs, cs)
	all := append(cloneNodes(cs), conds...)
	return propNames(all), patternGroups(all), ok
}

// leadAll is the longest leading list of item schemas in the conjunction
// or its conditional subschemas.
func leadAll(cs []*node) (int, bool) {
	conds, ok := conditionals(cs, cs)
	return leadLen(append(cloneNodes(cs), conds...)), ok
}

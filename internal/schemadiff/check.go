package schemadiff

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

var isOrdered = func() map[string]bool {
	m := make(map[string]bool, len(ordered))
	for _, k := range ordered {
		m[k] = true
	}
	return m
}()

// check compares o with the flattened conjunction cs, keyword by keyword.
func (w *walker) check(path string, o *node, cs []*node) []Loss {
	f := w.factsOf(cs)
	if f.kinds == 0 {
		return nil // the compressed side accepts nothing here
	}
	if b, ok := o.boolean(); ok {
		if b {
			return nil
		}
		return []Loss{{Path: path, Kind: "false"}}
	}
	if o.malformed() {
		for _, c := range cs {
			if c.malformed() && canon(c.val) == canon(o.val) {
				return nil
			}
		}
		return []Loss{{Path: path, Kind: "schema", What: display(o.val)}}
	}
	var out []Loss
	for _, k := range ordered {
		if !o.has(k) {
			continue
		}
		if dm, ok := domain[k]; ok && f.kinds&dm == 0 {
			continue
		}
		if f.finite && o.passes(k, f.values) {
			continue
		}
		out = append(out, w.keyword(path, o, k, cs, f)...)
	}
	for _, k := range o.keywords() {
		if annotations[k] || structural[k] || isOrdered[k] || companions[k] != "" {
			continue
		}
		out = append(out, same(path, o, k, cs)...)
	}
	return out
}

// has reports whether o states keyword k, or for the array keywords any
// of prefixItems, items and additionalItems.
func (o *node) has(k string) bool {
	if k == "items" {
		for _, x := range [3]string{"prefixItems", "items", "additionalItems"} {
			if _, ok := o.kw(x); ok {
				return true
			}
		}
		return false
	}
	_, ok := o.kw(k)
	return ok
}

// passes says whether keyword k of o (with its companions) plainly
// accepts every one of the values.
func (o *node) passes(k string, values []any) bool {
	ks := []string{k}
	for c, of := range companions {
		if of == k {
			ks = append(ks, c)
		}
	}
	for _, v := range values {
		for _, x := range ks {
			if o.eval(x, v) != yes {
				return false
			}
		}
	}
	return true
}

// same keeps keyword k of o only if a member of cs states it with an equal
// value: the rule for keywords with no finer one, unknown keywords
// included.
func same(path string, o *node, k string, cs []*node) []Loss {
	v, _ := o.kw(k)
	c := canon(v)
	for _, n := range cs {
		if x, ok := n.kw(k); ok && canon(x) == c {
			return nil
		}
	}
	return []Loss{{Path: path, Kind: kindName(k), What: display(v)}}
}

// kindName is a keyword as a Loss names it: JSON-quoted when it is empty
// or holds spaces or control characters.
func kindName(k string) string {
	if k == "" || strings.IndexFunc(k, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return display(k)
	}
	return k
}

func (w *walker) keyword(path string, o *node, k string, cs []*node, f facts) []Loss {
	v, _ := o.kw(k)
	lost := func() []Loss { return []Loss{{Path: path, Kind: k, What: display(v)}} }
	switch k {
	case "type":
		m, ok := o.nodeType()
		if !ok {
			return same(path, o, k, cs)
		}
		if f.kinds&^m == 0 {
			return nil
		}
		return lost()
	case "enum", "const":
		l, ok := members(k, v)
		if !ok {
			return same(path, o, k, cs)
		}
		if k == "const" {
			return lost()
		}
		if f.finite {
			var out []Loss
			for _, x := range f.values {
				if o.eval(k, x) != yes {
					out = append(out, Loss{Path: path, Kind: k, What: "admits " + display(x)})
				}
			}
			return out
		}
		out := make([]Loss, 0, len(l))
		for _, x := range l {
			out = append(out, Loss{Path: path, Kind: k, What: display(x)})
		}
		return out
	case "multipleOf":
		m, ok := number(v)
		if !ok || m.neg || m.zero() {
			return same(path, o, k, cs)
		}
		if f.integer && multiple(decInt(1), m) {
			return nil
		}
		for _, c := range cs {
			if x, ok := c.kw(k); ok {
				if d, ok := number(x); ok && !d.neg && !d.zero() && multiple(d, m) {
					return nil
				}
			}
		}
		if f.kinds&kFrac == 0 && multiple(decInt(1), m) {
			return nil
		}
		return lost()
	case "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum":
		b, ok := o.boundOf(k)
		if !ok {
			if _, isBool := v.(bool); isBool {
				return nil // draft-04: checked with its bound
			}
			return same(path, o, k, cs)
		}
		upper := k == "maximum" || k == "exclusiveMaximum"
		for _, c := range cs {
			for _, cb := range c.bounds(upper) {
				if tighter(cb, b, upper) {
					return nil
				}
			}
		}
		return lost()
	case "maxLength", "maxItems", "maxProperties":
		l, ok := o.limit(k)
		if !ok {
			return same(path, o, k, cs)
		}
		if m := maxLen(cs, k); m >= 0 && cmpDec(decInt(m), l) <= 0 {
			return nil
		}
		if k == "maxProperties" && closedNames(cs) != nil && cmpDec(decInt(len(closedNames(cs))), l) <= 0 {
			return nil
		}
		return lost()
	case "minLength", "minItems", "minProperties":
		l, ok := o.limit(k)
		if !ok {
			return same(path, o, k, cs)
		}
		if cmpDec(minLen(cs, k), l) >= 0 {
			return nil
		}
		return lost()
	case "pattern", "format", "contentEncoding", "contentMediaType":
		return same(path, o, k, cs)
	case "contentSchema":
		s := o.sub(k)
		var last []Loss
		for _, c := range cs {
			if cc := c.sub(k); cc != nil {
				if last = w.diff(join(path, k), s, []*node{cc}); len(last) == 0 {
					return nil
				}
			}
		}
		if last == nil {
			last = w.collapse(path, k, "", s)
		}
		return last
	case "uniqueItems":
		switch v {
		case false:
			return nil
		case true:
		default:
			return same(path, o, k, cs)
		}
		for _, c := range cs {
			if x, _ := c.kw(k); x == true {
				return nil
			}
		}
		if m := maxLen(cs, "maxItems"); m >= 0 && m <= 1 {
			return nil
		}
		return lost()
	case "required":
		names, ok := strList(v)
		if !ok {
			return same(path, o, k, cs)
		}
		var out []Loss
		for _, name := range names {
			if !requires(cs, name) {
				out = append(out, Loss{Path: path, Kind: k, What: name})
			}
		}
		return out
	case "dependentRequired", "dependencies", "dependentSchemas":
		return w.dependencies(path, o, k, cs)
	case "properties":
		return w.properties(path, o, cs)
	case "patternProperties":
		return w.patternProperties(path, o, cs)
	case "additionalProperties":
		return w.additional(path, o, cs)
	case "unevaluatedProperties":
		return w.unevaluatedProperties(path, o, cs)
	case "propertyNames":
		return w.propertyNames(path, o, cs)
	case "items":
		return w.items(path, o, cs)
	case "unevaluatedItems":
		return w.unevaluatedItems(path, o, cs)
	case "contains":
		return w.contains(path, o, cs)
	case "allOf":
		l, _, ok := o.subs(k)
		if !ok {
			return same(path, o, k, cs)
		}
		var out []Loss
		for i, s := range l {
			out = append(out, w.diff(joinIndex(path, k, i), s, cs)...)
		}
		return out
	case "anyOf":
		return w.anyOf(path, o, cs)
	case "oneOf":
		return w.oneOf(path, o, cs)
	case "not":
		return w.not(path, o, cs)
	case "if":
		return w.ifThenElse(path, o, cs)
	case "$ref", "$dynamicRef", "$recursiveRef":
		if t := o.resolve(k); t != nil {
			return w.diff(join(path, k), t, cs)
		}
		// Unresolved: kept only by the same reference from the same base.
		for _, c := range cs {
			if x, ok := c.kw(k); ok && canon(x) == canon(v) && c.resolve(k) == nil && sameBase(o.doc, c.doc) && o.resource == c.resource {
				return nil
			}
		}
		s, _ := v.(string)
		return []Loss{{Path: path, Kind: k, What: "unresolved " + s}}
	case "readOnly":
		switch v {
		case false:
			return nil
		case true:
		default:
			return same(path, o, k, cs)
		}
		for _, c := range cs {
			if x, _ := c.kw(k); x == true {
				return nil
			}
		}
		return lost()
	}
	return same(path, o, k, cs)
}

func sameBase(a, b *doc) bool {
	if a.base == nil || b.base == nil {
		return a.base == nil && b.base == nil
	}
	return a.base.String() == b.base.String()
}

// collapse reports a subschema the compressed side left with nothing in
// its place as one loss, if it constrained anything.
func (w *walker) collapse(path, k, what string, o *node) []Loss {
	if len(w.diff(join(path, k), o, nil)) == 0 {
		return nil
	}
	return []Loss{{Path: path, Kind: k, What: what}}
}

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
	p := join(path, "contains")
	if !minC.zero() && !w.containsAtLeast(p, s, minC, cs) {
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

func mustKw(n *node, k string) any {
	v, _ := n.kw(k)
	return v
}

// containsAtLeast says whether the conjunction makes at least n items
// match s.
func (w *walker) containsAtLeast(p string, s *node, n dec, cs []*node) bool {
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
			base := append(cloneNodes(cs[:i]), c.without(bit))
			base = append(base, cs[i+1:]...)
			for j, b := range cb {
				if l := fits(append(cloneNodes(base), b), j); len(l) > 0 {
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
		rest := append(cloneNodes(cs[:i]), c.without(dropOneOf))
		rest = append(rest, cs[i+1:]...)
		aligned = nil
		equal := true
		for j := range branches {
			l := w.diff(joinIndex(path, "oneOf", j), branches[j], append(cloneNodes(rest), cb[j]))
			aligned = append(aligned, l...)
			if len(l) > 0 || !w.holds(cb[j], append(cloneNodes(rest), branches[j])) {
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
		rest := append(cloneNodes(cs[:i]), c.without(dropIf))
		rest = append(rest, cs[i+1:]...)
		if !w.holds(iff, append(cloneNodes(rest), ci)) || !w.holds(ci, append(cloneNodes(rest), iff)) {
			continue
		}
		yes := append(cloneNodes(rest), ci)
		if t := c.sub("then"); t != nil {
			yes = append(yes, t)
		}
		nope := cloneNodes(rest)
		if e := c.sub("else"); e != nil {
			nope = append(nope, e)
		}
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

// synthetic makes a node of a value built for a comparison.
func (w *walker) synthetic(v any) *node {
	return w.scratch.at("/"+strconv.Itoa(w.ids+1), v, "")
}

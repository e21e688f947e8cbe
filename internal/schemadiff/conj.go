package schemadiff

import (
	"slices"
	"strconv"
	"strings"
)

// A conjunction is a list of schemas an instance must all satisfy: the
// schemas of the compressed side that apply at one place. Reasoning about
// it only ever under-reads it (a keyword not understood adds nothing), so
// a conjunction is never taken to be stricter than it is.

// flatten adds to a conjunction what its members apply in place without
// condition: the targets of their references and their allOf members.
// Boolean true schemas add nothing and are left out.
//
// A copy that leaves out a disjunction stands for its node wherever the
// conjunction reaches it: the branch taken is the one in the conjunction.
func flatten(in []*node) []*node {
	out := make([]*node, 0, len(in))
	seen := make(map[string]bool, len(in))
	var shadow map[string]*node
	for _, n := range in {
		if n.orig != nil {
			if shadow == nil {
				shadow = map[string]*node{}
			}
			shadow[n.orig.key()] = n
		}
	}
	var add func(n *node, depth int)
	add = func(n *node, depth int) {
		if n == nil || depth > maxDepth {
			return
		}
		if c, ok := shadow[n.key()]; ok && n.orig == nil {
			n = c
		}
		if seen[n.key()] {
			return
		}
		seen[n.key()] = true
		if b, ok := n.boolean(); ok && b {
			return
		}
		out = append(out, n)
		for _, k := range refKeywords {
			add(n.resolve(k), depth+1)
		}
		all, _, _ := n.subs("allOf")
		for _, s := range all {
			add(s, depth+1)
		}
	}
	for _, n := range in {
		add(n, 0)
	}
	return out
}

// conjKey names a conjunction whatever the order of its members.
func conjKey(cs []*node) string {
	ks := make([]string, len(cs))
	for i, n := range cs {
		ks[i] = n.key()
	}
	slices.Sort(ks)
	return strings.Join(ks, ",")
}

// facts are what a conjunction lets through, read cheaply: the kinds of
// instance it may accept and, when an enum or const bounds it, the values.
type facts struct {
	kinds   uint8
	finite  bool  // values lists every value it may accept
	values  []any // deduplicated
	integer bool  // its numbers are integers (a whole multipleOf)
}

// factsOf reads the facts of a flattened conjunction.
func (w *walker) factsOf(cs []*node) facts {
	f := facts{kinds: kAll}
	for _, n := range cs {
		if b, ok := n.boolean(); ok && !b {
			return facts{finite: true}
		}
		if s := n.sub("not"); s != nil && acceptsAll(s) {
			return facts{finite: true}
		}
		if m, ok := n.nodeType(); ok {
			f.kinds &= m
		}
		if m, ok := n.kw("multipleOf"); ok {
			if d, ok := number(m); ok && !d.neg && !d.zero() && d.integer() {
				f.integer = true
			}
		}
	}
	if f.integer {
		f.kinds &^= kFrac
	}
	f.kinds &^= contradictions(cs)
	for _, n := range cs {
		for _, k := range [2]string{"enum", "const"} {
			v, ok := n.kw(k)
			if !ok {
				continue
			}
			l, ok := members(k, v)
			if !ok {
				continue
			}
			if !f.finite {
				f.finite, f.values = true, l
				continue
			}
			keep := make(map[string]bool, len(l))
			for _, e := range l {
				keep[canon(e)] = true
			}
			f.values = slices.DeleteFunc(slices.Clone(f.values), func(e any) bool { return !keep[canon(e)] })
		}
	}
	if !f.finite {
		return f
	}
	seen := map[string]bool{}
	var kept []any
	var kinds uint8
	for _, v := range f.values {
		c := canon(v)
		if seen[c] || kindOf(v)&f.kinds == 0 || rejects(cs, v) {
			continue
		}
		seen[c] = true
		kept = append(kept, v)
		kinds |= kindOf(v)
	}
	f.values, f.kinds = kept, f.kinds&kinds
	return f
}

// acceptsAll says whether a schema plainly accepts everything: true, or
// an object of annotations and structural keywords only.
func acceptsAll(s *node) bool {
	if b, ok := s.boolean(); ok {
		return b
	}
	if s.obj == nil {
		return false
	}
	for k := range s.obj {
		if !annotations[k] && !structural[k] {
			return false
		}
	}
	return true
}

// rejects says whether some keyword of the conjunction plainly rejects v.
func rejects(cs []*node, v any) bool {
	for _, n := range cs {
		if b, ok := n.boolean(); ok && !b {
			return true
		}
		for _, k := range n.keywords() {
			if n.eval(k, v) == no {
				return true
			}
		}
	}
	return false
}

// contradictions are the kinds of instance a conjunction's limits leave
// no room for: minLength above maxLength, a required property that is
// forbidden, and the like.
func contradictions(cs []*node) uint8 {
	var out uint8
	clash := func(lo, hi string) bool {
		var l, h *dec
		for _, n := range cs {
			if d, ok := n.limit(lo); ok && (l == nil || cmpDec(d, *l) > 0) {
				l = &d
			}
			if d, ok := n.limit(hi); ok && (h == nil || cmpDec(d, *h) < 0) {
				h = &d
			}
		}
		return l != nil && h != nil && cmpDec(*l, *h) > 0
	}
	if clash("minLength", "maxLength") {
		out |= kString
	}
	if clash("minItems", "maxItems") {
		out |= kArray
	}
	if clash("minProperties", "maxProperties") {
		out |= kObject
	}
	var lo, hi *bound
	for _, n := range cs {
		for _, b := range n.bounds(false) {
			if lo == nil || tighter(b, *lo, false) {
				lo = &b
			}
		}
		for _, b := range n.bounds(true) {
			if hi == nil || tighter(b, *hi, true) {
				hi = &b
			}
		}
	}
	if lo != nil && hi != nil {
		if c := cmpDec(lo.v, hi.v); c > 0 || (c == 0 && (lo.excl || hi.excl)) {
			out |= kNumber
		}
	}
	req := requiredNames(cs)
	for _, p := range req {
		if forbidden(cs, p) {
			out |= kObject
			break
		}
	}
	for _, n := range cs {
		if d, ok := n.limit("maxProperties"); ok && cmpDec(decInt(len(req)), d) > 0 {
			out |= kObject
		}
	}
	return out
}

// requiredNames is the union of the conjunction's required lists.
func requiredNames(cs []*node) []string {
	var out []string
	for _, n := range cs {
		v, _ := n.kw("required")
		l, _ := strList(v)
		for _, s := range l {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// requires says whether the conjunction requires property p.
func requires(cs []*node, p string) bool {
	return slices.Contains(requiredNames(cs), p)
}

// applicable lists the schemas of the conjunction that apply to the value
// of property name: its properties entries, the patternProperties entries
// that surely match, additionalProperties where surely nothing else does,
// and what unevaluatedProperties implies where nothing surely evaluates
// the name.
func applicable(cs []*node, name string) []*node {
	out := listedFor(cs, name)
	out = append(out, unevaluated(cs, "unevaluatedProperties",
		func(scope []*node) bool { return evaluatedHere(scope, name) },
		func(d *node) []*node {
			var alts []*node
			if s := d.prop(name); s != nil {
				alts = append(alts, s)
			}
			pps, _, _ := d.subMap("patternProperties")
			for _, pp := range pps {
				if matches(pp.n.doc, pp.name, name) != no {
					alts = append(alts, pp.n)
				}
			}
			return append(alts, d.subsOf("additionalProperties", "unevaluatedProperties")...)
		})...)
	return out
}

// listedFor lists the properties, patternProperties (surely matching) and
// additionalProperties (where surely nothing else applies) entries of the
// conjunction for property name.
func listedFor(cs []*node, name string) []*node {
	var out []*node
	for _, n := range cs {
		covered, maybe := false, false
		if s := n.prop(name); s != nil {
			out = append(out, s)
			covered = true
		}
		pps, _, _ := n.subMap("patternProperties")
		for _, pp := range pps {
			switch matches(pp.n.doc, pp.name, name) {
			case yes:
				out = append(out, pp.n)
				covered = true
			case unknown:
				maybe = true
			}
		}
		if !covered && !maybe {
			if s := n.sub("additionalProperties"); s != nil {
				out = append(out, s)
			}
		}
	}
	return out
}

// forbidden says whether the conjunction plainly forbids property p.
func forbidden(cs []*node, p string) bool {
	return forbiddenBy(cs, p, applicable(cs, p))
}

// forbiddenPlainly is forbidden without what unevaluatedProperties implies.
func forbiddenPlainly(cs []*node, p string) bool {
	return forbiddenBy(cs, p, listedFor(cs, p))
}

// forbiddenBy says whether one of the schemas app that apply to p is
// false, or a propertyNames rejects p.
func forbiddenBy(cs []*node, p string, app []*node) bool {
	for _, s := range app {
		if b, ok := s.boolean(); ok && !b {
			return true
		}
	}
	for _, n := range cs {
		pn := n.sub("propertyNames")
		if pn == nil {
			continue
		}
		if b, ok := pn.boolean(); ok && !b {
			return true
		}
		for _, k := range pn.keywords() {
			if pn.eval(k, p) == no {
				return true
			}
		}
	}
	return false
}

// propNames lists the names any member of the conjunction lists under
// properties, sorted.
func propNames(cs []*node) []string {
	var out []string
	for _, n := range cs {
		ps, _, _ := n.subMap("properties")
		for _, p := range ps {
			out = append(out, p.name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// patternGroup gathers the conjunction's patternProperties entries that
// share one pattern.
type patternGroup struct {
	pattern string
	nodes   []*node
}

// patternGroups groups the conjunction's patternProperties by pattern, sorted.
func patternGroups(cs []*node) []patternGroup {
	var out []patternGroup
	for _, n := range cs {
		pps, _, _ := n.subMap("patternProperties")
		for _, pp := range pps {
			i := slices.IndexFunc(out, func(g patternGroup) bool { return g.pattern == pp.name })
			if i < 0 {
				out = append(out, patternGroup{pattern: pp.name})
				i = len(out) - 1
			}
			out[i].nodes = append(out[i].nodes, pp.n)
		}
	}
	slices.SortFunc(out, func(a, b patternGroup) int { return strings.Compare(a.pattern, b.pattern) })
	return out
}

// others lists what applies to a property name that no member of the
// conjunction lists or matches, nor any subschema it applies under a
// condition: each member's additionalProperties or, failing those, what
// unevaluatedProperties implies.
func others(cs []*node) []*node {
	var out []*node
	for _, n := range cs {
		if s := n.sub("additionalProperties"); s != nil {
			out = append(out, s)
		}
	}
	return append(out, unevaluated(cs, "unevaluatedProperties",
		func(scope []*node) bool { return hasAny(scope, "additionalProperties") },
		func(d *node) []*node { return d.subsOf("additionalProperties", "unevaluatedProperties") })...)
}

// patternApplicable lists what applies to the names a pattern matches
// that the conjunction (and what it applies under a condition) lists
// nowhere: the entries with that very pattern, the additionalProperties
// of members without patterns, and what unevaluatedProperties implies.
func patternApplicable(cs []*node, pattern string) []*node {
	var out []*node
	for _, g := range patternGroups(cs) {
		if g.pattern == pattern {
			out = append(out, g.nodes...)
		}
	}
	// additionalProperties applies to names its node neither lists nor
	// matches; these names are listed nowhere.
	for _, n := range cs {
		if _, ok := n.kw("patternProperties"); ok {
			continue
		}
		if s := n.sub("additionalProperties"); s != nil {
			out = append(out, s)
		}
	}
	return append(out, unevaluated(cs, "unevaluatedProperties",
		func(scope []*node) bool { return hasAny(scope, "patternProperties", "additionalProperties") },
		func(d *node) []*node {
			pps, _, _ := d.subMap("patternProperties")
			var alts []*node
			for _, pp := range pps {
				alts = append(alts, pp.n)
			}
			return append(alts, d.subsOf("additionalProperties", "unevaluatedProperties")...)
		})...)
}

// tuple reads a node's array keywords: the schemas of the leading items
// (prefixItems, or items as an array), and the schema of the rest (items
// beside prefixItems or alone, additionalItems beside an items array).
func tuple(n *node) (lead []*node, rest *node) {
	if p, present, ok := n.subs("prefixItems"); present && ok {
		if v, ok := n.kw("items"); ok {
			if _, arr := v.([]any); !arr {
				rest = n.sub("items")
			}
		}
		return p, rest
	}
	if l, present, ok := n.subs("items"); present && ok {
		return l, n.sub("additionalItems")
	}
	return nil, n.sub("items")
}

// atIndex lists the schemas of the conjunction that apply to item i, and
// what unevaluatedItems implies where nothing surely evaluates it.
func atIndex(cs []*node, i int) []*node {
	var out []*node
	for _, n := range cs {
		lead, rest := tuple(n)
		switch {
		case i < len(lead):
			out = append(out, lead[i])
		case rest != nil:
			out = append(out, rest)
		}
	}
	{
		out = append(out, unevaluated(cs, "unevaluatedItems",
			func(scope []*node) bool { return leadLen(scope) > i || hasRest(scope) },
			func(d *node) []*node {
				lead, rest := tuple(d)
				var alts []*node
				if i < len(lead) {
					alts = append(alts, lead[i])
				}
				if rest != nil {
					alts = append(alts, rest)
				}
				return append(alts, d.subsOf("contains", "unevaluatedItems")...)
			})...)
	}
	return out
}

// hasRest says whether a member of scope has a schema for the rest of the items.
func hasRest(scope []*node) bool {
	for _, n := range scope {
		if _, rest := tuple(n); rest != nil {
			return true
		}
	}
	return false
}

// restOf lists what applies to the items past every leading list of the
// conjunction and of what it applies under a condition.
func restOf(cs []*node) []*node {
	var out []*node
	for _, n := range cs {
		if _, rest := tuple(n); rest != nil {
			out = append(out, rest)
		}
	}
	return append(out, unevaluated(cs, "unevaluatedItems",
		func(scope []*node) bool { return hasRest(scope) },
		func(d *node) []*node {
			_, rest := tuple(d)
			var alts []*node
			if rest != nil {
				alts = append(alts, rest)
			}
			return append(alts, d.subsOf("contains", "unevaluatedItems")...)
		})...)
}

// leadLen is the longest list of leading item schemas in the conjunction.
func leadLen(cs []*node) int {
	l := 0
	for _, n := range cs {
		lead, _ := tuple(n)
		l = max(l, len(lead))
	}
	return l
}

// maxLen is the most items (or members, for "maxProperties") the
// conjunction allows, or -1 for no limit it states plainly.
func maxLen(cs []*node, k string) int {
	best := -1
	for _, n := range cs {
		if d, ok := n.limit(k); ok && d.zero() {
			best = 0
		} else if ok {
			if v, err := strconv.Atoi(d.digits + strings.Repeat("0", expSmall(d))); err == nil && (best < 0 || v < best) {
				best = v
			}
		}
		if k == "maxItems" {
			lead, rest := tuple(n)
			if rest == nil {
				continue
			}
			if b, ok := rest.boolean(); ok && !b && (best < 0 || len(lead) < best) {
				best = len(lead)
			}
		}
	}
	return best
}

// expSmall is d's exponent when it is small, else a value that makes the
// number too long to read.
func expSmall(d dec) int {
	if d.zero() {
		return 0
	}
	if !d.exp.IsInt64() || d.exp.Int64() > 18 {
		return 19
	}
	return int(d.exp.Int64())
}

// minLen is the fewest items (or members) the conjunction requires.
func minLen(cs []*node, k string) dec {
	best := decInt(0)
	for _, n := range cs {
		if d, ok := n.limit(k); ok && cmpDec(d, best) > 0 {
			best = d
		}
	}
	if k == "minProperties" {
		if r := decInt(len(requiredNames(cs))); cmpDec(r, best) > 0 {
			best = r
		}
	}
	if k == "minItems" {
		// contains needs minContains (1 unless stated) matching items.
		for _, n := range cs {
			if _, ok := n.kw("contains"); !ok {
				continue
			}
			d := decInt(1)
			if _, ok := n.kw("minContains"); ok {
				if d, ok = n.limit("minContains"); !ok {
					continue
				}
			}
			if cmpDec(d, best) > 0 {
				best = d
			}
		}
	}
	return best
}

// noProperties says whether the conjunction allows objects no property at
// all (maxProperties 0, or propertyNames false).
func noProperties(cs []*node) bool {
	if m := maxLen(cs, "maxProperties"); m == 0 {
		return true
	}
	for _, n := range cs {
		if pn := n.sub("propertyNames"); pn != nil {
			if b, ok := pn.boolean(); ok && !b {
				return true
			}
		}
	}
	return false
}

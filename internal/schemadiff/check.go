package schemadiff

import (
	"strings"
)

// propertyKeywords constrain the properties an object has, if any.
var propertyKeywords = map[string]bool{
	"properties": true, "patternProperties": true, "additionalProperties": true,
	"unevaluatedProperties": true, "propertyNames": true, "dependentRequired": true,
	"dependencies": true, "dependentSchemas": true, "maxProperties": true,
}

// isOrdered marks the keywords with a rule of their own.
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
		if propertyKeywords[k] && noProperties(cs) {
			continue // constraints on properties an object cannot have
		}
		out = append(out, w.keyword(path, o, k, cs, f)...)
	}
	for _, k := range o.keywords() {
		if annotations[k] || structural[k] || isOrdered[k] || companions[k] != "" {
			continue
		}
		if k == "id" && o.doc.dialect == dialect4 {
			continue // draft-04's $id
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

// keyword applies the rule for keyword k of o: what of it the
// conjunction cs, whose facts are f, does not keep.
func (w *walker) keyword(path string, o *node, k string, cs []*node, f facts) []Loss {
	switch k {
	case "type":
		return typeLoss(path, o, k, cs, f)
	case "enum", "const":
		return enumLoss(path, o, k, cs, f)
	case "multipleOf":
		return multipleOfLoss(path, o, k, cs, f)
	case "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum":
		return boundLoss(path, o, k, cs)
	case "maxLength", "maxItems", "maxProperties", "minLength", "minItems", "minProperties":
		return limitLoss(path, o, k, cs)
	case "pattern", "format", "contentEncoding", "contentMediaType":
		return same(path, o, k, cs)
	case "contentSchema":
		return w.contentSchema(path, o, k, cs)
	case "uniqueItems", "readOnly":
		return flagLoss(path, o, k, cs)
	case "required":
		return requiredLoss(path, o, k, cs)
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
		return w.allOf(path, o, k, cs)
	case "anyOf":
		return w.anyOf(path, o, cs)
	case "oneOf":
		return w.oneOf(path, o, cs)
	case "not":
		return w.not(path, o, cs)
	case "if":
		return w.ifThenElse(path, o, cs)
	case "$ref", "$dynamicRef", "$recursiveRef":
		return w.ref(path, o, k, cs)
	}
	return same(path, o, k, cs)
}

// lostWhole is the loss of keyword k of o, whole.
func lostWhole(path string, o *node, k string) []Loss {
	v, _ := o.kw(k)
	return []Loss{{Path: path, Kind: k, What: display(v)}}
}

// typeLoss is keyword for "type": kept when the facts admit no kind it
// leaves out.
func typeLoss(path string, o *node, k string, cs []*node, f facts) []Loss {
	m, ok := o.nodeType()
	if !ok {
		return same(path, o, k, cs)
	}
	if f.kinds&^m == 0 {
		return nil
	}
	return lostWhole(path, o, k)
}

// enumLoss is keyword for "enum" and "const": with a finite set of values
// the conjunction admits, the loss is those o does not; otherwise each
// member of o is lost.
func enumLoss(path string, o *node, k string, cs []*node, f facts) []Loss {
	v, _ := o.kw(k)
	l, ok := members(k, v)
	if !ok {
		return same(path, o, k, cs)
	}
	if k == "const" {
		return lostWhole(path, o, k)
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
}

// multipleOfLoss is keyword for "multipleOf": kept by a multiple of it,
// or by integers when it divides one.
func multipleOfLoss(path string, o *node, k string, cs []*node, f facts) []Loss {
	v, _ := o.kw(k)
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
	return lostWhole(path, o, k)
}

// boundLoss is keyword for the numeric bounds: kept by a bound as tight
// on the same side.
func boundLoss(path string, o *node, k string, cs []*node) []Loss {
	b, ok := o.boundOf(k)
	if !ok {
		if v, _ := o.kw(k); isBool(v) {
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
	return lostWhole(path, o, k)
}

func isBool(v any) bool {
	_, ok := v.(bool)
	return ok
}

// limitLoss is keyword for the limits on lengths and counts: a maximum is
// kept by one as low, or by a closed set of properties as few; a minimum
// by one as high.
func limitLoss(path string, o *node, k string, cs []*node) []Loss {
	l, ok := o.limit(k)
	if !ok {
		return same(path, o, k, cs)
	}
	switch k {
	case "maxLength", "maxItems", "maxProperties":
		if m := maxLen(cs, k); m >= 0 && cmpDec(decInt(m), l) <= 0 {
			return nil
		}
		if k == "maxProperties" && closedNames(cs) != nil && cmpDec(decInt(len(closedNames(cs))), l) <= 0 {
			return nil
		}
	default:
		if cmpDec(minLen(cs, k), l) >= 0 {
			return nil
		}
	}
	return lostWhole(path, o, k)
}

// contentSchema is keyword for "contentSchema": kept by a content schema
// that keeps it.
func (w *walker) contentSchema(path string, o *node, k string, cs []*node) []Loss {
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
}

// flagLoss is keyword for "uniqueItems" and "readOnly": false asks
// nothing; true is kept by true, and uniqueItems by at most one item.
func flagLoss(path string, o *node, k string, cs []*node) []Loss {
	switch v, _ := o.kw(k); v {
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
	if k == "uniqueItems" {
		if m := maxLen(cs, "maxItems"); m >= 0 && m <= 1 {
			return nil
		}
	}
	return lostWhole(path, o, k)
}

// requiredLoss is keyword for "required": each name the conjunction does
// not require is lost.
func requiredLoss(path string, o *node, k string, cs []*node) []Loss {
	v, _ := o.kw(k)
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
}

// allOf is keyword for "allOf": what each of its subschemas loses.
func (w *walker) allOf(path string, o *node, k string, cs []*node) []Loss {
	l, _, ok := o.subs(k)
	if !ok {
		return same(path, o, k, cs)
	}
	var out []Loss
	for i, s := range l {
		out = append(out, w.diff(joinIndex(path, k, i), s, cs)...)
	}
	return out
}

// ref is keyword for the references: a reference resolved is followed;
// one unresolved is kept only by the same reference from the same base.
func (w *walker) ref(path string, o *node, k string, cs []*node) []Loss {
	if t := o.resolve(k); t != nil {
		return w.diff(join(path, k), t, cs)
	}
	v, _ := o.kw(k)
	for _, c := range cs {
		if x, ok := c.kw(k); ok && canon(x) == canon(v) && c.resolve(k) == nil && sameBase(o.doc, c.doc) && o.resource == c.resource {
			return nil
		}
	}
	s, _ := v.(string)
	return []Loss{{Path: path, Kind: k, What: "unresolved " + s}}
}

// sameBase says whether two documents resolve references against the
// same base URI.
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

package schemadiff

import "fmt"

// Verdict is what a [Validator] can say of an instance.
type Verdict uint8

const (
	// Unknown: the instance may be invalid; something in the schema
	// that applies to it is not checked (see [Validator]).
	Unknown Verdict = iota
	// Valid: the schema accepts the instance.
	Valid
	// Invalid: the schema rejects the instance.
	Invalid
)

// String returns "unknown", "valid" or "invalid".
func (v Verdict) String() string {
	switch v {
	case Valid:
		return "valid"
	case Invalid:
		return "invalid"
	}
	return "unknown"
}

// Validator checks instances against one schema: a subset of JSON Schema,
// read as [Compare] reads it (dialects, references, nullable), answering
// Unknown for whatever it does not check, so that a caller that needs
// to know an instance is valid can take Unknown as possibly invalid.
//
// Checked: boolean schemas; type (with nullable), enum, const;
// multipleOf, maximum, minimum, exclusiveMaximum, exclusiveMinimum
// (draft-04's boolean forms too); maxLength, minLength; pattern, when it
// keeps to the syntax ECMA-262 and Go's regexp read alike and the string
// is printable ASCII; maxItems, minItems, uniqueItems, items (a schema or,
// before 2020-12, an array with additionalItems), prefixItems, contains
// with minContains and maxContains; maxProperties, minProperties,
// required, dependentRequired, dependentSchemas, dependencies (either
// form), properties, patternProperties (under the same condition as
// pattern), additionalProperties, propertyNames; allOf, anyOf, oneOf,
// not, if with then and else; $ref followed within the document, to the
// root, through JSON pointers ($defs, definitions or anywhere) and
// anchors, as Compare follows it; readOnly false. The annotations
// ([IsAnnotation]) and the structural keywords constrain nothing.
//
// Unknown: format, contentEncoding, contentMediaType and contentSchema
// for a string; unevaluatedProperties and unevaluatedItems other than
// true; $dynamicRef and $recursiveRef; a reference that does not resolve
// within the document; readOnly true; a keyword of a malformed value;
// any keyword the package does not know; and a check past 256 nested
// schemas or 50,000 steps.
//
// A Validator is safe for concurrent use only by one goroutine at a
// time: it keeps the nodes of its schema as it reads them.
type Validator struct {
	d     *doc
	ids   int
	steps int
}

// NewValidator decodes schema; invalid JSON is an error.
func NewValidator(schema []byte) (*Validator, error) {
	s, err := decode(schema)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	v := &Validator{}
	v.d = newDoc(s, &v.ids)
	return v, nil
}

// Validate says whether the schema accepts the JSON instance; an instance
// that is not one JSON value is Invalid. Its work is bounded whatever the
// input.
func (v *Validator) Validate(instance []byte) Verdict {
	x, err := decode(instance)
	if err != nil {
		return Invalid
	}
	v.steps = 0
	return verdictOf(v.check(v.d.rootNode(), x, 0))
}

func verdictOf(t tri) Verdict {
	switch t {
	case yes:
		return Valid
	case no:
		return Invalid
	}
	return Unknown
}

// The bounds of one validation, as Compare's.
const (
	validateDepth = 256
	validateSteps = 50000
)

// both is the conjunction of two answers.
func both(a, b tri) tri {
	switch {
	case a == no || b == no:
		return no
	case a == unknown || b == unknown:
		return unknown
	}
	return yes
}

// check says whether schema n accepts instance x.
func (v *Validator) check(n *node, x any, depth int) tri {
	if v.steps++; v.steps > validateSteps || depth > validateDepth || n == nil {
		return unknown
	}
	if b, ok := n.boolean(); ok {
		return truth(b)
	}
	if n.malformed() {
		return unknown
	}
	out := yes
	for _, k := range n.keywords() {
		if out = both(out, v.keyword(n, k, x, depth)); out == no {
			return no
		}
	}
	return out
}

// keyword says whether keyword k of n accepts x.
func (v *Validator) keyword(n *node, k string, x any, depth int) tri {
	if annotations[k] || structural[k] {
		return yes
	}
	if dm, ok := domain[k]; ok && kindOf(x)&dm == 0 {
		return yes
	}
	if main, ok := companions[k]; ok {
		if _, has := n.kw(main); has || k != "prefixItems" {
			return yes // checked with the keyword it goes with, or nothing without it
		}
		return v.items(n, x.([]any), depth)
	}
	switch k {
	case "format":
		if kindOf(x) != kString {
			return yes
		}
		return unknown
	case "type", "enum", "const", "multipleOf", "maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum",
		"maxLength", "minLength", "pattern", "maxItems", "minItems", "maxProperties", "minProperties",
		"uniqueItems", "required", "dependentRequired", "readOnly":
		return n.eval(k, x)
	case "dependencies":
		return v.dependencies(n, x.(map[string]any), depth)
	case "dependentSchemas":
		return v.dependentSchemas(n, x.(map[string]any), depth)
	case "properties", "patternProperties", "additionalProperties":
		if k != "properties" {
			if _, ok := n.kw("properties"); ok {
				return yes // checked with properties
			}
			if _, ok := n.kw("patternProperties"); ok && k == "additionalProperties" {
				return yes // checked with patternProperties
			}
		}
		return v.properties(n, x.(map[string]any), depth)
	case "propertyNames":
		s := n.sub(k)
		out := yes
		for name := range x.(map[string]any) {
			out = both(out, v.check(s, name, depth+1))
		}
		return out
	case "items":
		return v.items(n, x.([]any), depth)
	case "contains":
		return v.contains(n, x.([]any), depth)
	case "allOf", "anyOf", "oneOf":
		return v.combine(n, k, x, depth)
	case "not":
		switch v.check(n.sub(k), x, depth+1) {
		case yes:
			return no
		case no:
			return yes
		}
		return unknown
	case "if":
		return v.conditional(n, x, depth)
	case "$ref":
		return v.check(n.resolve(k), x, depth+1)
	case "unevaluatedProperties", "unevaluatedItems":
		if kv, _ := n.kw(k); kv == true {
			return yes
		}
	}
	return unknown
}

// properties checks properties, patternProperties and
// additionalProperties together: each member of obj by the schemas that
// apply to it.
func (v *Validator) properties(n *node, obj map[string]any, depth int) tri {
	props, _, ok1 := n.subMap("properties")
	pats, _, ok2 := n.subMap("patternProperties")
	if !ok1 || !ok2 {
		return unknown
	}
	add := n.sub("additionalProperties")
	out := yes
	for name, val := range obj {
		matched := false
		for _, p := range props {
			if p.name == name {
				matched = true
				out = both(out, v.check(p.n, val, depth+1))
			}
		}
		for _, p := range pats {
			switch matches(n.doc, p.name, name) {
			case yes:
				matched = true
				out = both(out, v.check(p.n, val, depth+1))
			case unknown:
				return unknown // which schemas apply is not known
			}
		}
		if !matched && add != nil {
			out = both(out, v.check(add, val, depth+1))
		}
		if out == no {
			return no
		}
	}
	return out
}

// items checks items, prefixItems and additionalItems together.
func (v *Validator) items(n *node, a []any, depth int) tri {
	prefix, hasPrefix, ok := n.subs("prefixItems")
	if !ok {
		return unknown
	}
	var rest *node
	if iv, has := n.kw("items"); has {
		if _, tuple := iv.([]any); tuple {
			if hasPrefix {
				return unknown // both forms at once
			}
			prefix, _, _ = n.subs("items") // before 2020-12
			rest = n.sub("additionalItems")
		} else {
			rest = n.sub("items")
		}
	}
	out := yes
	for i, e := range a {
		s := rest
		if i < len(prefix) {
			s = prefix[i]
		}
		if s != nil {
			out = both(out, v.check(s, e, depth+1))
		}
		if out == no {
			return no
		}
	}
	return out
}

// contains checks contains with minContains and maxContains.
func (v *Validator) contains(n *node, a []any, depth int) tri {
	lo, hasHi := decInt(1), false
	var hi dec
	if _, ok := n.kw("minContains"); ok {
		if lo, ok = n.limit("minContains"); !ok {
			return unknown
		}
	}
	if _, ok := n.kw("maxContains"); ok {
		if hi, ok = n.limit("maxContains"); !ok {
			return unknown
		}
		hasHi = true
	}
	s := n.sub("contains")
	sure, maybe := 0, 0
	for _, e := range a {
		switch v.check(s, e, depth+1) {
		case yes:
			sure++
		case unknown:
			maybe++
		}
	}
	atLeast := func(n int, d dec) bool { return cmpDec(decInt(n), d) >= 0 }
	atMost := func(n int, d dec) bool { return cmpDec(decInt(n), d) <= 0 }
	switch {
	case atLeast(sure, lo) && (!hasHi || atMost(sure+maybe, hi)):
		return yes
	case !atLeast(sure+maybe, lo) || hasHi && !atMost(sure, hi):
		return no
	}
	return unknown
}

// combine checks allOf, anyOf or oneOf.
func (v *Validator) combine(n *node, k string, x any, depth int) tri {
	subs, _, ok := n.subs(k)
	if !ok || len(subs) == 0 {
		return unknown // not an array, or an empty one: not a valid schema
	}
	var sure, maybe int
	for _, s := range subs {
		switch v.check(s, x, depth+1) {
		case yes:
			sure++
		case unknown:
			maybe++
		}
	}
	no_ := len(subs) - sure - maybe
	switch k {
	case "allOf":
		if no_ > 0 {
			return no
		}
		if maybe == 0 {
			return yes
		}
	case "anyOf":
		if sure > 0 {
			return yes
		}
		if maybe == 0 {
			return no
		}
	default: // oneOf
		if sure > 1 || sure+maybe == 0 {
			return no
		}
		if sure == 1 && maybe == 0 {
			return yes
		}
	}
	return unknown
}

// conditional checks if with then and else.
func (v *Validator) conditional(n *node, x any, depth int) tri {
	then, els := yes, yes
	if s := n.sub("then"); s != nil {
		then = v.check(s, x, depth+1)
	}
	if s := n.sub("else"); s != nil {
		els = v.check(s, x, depth+1)
	}
	switch v.check(n.sub("if"), x, depth+1) {
	case yes:
		return then
	case no:
		return els
	}
	if then == els {
		return then
	}
	return unknown
}

// dependentSchemas checks each schema whose property obj holds.
func (v *Validator) dependentSchemas(n *node, obj map[string]any, depth int) tri {
	deps, _, ok := n.subMap("dependentSchemas")
	if !ok {
		return unknown
	}
	out := yes
	for _, d := range deps {
		if _, has := obj[d.name]; has {
			out = both(out, v.check(d.n, obj, depth+1))
		}
	}
	return out
}

// dependencies checks draft-07's dependencies: lists as
// dependentRequired, schemas as dependentSchemas.
func (v *Validator) dependencies(n *node, obj map[string]any, depth int) tri {
	kv, _ := n.kw("dependencies")
	deps, ok := kv.(map[string]any)
	if !ok {
		return unknown
	}
	out := yes
	for name, d := range deps {
		if _, has := obj[name]; !has {
			continue
		}
		if names, ok := strList(d); ok {
			for _, req := range names {
				if _, ok := obj[req]; !ok {
					return no
				}
			}
			continue
		}
		out = both(out, v.check(n.child(d, "dependencies", name), obj, depth+1))
	}
	return out
}

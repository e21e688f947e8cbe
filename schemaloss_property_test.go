package pruneguard_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/pruneguard/pruneguard/internal/schemadiff"
)

// This file checks the lossy-compression judge against a reference that
// shares nothing with it. The judge proves, keyword by keyword, that the
// compressed schema is at least as strict as the original. The reference
// instead validates concrete argument values with a small validator
// written here, and calls a compression lossy when it finds a value the
// compressed schema accepts and the original rejects: the exact question
// the schema gate asks. Schemas, compressions and values are generated.

// refValidator is a JSON Schema 2020-12 validator for the keywords the
// generator below emits, annotations for unevaluated* included. Values are
// Go values with float64 numbers.
type refValidator struct {
	root any
}

// seen records what a schema evaluated, for unevaluatedProperties and
// unevaluatedItems.
type seen struct {
	props map[string]bool
	items map[int]bool
}

func newSeen() seen { return seen{props: map[string]bool{}, items: map[int]bool{}} }

func (s seen) add(o seen) {
	for k := range o.props {
		s.props[k] = true
	}
	for i := range o.items {
		s.items[i] = true
	}
}

func (r refValidator) accepts(v any) bool {
	ok, _ := r.validate(r.root, v, 0)
	return ok
}

func (r refValidator) resolve(ref string) any {
	if !strings.HasPrefix(ref, "#/") {
		panic("reference validator: unexpected ref " + ref)
	}
	var cur any = r.root
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		cur = cur.(map[string]any)[tok]
	}
	if cur == nil {
		panic("reference validator: dangling ref " + ref)
	}
	return cur
}

func (r refValidator) validate(s, v any, depth int) (bool, seen) {
	if depth > 400 {
		panic("reference validator: runaway recursion")
	}
	ev := newSeen()
	if b, isBool := s.(bool); isBool {
		return b, ev
	}
	m := s.(map[string]any)
	ok := true
	sub := func(x, val any) bool {
		good, _ := r.validate(x, val, depth+1)
		return good
	}
	inPlace := func(x any) bool {
		good, e := r.validate(x, v, depth+1)
		if good {
			ev.add(e)
		}
		return good
	}
	if ref, has := m["$ref"].(string); has && !inPlace(r.resolve(ref)) {
		ok = false
	}
	if t, has := m["type"]; has && !refType(t, m["nullable"] == true, v) {
		ok = false
	}
	if e, has := m["enum"].([]any); has && !slices.ContainsFunc(e, func(x any) bool { return refEqual(x, v) }) {
		ok = false
	}
	if c, has := m["const"]; has && !refEqual(c, v) {
		ok = false
	}
	num := func(k string) (float64, bool) {
		f, has := m[k].(float64)
		return f, has
	}
	switch x := v.(type) {
	case string:
		n := float64(utf8.RuneCountInString(x))
		if l, has := num("minLength"); has && n < l {
			ok = false
		}
		if l, has := num("maxLength"); has && n > l {
			ok = false
		}
		if p, has := m["pattern"].(string); has && !regexp.MustCompile(p).MatchString(x) {
			ok = false
		}
		if f, has := m["format"].(string); has && !refFormats[f].MatchString(x) {
			ok = false
		}
	case float64:
		if l, has := num("minimum"); has && x < l {
			ok = false
		}
		if l, has := num("maximum"); has && x > l {
			ok = false
		}
		if l, has := num("exclusiveMinimum"); has && x <= l {
			ok = false
		}
		if l, has := num("exclusiveMaximum"); has && x >= l {
			ok = false
		}
		if d, has := num("multipleOf"); has && math.Mod(x, d) != 0 {
			ok = false
		}
	case []any:
		prefix, _ := m["prefixItems"].([]any)
		for i, e := range x {
			if i < len(prefix) {
				ev.items[i] = true
				if !sub(prefix[i], e) {
					ok = false
				}
			} else if it, has := m["items"]; has {
				ev.items[i] = true
				if !sub(it, e) {
					ok = false
				}
			}
		}
		if c, has := m["contains"]; has {
			n := 0
			for i, e := range x {
				if sub(c, e) {
					n++
					ev.items[i] = true
				}
			}
			lo, hasLo := num("minContains")
			if !hasLo {
				lo = 1
			}
			if float64(n) < lo {
				ok = false
			}
			if hi, has := num("maxContains"); has && float64(n) > hi {
				ok = false
			}
		}
		if l, has := num("minItems"); has && float64(len(x)) < l {
			ok = false
		}
		if l, has := num("maxItems"); has && float64(len(x)) > l {
			ok = false
		}
		if m["uniqueItems"] == true {
			for i := range x {
				for j := range i {
					if refEqual(x[i], x[j]) {
						ok = false
					}
				}
			}
		}
	case map[string]any:
		props, _ := m["properties"].(map[string]any)
		pats, _ := m["patternProperties"].(map[string]any)
		for name, val := range x {
			matched := false
			if ps, has := props[name]; has {
				matched = true
				ev.props[name] = true
				if !sub(ps, val) {
					ok = false
				}
			}
			for p, ps := range pats {
				if regexp.MustCompile(p).MatchString(name) {
					matched = true
					ev.props[name] = true
					if !sub(ps, val) {
						ok = false
					}
				}
			}
			if ap, has := m["additionalProperties"]; has && !matched {
				ev.props[name] = true
				if !sub(ap, val) {
					ok = false
				}
			}
			if pn, has := m["propertyNames"]; has && !sub(pn, name) {
				ok = false
			}
		}
		if req, has := m["required"].([]any); has {
			for _, n := range req {
				if _, present := x[n.(string)]; !present {
					ok = false
				}
			}
		}
		if dr, has := m["dependentRequired"].(map[string]any); has {
			for p, need := range dr {
				if _, present := x[p]; !present {
					continue
				}
				for _, n := range need.([]any) {
					if _, present := x[n.(string)]; !present {
						ok = false
					}
				}
			}
		}
		if ds, has := m["dependentSchemas"].(map[string]any); has {
			for p, ps := range ds {
				if _, present := x[p]; present && !inPlace(ps) {
					ok = false
				}
			}
		}
		if l, has := num("minProperties"); has && float64(len(x)) < l {
			ok = false
		}
		if l, has := num("maxProperties"); has && float64(len(x)) > l {
			ok = false
		}
	}
	if all, has := m["allOf"].([]any); has {
		for _, b := range all {
			if !inPlace(b) {
				ok = false
			}
		}
	}
	if anyOf, has := m["anyOf"].([]any); has {
		n := 0
		for _, b := range anyOf {
			if inPlace(b) {
				n++
			}
		}
		if n == 0 {
			ok = false
		}
	}
	if oneOf, has := m["oneOf"].([]any); has {
		n := 0
		for _, b := range oneOf {
			if inPlace(b) {
				n++
			}
		}
		if n != 1 {
			ok = false
		}
	}
	if not, has := m["not"]; has && sub(not, v) {
		ok = false
	}
	if cond, has := m["if"]; has {
		if inPlace(cond) {
			if then, has := m["then"]; has && !inPlace(then) {
				ok = false
			}
		} else if els, has := m["else"]; has && !inPlace(els) {
			ok = false
		}
	}
	if up, has := m["unevaluatedProperties"]; has {
		if x, isObj := v.(map[string]any); isObj {
			for name, val := range x {
				if !ev.props[name] {
					ev.props[name] = true
					if !sub(up, val) {
						ok = false
					}
				}
			}
		}
	}
	if ui, has := m["unevaluatedItems"]; has {
		if x, isArr := v.([]any); isArr {
			for i, e := range x {
				if !ev.items[i] {
					ev.items[i] = true
					if !sub(ui, e) {
						ok = false
					}
				}
			}
		}
	}
	if !ok {
		return false, newSeen()
	}
	return true, ev
}

var refFormats = map[string]*regexp.Regexp{
	"date":  regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`),
	"email": regexp.MustCompile(`^[^@]+@[^@]+$`),
}

func refType(t any, nullable bool, v any) bool {
	var names []string
	switch x := t.(type) {
	case string:
		names = []string{x}
	case []any:
		for _, n := range x {
			names = append(names, n.(string))
		}
	}
	if nullable {
		names = append(names, "null")
	}
	for _, n := range names {
		switch x := v.(type) {
		case nil:
			if n == "null" {
				return true
			}
		case bool:
			if n == "boolean" {
				return true
			}
		case string:
			if n == "string" {
				return true
			}
		case float64:
			if n == "number" || (n == "integer" && x == math.Trunc(x)) {
				return true
			}
		case []any:
			if n == "array" {
				return true
			}
		case map[string]any:
			if n == "object" {
				return true
			}
		}
	}
	return false
}

func refEqual(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !refEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, has := y[k]
			if !has || !refEqual(v, w) {
				return false
			}
		}
		return true
	}
	return a == b
}

// The small universes values and schemas are made of: few enough that
// random values often hit a schema's edges.
var (
	uStrings = []any{"", "a", "b", "ab", "ba", "abc", "12", "2020-01-02", "x@y", "aaaa", "xa"}
	uNumbers = []any{-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 2.5, 3.0, 4.0, 6.0, 10.0}
	uNames   = []string{"a", "b", "c", "a/b", "t~", "xa", "xb"}
	uPattern = []string{"^a", "b$", "^[ab]*$", "^[0-9]+$", "^x"}
	uTypes   = []string{"null", "boolean", "object", "array", "string", "integer", "number"}
	// Definitions, with the pointers that reach them (~1 and ~0 escapes).
	uDefs = [][2]string{{"n", "n"}, {"a/b", "a~1b"}, {"t~", "t~0"}}
)

func uScalar(rng *rand.Rand) any {
	switch rng.IntN(5) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2, 3:
		return uStrings[rng.IntN(len(uStrings))]
	}
	return uNumbers[rng.IntN(len(uNumbers))]
}

func uValue(rng *rand.Rand, depth int) any {
	if depth <= 0 || rng.IntN(3) > 0 {
		return uScalar(rng)
	}
	if rng.IntN(2) == 0 {
		out := []any{}
		for range rng.IntN(4) {
			out = append(out, uValue(rng, depth-1))
		}
		return out
	}
	out := map[string]any{}
	for range rng.IntN(4) {
		out[uNames[rng.IntN(len(uNames))]] = uValue(rng, depth-1)
	}
	return out
}

// schemaGen draws schemas. Definitions are numbered; a reference that
// does not descend into the instance only goes to a later definition, so
// the reference validator never loops.
type schemaGen struct {
	t     *rapid.T
	defs  string // "$defs" or "definitions"
	label int
}

func (g *schemaGen) n(max int) int {
	g.label++
	return rapid.IntRange(0, max-1).Draw(g.t, fmt.Sprint("g", g.label))
}

func (g *schemaGen) ref(from int, guarded bool) (any, bool) {
	lo := from + 1
	if guarded {
		lo = 0
	}
	if lo >= len(uDefs) {
		return nil, false
	}
	d := uDefs[lo+g.n(len(uDefs)-lo)]
	return map[string]any{"$ref": "#/" + g.defs + "/" + d[1]}, true
}

func (g *schemaGen) scalar() any {
	if g.n(2) == 0 {
		return uStrings[g.n(len(uStrings))]
	}
	return uNumbers[g.n(len(uNumbers))]
}

// schema draws a schema; from is the definition it is part of (-1 for the
// root body), guarded whether the instance was descended into since.
func (g *schemaGen) schema(depth, from int, guarded bool) any {
	switch g.n(14) {
	case 0:
		return true
	case 1:
		if g.n(8) == 0 {
			return false
		}
	case 2, 3:
		if r, ok := g.ref(from, guarded); ok {
			return r
		}
	}
	m := map[string]any{}
	for range 1 + g.n(3) {
		g.keyword(m, depth, from)
	}
	return m
}

func (g *schemaGen) keyword(m map[string]any, depth, from int) {
	kids := depth > 0
	child := func(guarded bool) any { return g.schema(depth-1, from, guarded) }
	names := func(k int) []any {
		var out []any
		for _, i := range rand.New(rand.NewPCG(uint64(g.n(1000)), 1)).Perm(len(uNames))[:k] {
			out = append(out, uNames[i])
		}
		return out
	}
	switch g.n(36) {
	case 0, 1:
		if g.n(3) == 0 {
			m["type"] = []any{uTypes[g.n(7)], uTypes[g.n(7)]}
		} else {
			m["type"] = uTypes[g.n(7)]
		}
		if g.n(5) == 0 {
			m["nullable"] = true
		}
	case 2:
		m["enum"] = []any{g.scalar(), g.scalar(), g.scalar()}[:1+g.n(3)]
	case 3:
		m["const"] = g.scalar()
	case 4:
		m["minLength"] = float64(g.n(3))
	case 5:
		m["maxLength"] = float64(g.n(4))
	case 6:
		m["pattern"] = uPattern[g.n(len(uPattern))]
	case 7:
		m["format"] = []string{"date", "email"}[g.n(2)]
	case 8:
		m["minimum"] = uNumbers[g.n(len(uNumbers))]
	case 9:
		m["maximum"] = uNumbers[g.n(len(uNumbers))]
	case 10:
		m["exclusiveMinimum"] = uNumbers[g.n(len(uNumbers))]
	case 11:
		m["exclusiveMaximum"] = uNumbers[g.n(len(uNumbers))]
	case 12:
		m["multipleOf"] = []any{0.5, 1.0, 2.0, 3.0}[g.n(4)]
	case 13:
		m["minItems"] = float64(g.n(3))
	case 14:
		m["maxItems"] = float64(g.n(3))
	case 15:
		m["uniqueItems"] = true
	case 16:
		m["required"] = names(1 + g.n(2))
	case 17:
		m["minProperties"] = float64(g.n(3))
	case 18:
		m["maxProperties"] = float64(g.n(3))
	case 19:
		m["dependentRequired"] = map[string]any{uNames[g.n(3)]: names(1)}
	case 20:
		m["title"] = "t"
		m["description"] = "d"
	}
	if !kids {
		return
	}
	switch g.n(22) {
	case 0, 1, 2:
		props := map[string]any{}
		for _, n := range names(1 + g.n(2)) {
			props[n.(string)] = child(true)
		}
		m["properties"] = props
	case 3:
		m["additionalProperties"] = child(true)
	case 4:
		m["patternProperties"] = map[string]any{uPattern[g.n(len(uPattern))]: child(true)}
	case 5:
		m["propertyNames"] = []any{map[string]any{"maxLength": 1.0}, map[string]any{"pattern": "^[a-c]"}}[g.n(2)]
	case 6:
		m["dependentSchemas"] = map[string]any{uNames[g.n(3)]: child(false)}
	case 7, 8:
		m["items"] = child(true)
	case 9:
		m["prefixItems"] = []any{child(true), child(true)}[:1+g.n(2)]
	case 10:
		m["contains"] = child(true)
		if g.n(2) == 0 {
			m["minContains"] = float64(g.n(3))
		}
		if g.n(2) == 0 {
			m["maxContains"] = float64(1 + g.n(2))
		}
	case 11:
		m["allOf"] = []any{child(false), child(false)}[:1+g.n(2)]
	case 12, 13:
		m["anyOf"] = []any{child(false), child(false), child(false)}[:1+g.n(3)]
	case 14, 15:
		m["oneOf"] = []any{child(false), child(false), child(false)}[:1+g.n(3)]
	case 16:
		m["not"] = child(false)
	case 17:
		m["if"] = child(false)
		m["then"] = child(false)
		if g.n(2) == 0 {
			m["else"] = child(false)
		}
	case 18:
		m["unevaluatedProperties"] = child(true)
	case 19:
		m["unevaluatedItems"] = child(true)
	}
}

// document draws a whole schema: definitions and a root body.
func (g *schemaGen) document() map[string]any {
	g.defs = []string{"$defs", "definitions"}[g.n(2)]
	defs := map[string]any{}
	for i, d := range uDefs {
		defs[d[0]] = g.schema(2, i, false)
	}
	root := map[string]any{}
	for range 1 + g.n(3) {
		g.keyword(root, 3, -1)
	}
	root[g.defs] = defs
	return root
}

// site is a schema inside a document: the tokens that reach it, and
// whether every constraint on the way is positive (tightening it there
// narrows the document) and outside the definitions.
type site struct {
	path     []string
	positive bool
}

func sites(s any, path []string, positive bool, out *[]site) {
	*out = append(*out, site{slices.Clone(path), positive})
	m, ok := s.(map[string]any)
	if !ok {
		return
	}
	at := func(v any, pos bool, toks ...string) {
		sites(v, append(slices.Clone(path), toks...), positive && pos, out)
	}
	// In key order, so that a seed draws the same site again.
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch k {
		case "properties", "patternProperties", "dependentSchemas":
			sm := v.(map[string]any)
			for _, name := range slices.Sorted(maps.Keys(sm)) {
				at(sm[name], true, k, name)
			}
		case "$defs", "definitions":
			sm := v.(map[string]any)
			for _, name := range slices.Sorted(maps.Keys(sm)) {
				at(sm[name], false, k, name)
			}
		case "allOf", "anyOf", "prefixItems":
			for i, s := range v.([]any) {
				at(s, true, k, fmt.Sprint(i))
			}
		case "oneOf":
			for i, s := range v.([]any) {
				at(s, false, k, fmt.Sprint(i))
			}
		case "additionalProperties", "items", "then", "else", "unevaluatedProperties", "unevaluatedItems", "propertyNames":
			at(v, true, k)
		case "contains":
			_, hasMax := m["maxContains"]
			at(v, !hasMax, k)
		case "not", "if":
			at(v, false, k)
		}
	}
}

func get(s any, path []string) any {
	for _, tok := range path {
		switch x := s.(type) {
		case map[string]any:
			s = x[tok]
		case []any:
			var i int
			fmt.Sscan(tok, &i)
			s = x[i]
		}
	}
	return s
}

func set(root any, path []string, v any) any {
	if len(path) == 0 {
		return v
	}
	parent := get(root, path[:len(path)-1])
	tok := path[len(path)-1]
	switch x := parent.(type) {
	case map[string]any:
		x[tok] = v
	case []any:
		var i int
		fmt.Sscan(tok, &i)
		x[i] = v
	}
	return root
}

func deepCopy(v any) any {
	b, _ := json.Marshal(v)
	var out any
	d := json.NewDecoder(strings.NewReader(string(b)))
	_ = d.Decode(&out)
	return out
}

// compress applies one drawn change to a copy of the document and says
// whether the change can only keep or narrow what the schema accepts.
func (g *schemaGen) compress(doc any) (any, bool, string) {
	out := deepCopy(doc)
	var all, body []site
	sites(out, nil, true, &all)
	for _, st := range all {
		if len(st.path) == 0 || st.path[0] != g.defs {
			body = append(body, st)
		}
	}
	if len(body) > 0 && g.n(4) > 0 {
		all = body // mostly where the change is surely reached
	}
	st := all[g.n(len(all))]
	node, isObj := get(out, st.path).(map[string]any)
	keys := func() []string {
		var ks []string
		for k := range node {
			if k != "$defs" && k != "definitions" {
				ks = append(ks, k)
			}
		}
		slices.Sort(ks)
		return ks
	}
	where := "/" + strings.Join(st.path, "/")
	switch c := g.n(13); {
	case !isObj:
		return set(out, st.path, map[string]any{}), false, where + " opened"
	case c == 0: // annotations go: safe anywhere
		delete(node, "title")
		delete(node, "description")
		return out, true, where + " annotations dropped"
	case c == 1: // a reference is inlined as an allOf member: safe anywhere
		ref, ok := node["$ref"].(string)
		if !ok || node["allOf"] != nil {
			break
		}
		// The target is copied before the reference goes: it may hold
		// the reference itself.
		target := deepCopy(refValidator{root: out}.resolve(ref))
		delete(node, "$ref")
		node["allOf"] = []any{target}
		return out, true, where + " $ref inlined"
	case c == 2 && st.positive: // tightened where that narrows
		for _, k := range keys() {
			switch v := node[k].(type) {
			case float64:
				switch k {
				case "maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum", "maxContains":
					if v >= 1 {
						node[k] = v - 1
						return out, true, where + " " + k + " lowered"
					}
				case "minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum":
					node[k] = v + 1
					return out, true, where + " " + k + " raised"
				}
			case []any:
				if k == "enum" && len(v) > 1 {
					node[k] = v[1:]
					return out, true, where + " enum narrowed"
				}
				if k == "anyOf" && len(v) > 1 {
					node[k] = v[1:]
					return out, true, where + " anyOf branch dropped"
				}
			}
		}
		if _, has := node["required"]; !has {
			node["required"] = []any{uNames[g.n(len(uNames))]}
			return out, true, where + " required added"
		}
	case c == 3, c == 4, c == 11: // a keyword goes
		if ks := keys(); len(ks) > 0 {
			k := ks[g.n(len(ks))]
			delete(node, k)
			return out, k == "title" || k == "description", where + " " + k + " dropped"
		}
	case c == 5: // a limit loosens
		for _, k := range keys() {
			if v, ok := node[k].(float64); ok {
				switch k {
				case "maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum", "maxContains":
					node[k] = v + 1
				case "minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum", "minContains":
					node[k] = v - 1
				case "multipleOf":
					node[k] = v / 2
				default:
					continue
				}
				return out, false, where + " " + k + " loosened"
			}
		}
	case c == 6: // an enum or a type widens
		if e, ok := node["enum"].([]any); ok {
			node["enum"] = append(e, g.scalar())
			return out, false, where + " enum widened"
		}
		if t, ok := node["type"].(string); ok {
			node["type"] = []any{t, uTypes[g.n(7)]}
			return out, false, where + " type widened"
		}
	case c == 7: // a reference is retargeted (outside the definitions, so no cycle appears)
		if _, ok := node["$ref"].(string); ok && (len(st.path) == 0 || st.path[0] != g.defs) {
			d := uDefs[g.n(len(uDefs))]
			node["$ref"] = "#/" + g.defs + "/" + d[1]
			return out, false, where + " $ref retargeted"
		}
	case c == 8: // anyOf and oneOf trade places
		if a, ok := node["anyOf"]; ok && node["oneOf"] == nil {
			delete(node, "anyOf")
			node["oneOf"] = a
			return out, false, where + " anyOf became oneOf"
		}
		if a, ok := node["oneOf"]; ok && node["anyOf"] == nil {
			delete(node, "oneOf")
			node["anyOf"] = a
			return out, false, where + " oneOf became anyOf"
		}
	case c == 9: // a constant or a required name changes
		if _, ok := node["const"]; ok {
			node["const"] = g.scalar()
			return out, false, where + " const changed"
		}
		if r, ok := node["required"].([]any); ok && len(r) > 0 {
			node["required"] = r[1:]
			return out, false, where + " required dropped"
		}
	case c == 10: // the schema is replaced by true
		return set(out, st.path, true), false, where + " replaced by true"
	}
	// Nothing applied: tighten somewhere that need not narrow.
	if isObj {
		if v, has := node["maxLength"].(float64); !has || v > 1 {
			node["maxLength"] = 1.0
		}
		return out, st.positive, where + " maxLength set"
	}
	return out, true, where + " unchanged"
}

// sample draws a value the schema probably accepts.
func sample(r refValidator, s any, rng *rand.Rand, depth int) any {
	m, ok := s.(map[string]any)
	if !ok || depth <= 0 || rng.IntN(10) == 0 {
		return uValue(rng, 2)
	}
	if ref, has := m["$ref"].(string); has && rng.IntN(3) > 0 {
		return sample(r, r.resolve(ref), rng, depth-1)
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if l, has := m[k].([]any); has && rng.IntN(2) == 0 {
			return sample(r, l[rng.IntN(len(l))], rng, depth-1)
		}
	}
	if c, has := m["const"]; has {
		return c
	}
	if e, has := m["enum"].([]any); has && len(e) > 0 {
		return e[rng.IntN(len(e))]
	}
	kind := ""
	switch t := m["type"].(type) {
	case string:
		kind = t
	case []any:
		kind = t[rng.IntN(len(t))].(string)
	}
	if kind == "" {
		switch {
		case m["properties"] != nil || m["required"] != nil || m["additionalProperties"] != nil:
			kind = "object"
		case m["items"] != nil || m["prefixItems"] != nil || m["contains"] != nil:
			kind = "array"
		}
	}
	pick := func(l []any, ok func(any) bool) any {
		var good []any
		for _, x := range l {
			if ok(x) {
				good = append(good, x)
			}
		}
		if len(good) == 0 {
			return l[rng.IntN(len(l))]
		}
		return good[rng.IntN(len(good))]
	}
	switch kind {
	case "string":
		return pick(uStrings, func(x any) bool { return r.leafOK(m, x) })
	case "number", "integer":
		return pick(uNumbers, func(x any) bool { return r.leafOK(m, x) })
	case "object":
		out := map[string]any{}
		props, _ := m["properties"].(map[string]any)
		req, _ := m["required"].([]any)
		for _, n := range req {
			out[n.(string)] = nil
		}
		// In name order, so that a seed draws the same value again.
		for _, n := range slices.Sorted(maps.Keys(props)) {
			if rng.IntN(2) == 0 {
				out[n] = nil
			}
		}
		if rng.IntN(3) == 0 {
			out[uNames[rng.IntN(len(uNames))]] = nil
		}
		for _, n := range slices.Sorted(maps.Keys(out)) {
			if ps, has := props[n]; has {
				out[n] = sample(r, ps, rng, depth-1)
			} else if ap, has := m["additionalProperties"]; has {
				out[n] = sample(r, ap, rng, depth-1)
			} else {
				out[n] = uValue(rng, 1)
			}
		}
		return out
	case "array":
		prefix, _ := m["prefixItems"].([]any)
		n := rng.IntN(4)
		out := make([]any, 0, n)
		for i := range n {
			switch {
			case i < len(prefix):
				out = append(out, sample(r, prefix[i], rng, depth-1))
			case m["items"] != nil:
				out = append(out, sample(r, m["items"], rng, depth-1))
			case m["contains"] != nil:
				out = append(out, sample(r, m["contains"], rng, depth-1))
			default:
				out = append(out, uValue(rng, 1))
			}
		}
		return out
	}
	return uValue(rng, 2)
}

// leafOK says whether a scalar passes the schema's own scalar keywords.
func (r refValidator) leafOK(m map[string]any, x any) bool {
	leaf := map[string]any{}
	for _, k := range []string{"type", "enum", "const", "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"} {
		if v, has := m[k]; has {
			leaf[k] = v
		}
	}
	ok, _ := r.validate(leaf, x, 0)
	return ok
}

// mutate changes a value a little: a member goes or comes, an item is
// added, a scalar is replaced.
func mutate(v any, rng *rand.Rand) any {
	switch x := deepCopy(v).(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		switch {
		case len(keys) > 0 && rng.IntN(3) == 0:
			delete(x, keys[rng.IntN(len(keys))])
		case len(keys) > 0 && rng.IntN(2) == 0:
			k := keys[rng.IntN(len(keys))]
			x[k] = mutate(x[k], rng)
		default:
			x[uNames[rng.IntN(len(uNames))]] = uValue(rng, 1)
		}
		return x
	case []any:
		if len(x) > 0 && rng.IntN(2) == 0 {
			i := rng.IntN(len(x))
			x[i] = mutate(x[i], rng)
			return x
		}
		return append(x, uValue(rng, 1))
	}
	return uValue(rng, 1)
}

// witness looks for a value the compressed schema accepts and the original
// rejects.
func witness(orig, comp any, seed uint64) (any, bool) {
	ro, rc := refValidator{root: orig}, refValidator{root: comp}
	rng := rand.New(rand.NewPCG(seed, 7))
	try := func(v any) bool { return rc.accepts(v) && !ro.accepts(v) }
	for range 60 {
		var v any
		switch rng.IntN(4) {
		case 0:
			v = uValue(rng, 3)
		case 1:
			v = mutate(sample(ro, orig, rng, 6), rng)
		case 2:
			v = mutate(sample(rc, comp, rng, 6), rng)
		default:
			v = sample(rc, comp, rng, 6)
		}
		if try(v) {
			return v, true
		}
	}
	return nil, false
}

// uses says whether a document mentions one of the keywords.
func uses(doc any, keywords ...string) bool {
	s := string(mustJSON(doc))
	for _, k := range keywords {
		if strings.Contains(s, `"`+k+`"`) {
			return true
		}
	}
	return false
}

// annotationsOnly says whether every change made dropped annotations.
func annotationsOnly(change string) bool {
	for _, c := range strings.Split(change, "; ") {
		if !strings.HasSuffix(c, " annotations dropped") {
			return false
		}
	}
	return true
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// The judge never calls a compression lossless when the reference finds
// arguments it lets through that the original rejects; it never calls
// lossy a compression that only drops annotations, inlines a reference or
// narrows where narrowing is safe; and every loss names a place of the
// original schema that holds the keyword it names.
func TestSchemaLossAgainstReference(t *testing.T) {
	var st lossStats
	rapid.Check(t, func(rt *rapid.T) {
		// Several pairs per case: the check needs thousands to bite.
		for range 8 {
			st.check(rt)
		}
	})
	t.Logf("%d cases: %d judged lossy, %d with a witness, %d safe (%d held to precision)", st.cases, st.lossy, st.found, st.safe, st.precise)
	if st.cases >= 400 && st.found < st.cases/20 {
		t.Errorf("the reference found a witness in only %d of %d cases: the check has lost its teeth", st.found, st.cases)
	}
}

type lossStats struct{ cases, lossy, found, safe, precise int }

func (st *lossStats) check(rt *rapid.T) {
	g := &schemaGen{t: rt}
	orig := g.document()
	comp, isSafe, change := g.compress(orig)
	if g.n(3) == 0 {
		var safe2 bool
		var change2 string
		comp, safe2, change2 = g.compress(comp)
		isSafe, change = isSafe && safe2, change+"; "+change2
	}
	ob, cb := mustJSON(orig), mustJSON(comp)
	losses, err := schemadiff.Compare(ob, cb)
	if err != nil {
		rt.Fatalf("Compare: %v", err)
	}
	st.cases++
	if len(losses) > 0 {
		st.lossy++
	}
	for _, l := range losses {
		if !lossAt(orig, l) {
			rt.Fatalf("loss %q names no such place\norig: %s\ncomp: %s", l, ob, cb)
		}
	}
	v, ok := witness(orig, comp, rapid.Uint64().Draw(rt, "seed"))
	if ok {
		st.found++
		if len(losses) == 0 {
			rt.Fatalf("compression judged lossless, but the compressed schema accepts %s and the original rejects it\nchange: %s\norig: %s\ncomp: %s",
				mustJSON(v), change, ob, cb)
		}
	}
	if !isSafe {
		return
	}
	st.safe++
	if ok {
		rt.Fatalf("a safe change let %s through\nchange: %s\norig: %s\ncomp: %s", mustJSON(v), change, ob, cb)
	}
	// Next to unevaluatedProperties or unevaluatedItems, a change is
	// judged conservatively (see the package documentation); dropping
	// annotations never is.
	if uses(orig, "unevaluatedProperties", "unevaluatedItems") && !annotationsOnly(change) {
		return
	}
	st.precise++
	for _, l := range losses {
		if l.Kind != "false" || l.Path != "" {
			rt.Fatalf("a safe change judged lossy: %v\nchange: %s\norig: %s\ncomp: %s", losses, change, ob, cb)
		}
	}
}

// lossAt says whether the loss's path leads, through the original's
// references, to a schema that states the loss's keyword.
func lossAt(doc any, l schemadiff.Loss) bool {
	r := refValidator{root: doc}
	var cur any = doc
	if l.Path != "" {
		for _, tok := range strings.Split(l.Path[1:], "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			switch x := cur.(type) {
			case map[string]any:
				if ref, isRef := x[tok].(string); isRef && tok == "$ref" {
					cur = r.resolve(ref)
					continue
				}
				v, has := x[tok]
				if !has {
					return false
				}
				cur = v
			case []any:
				var i int
				if _, err := fmt.Sscan(tok, &i); err != nil || i < 0 || i >= len(x) {
					return false
				}
				cur = x[i]
			default:
				return false
			}
		}
	}
	switch l.Kind {
	case "limit":
		return true
	case "false":
		return cur == false || l.Path == ""
	}
	m, isObj := cur.(map[string]any)
	if !isObj {
		return false
	}
	if _, has := m[l.Kind]; has {
		return true
	}
	// Array keywords are reported under the one the original states.
	if l.Kind == "contains" || l.Kind == "items" {
		return m["prefixItems"] != nil || m["contains"] != nil
	}
	return false
}

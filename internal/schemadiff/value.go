package schemadiff

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// canon is a text that equal JSON values share and unequal ones do not,
// with JSON Schema's equality: 1, 1.0 and 1e0 are one number, object
// members are unordered.
func canon(v any) string {
	var b strings.Builder
	writeCanon(&b, v)
	return b.String()
}

// writeCanon writes canon(v) to b.
func writeCanon(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		b.WriteString(strconv.Quote(x))
	case json.Number:
		if d, ok := parseDec(string(x)); ok {
			b.WriteString(d.canon())
		} else {
			b.WriteString(string(x))
		}
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanon(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			writeCanon(b, x[k])
		}
		b.WriteByte('}')
	}
}

// display is how a value appears in a Loss: JSON, cut after 120 bytes.
func display(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return canon(v)
	}
	if len(b) > 120 {
		n := 120
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		return string(b[:n]) + "…"
	}
	return string(b)
}

// tri is a three-valued answer.
type tri uint8

const (
	unknown tri = iota
	yes
	no
)

// truth is b as a tri.
func truth(b bool) tri {
	if b {
		return yes
	}
	return no
}

// members reads an enum or const keyword as a list of values.
func members(k string, v any) ([]any, bool) {
	if k == "const" {
		return []any{v}, true
	}
	l, ok := v.([]any)
	return l, ok
}

// memberSet is the canonical set of an enum or const keyword of n.
func (n *node) memberSet(k string) (map[string]bool, bool) {
	v, ok := n.kw(k)
	if !ok {
		return nil, false
	}
	if set, ok := n.doc.sets[n.loc+"\x00"+k]; ok {
		return set, set != nil
	}
	l, ok := members(k, v)
	var set map[string]bool
	if ok {
		set = make(map[string]bool, len(l))
		for _, e := range l {
			set[canon(e)] = true
		}
	}
	if n.doc.sets == nil {
		n.doc.sets = map[string]map[string]bool{}
	}
	n.doc.sets[n.loc+"\x00"+k] = set
	return set, set != nil
}

// typeMask reads a type keyword; nullable adds null (OpenAPI 3.0).
func typeMask(v any, nullable bool) (uint8, bool) {
	var m uint8
	switch t := v.(type) {
	case string:
		b, ok := typeNames[t]
		if !ok {
			return 0, false
		}
		m = b
	case []any:
		for _, e := range t {
			s, _ := e.(string)
			b, ok := typeNames[s]
			if !ok {
				return 0, false
			}
			m |= b
		}
	default:
		return 0, false
	}
	if nullable {
		m |= kNull
	}
	return m, true
}

// nodeType is the kinds n's type keyword allows, with nullable.
func (n *node) nodeType() (uint8, bool) {
	v, ok := n.kw("type")
	if !ok {
		return kAll, false
	}
	nb, _ := n.kw("nullable")
	m, ok := typeMask(v, nb == true)
	if !ok {
		return kAll, false
	}
	return m, true
}

// bound is one numeric limit.
type bound struct {
	v    dec
	excl bool
}

// boundOf reads the numeric limit a bound keyword sets. Draft-04's
// boolean exclusiveMaximum makes maximum exclusive, and sets none itself.
func (n *node) boundOf(k string) (bound, bool) {
	v, ok := n.kw(k)
	if !ok {
		return bound{}, false
	}
	d, ok := number(v)
	if !ok {
		return bound{}, false
	}
	if k == "exclusiveMaximum" || k == "exclusiveMinimum" {
		return bound{d, true}, true
	}
	ev, _ := n.kw("exclusive" + strings.ToUpper(k[:1]) + k[1:])
	return bound{d, ev == true}, true
}

// bounds lists n's upper (or lower) numeric limits.
func (n *node) bounds(upper bool) []bound {
	ks := [2]string{"minimum", "exclusiveMinimum"}
	if upper {
		ks = [2]string{"maximum", "exclusiveMaximum"}
	}
	var out []bound
	for _, k := range ks {
		if b, ok := n.boundOf(k); ok {
			out = append(out, b)
		}
	}
	return out
}

// within says whether x keeps to an upper (or lower) bound.
func within(x dec, b bound, upper bool) bool {
	c := cmpDec(x, b.v)
	if !upper {
		c = -c
	}
	return c < 0 || (c == 0 && !b.excl)
}

// tighter says whether bound a admits nothing that bound b rejects.
func tighter(a, b bound, upper bool) bool {
	c := cmpDec(a.v, b.v)
	if !upper {
		c = -c
	}
	return c < 0 || (c == 0 && (a.excl || !b.excl))
}

// limit reads a non-negative integer keyword (maxLength and the like).
func (n *node) limit(k string) (dec, bool) {
	v, ok := n.kw(k)
	if !ok {
		return dec{}, false
	}
	d, ok := number(v)
	if !ok || !d.integer() || d.neg {
		return dec{}, false
	}
	return d, true
}

// strList reads an array of strings (required and the like).
func strList(v any) ([]string, bool) {
	l, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(l))
	for _, e := range l {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// size is the size a length keyword measures: code points of a string,
// items of an array, members of an object.
func size(v any) int {
	switch x := v.(type) {
	case string:
		return utf8.RuneCountInString(x)
	case []any:
		return len(x)
	case map[string]any:
		return len(x)
	}
	return 0
}

// eval says whether keyword k of n accepts the value v, where it can tell
// from that keyword alone. Keywords that hold subschemas answer only for
// instances they do not apply to.
func (n *node) eval(k string, v any) tri {
	if annotations[k] || structural[k] {
		return yes
	}
	if dm, ok := domain[k]; ok && kindOf(v)&dm == 0 {
		return yes
	}
	kv, present := n.kw(k)
	if !present {
		return yes
	}
	switch k {
	case "type":
		m, ok := n.nodeType()
		if !ok {
			return unknown
		}
		kind := kindOf(v)
		return truth(m&kind != 0)
	case "enum", "const":
		set, ok := n.memberSet(k)
		if !ok {
			return unknown
		}
		return truth(set[canon(v)])
	case "multipleOf":
		m, ok := number(kv)
		x, okx := number(v)
		if !ok || !okx || m.neg || m.zero() {
			return unknown
		}
		return truth(multiple(x, m))
	case "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum":
		x, ok := number(v)
		if !ok {
			return unknown
		}
		b, ok := n.boundOf(k)
		if !ok {
			if _, isBool := kv.(bool); isBool {
				return yes // draft-04: judged with its bound
			}
			return unknown
		}
		return truth(within(x, b, k == "maximum" || k == "exclusiveMaximum"))
	case "maxLength", "maxItems", "maxProperties", "minLength", "minItems", "minProperties":
		l, ok := n.limit(k)
		if !ok {
			return unknown
		}
		c := cmpDec(decInt(size(v)), l)
		if strings.HasPrefix(k, "max") {
			return truth(c <= 0)
		}
		return truth(c >= 0)
	case "pattern":
		s, _ := kv.(string)
		re := n.doc.regexp(s)
		str, _ := v.(string)
		if re == nil || !printableASCII(str) {
			return unknown
		}
		return truth(re.MatchString(str))
	case "uniqueItems":
		return evalUnique(kv, v.([]any))
	case "required":
		return evalRequired(kv, v.(map[string]any))
	case "dependentRequired", "dependencies":
		return evalDependencies(kv, v.(map[string]any))
	case "readOnly":
		if kv == false {
			return yes
		}
	}
	return unknown
}

// evalUnique is eval for uniqueItems of value kv on the array a.
func evalUnique(kv any, a []any) tri {
	if kv == false {
		return yes
	}
	if kv != true {
		return unknown
	}
	seen := map[string]bool{}
	for _, e := range a {
		c := canon(e)
		if seen[c] {
			return no
		}
		seen[c] = true
	}
	return yes
}

// evalRequired is eval for required of value kv on the object obj.
func evalRequired(kv any, obj map[string]any) tri {
	names, ok := strList(kv)
	if !ok {
		return unknown
	}
	for _, name := range names {
		if _, ok := obj[name]; !ok {
			return no
		}
	}
	return yes
}

// evalDependencies is eval for dependentRequired or dependencies of
// value kv on the object obj: a schema dependency is not judged here.
func evalDependencies(kv any, obj map[string]any) tri {
	deps, ok := kv.(map[string]any)
	if !ok {
		return unknown
	}
	out := yes
	for p, d := range deps {
		if _, has := obj[p]; !has {
			continue
		}
		names, ok := strList(d)
		if !ok {
			out = unknown // a schema dependency
			continue
		}
		for _, name := range names {
			if _, ok := obj[name]; !ok {
				return no
			}
		}
	}
	return out
}

// safeRegexp compiles an ECMA-262 pattern with Go's regexp only when the
// pattern keeps to the syntax both read alike on printable ASCII: no
// groups with "(?", no escapes but of punctuation and the classes \d \D
// \w \W \s \S \b \B. Anything else is not judged.
func safeRegexp(p string) *regexp.Regexp {
	if strings.Contains(p, "(?") || strings.Contains(p, "[]") || strings.Contains(p, "[^]") {
		return nil
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '\\' {
			continue
		}
		if i+1 == len(p) {
			return nil
		}
		c := p[i+1]
		switch {
		case strings.IndexByte("dDwWsSbB", c) >= 0:
		case c < 0x80 && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'):
		default:
			return nil
		}
		i++
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil
	}
	return re
}

// printableASCII says whether s holds printable ASCII only.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// regexp is safeRegexp, once per pattern and document.
func (d *doc) regexp(p string) *regexp.Regexp {
	if re, ok := d.res[p]; ok {
		return re
	}
	if d.res == nil {
		d.res = map[string]*regexp.Regexp{}
	}
	re := safeRegexp(p)
	d.res[p] = re
	return re
}

// matches says whether a patternProperties pattern of document d matches
// a name.
func matches(d *doc, pattern, name string) tri {
	re := d.regexp(pattern)
	if re == nil || !printableASCII(name) {
		return unknown
	}
	return truth(re.MatchString(name))
}

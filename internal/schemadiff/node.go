package schemadiff

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// dialect is the JSON Schema draft a document is read by, from its root
// $schema. Without one a document is read as 2020-12.
type dialect uint8

const (
	dialect2020 dialect = iota // 2019-09 and 2020-12: $ref applies beside its siblings
	dialect7                   // draft-06 and draft-07: $ref replaces its siblings
	dialect4                   // draft-04 and older: exclusive bounds are booleans too
)

// doc is one decoded schema document and the nodes made of it so far.
type doc struct {
	ids     *int
	root    any
	dialect dialect
	base    *url.URL          // the root $id, when it is an absolute URI
	nodes   map[string]*node  // by location
	anchors map[string]string // anchor name → location, "" when ambiguous
	res     map[string]*regexp.Regexp
	sets    map[string]map[string]bool // enum and const members, by location and keyword
}

// newDoc reads a decoded schema document; ids numbers its nodes.
func newDoc(root any, ids *int) *doc {
	d := &doc{ids: ids, root: root, nodes: map[string]*node{}}
	if m, ok := root.(map[string]any); ok {
		if s, ok := m["$schema"].(string); ok {
			switch {
			case strings.Contains(s, "draft-03"), strings.Contains(s, "draft-04"), strings.Contains(s, "draft-05"):
				d.dialect = dialect4
			case strings.Contains(s, "draft-06"), strings.Contains(s, "draft-07"):
				d.dialect = dialect7
			}
		}
		id, ok := m["$id"].(string)
		if !ok && d.dialect == dialect4 {
			id, ok = m["id"].(string)
		}
		if ok {
			if u, err := url.Parse(id); err == nil && u.IsAbs() {
				u.Fragment, u.RawFragment = "", ""
				d.base = u
			}
		}
	}
	return d
}

// node is one schema (or what stands where a schema should) at a location
// of its document. Nodes are made once per location, so a pointer names a
// schema; copies made to split a disjunction keep the node they copy.
type node struct {
	id       int
	doc      *doc
	loc      string
	val      any
	obj      map[string]any // nil unless val is an object
	embedded bool           // inside a resource with its own $id
	resource string         // the $id values of the embedded resources around it
	drop     uint8          // for copies: the disjunctions removed
	orig     *node          // for copies: the node copied
	taken    []*node        // for copies: the branches taken in place of the disjunctions removed
	ckey     string         // for copies: the name made of the node, drop and taken
	alts     []*node        // for unions: the members of the anyOf
	neg      *node          // for negations: the schema negated
	dig      *digest        // once computed
	vkey     string         // for unions: the name made of the members
}

// The disjunctions a copy may leave out.
const (
	dropAnyOf uint8 = 1 << iota
	dropOneOf
	dropIf
)

// at returns the node at a location, making it once.
func (d *doc) at(loc string, v any, resource string) *node {
	if n, ok := d.nodes[loc]; ok {
		return n
	}
	*d.ids++
	n := &node{id: *d.ids, doc: d, loc: loc, val: v, embedded: resource != "", resource: resource}
	n.obj, _ = v.(map[string]any)
	d.nodes[loc] = n
	return n
}

// rootNode is the document's root schema.
func (d *doc) rootNode() *node { return d.at("", d.root, "") }

// enter returns the resource of a schema inside resource res: res itself,
// or res extended by the schema's own $id when it has one.
func enter(res string, v any) string {
	if m, ok := v.(map[string]any); ok {
		if id, ok := m["$id"].(string); ok && !strings.HasPrefix(id, "#") {
			return res + " " + id
		}
	}
	return res
}

// key names the node, copies included, for memo keys.
func (n *node) key() string {
	if n.ckey != "" {
		return n.ckey
	}
	if n.vkey != "" {
		return n.vkey
	}
	return strconv.Itoa(n.id)
}

// without returns a copy of n that leaves out the disjunction bit, taken
// being what applies in its place: the branch the instance matched (for
// if-then-else, the condition and then, or else). A branch taken
// evaluates properties and items for n's unevaluatedProperties and
// unevaluatedItems as the disjunction would have; give every branch when
// which one matched is not known.
func (n *node) without(bit uint8, taken ...*node) *node {
	c := *n
	if n.orig == nil {
		c.orig = n
	}
	c.drop |= bit
	c.taken = append(slices.Clone(n.taken), taken...)
	var b strings.Builder
	b.WriteString(c.orig.key())
	b.WriteByte('.')
	b.WriteString(strconv.Itoa(int(c.drop)))
	for _, t := range c.taken {
		b.WriteByte('+')
		b.WriteString(t.key())
	}
	c.ckey = b.String()
	return &c
}

// boolean reports whether n is a boolean schema, and which.
func (n *node) boolean() (value, ok bool) {
	b, ok := n.val.(bool)
	return b, ok
}

// malformed reports whether n is neither an object nor a boolean.
func (n *node) malformed() bool {
	_, b := n.val.(bool)
	return n.obj == nil && !b
}

// refOnly reports whether n's $ref hides its siblings (draft-07 and older).
func (n *node) refOnly() bool {
	if n.obj == nil || n.doc.dialect == dialect2020 {
		return false
	}
	_, ok := n.obj["$ref"]
	return ok
}

// kw returns the value of a keyword as it applies to n.
func (n *node) kw(k string) (any, bool) {
	if n.obj == nil {
		return nil, false
	}
	if k != "$ref" && n.refOnly() {
		return nil, false
	}
	switch {
	case k == "anyOf" && n.drop&dropAnyOf != 0,
		k == "oneOf" && n.drop&dropOneOf != 0,
		(k == "if" || k == "then" || k == "else") && n.drop&dropIf != 0:
		return nil, false
	}
	v, ok := n.obj[k]
	return v, ok
}

// keywords lists the keywords that apply to n, sorted.
func (n *node) keywords() []string {
	if n.obj == nil {
		return nil
	}
	if n.refOnly() {
		return []string{"$ref"}
	}
	ks := make([]string, 0, len(n.obj))
	for k := range n.obj {
		if _, ok := n.kw(k); ok {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

// child returns the node of v, found under n through tokens.
func (n *node) child(v any, tokens ...string) *node {
	loc := n.loc
	if n.orig != nil {
		loc = n.orig.loc
	}
	for _, t := range tokens {
		loc += "/" + escape(t)
	}
	return n.doc.at(loc, v, enter(n.resource, v))
}

// sub returns the subschema under keyword k.
func (n *node) sub(k string) *node {
	v, ok := n.kw(k)
	if !ok {
		return nil
	}
	if n.neg != nil && k == "not" {
		return n.neg
	}
	return n.child(v, k)
}

// subs returns the subschemas of an array-valued keyword; ok is false when
// the keyword is there but not an array.
func (n *node) subs(k string) (out []*node, present, ok bool) {
	v, present := n.kw(k)
	if !present {
		return nil, false, true
	}
	if n.alts != nil && k == "anyOf" {
		return n.alts, true, true
	}
	l, ok := v.([]any)
	if !ok {
		return nil, true, false
	}
	out = make([]*node, len(l))
	for i, s := range l {
		out[i] = n.child(s, k, strconv.Itoa(i))
	}
	return out, true, true
}

// named is one entry of an object-valued keyword.
type named struct {
	name string
	n    *node
}

// subMap returns the entries of an object-valued keyword, by name.
func (n *node) subMap(k string) (out []named, present, ok bool) {
	v, present := n.kw(k)
	if !present {
		return nil, false, true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, true, false
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	out = make([]named, len(names))
	for i, name := range names {
		out[i] = named{name, n.child(m[name], k, name)}
	}
	return out, true, true
}

// prop returns the properties entry for name, if any.
func (n *node) prop(name string) *node {
	v, ok := n.kw("properties")
	if !ok {
		return nil
	}
	m, _ := v.(map[string]any)
	s, ok := m[name]
	if !ok {
		return nil
	}
	return n.child(s, "properties", name)
}

// escape makes a JSON pointer token of a name.
func escape(t string) string {
	if !strings.ContainsAny(t, "~/") {
		return t
	}
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

// The reference keywords, in the order they are followed.
var refKeywords = []string{"$ref", "$dynamicRef", "$recursiveRef"}

// itoa is strconv.Itoa.
func itoa(i int) string { return strconv.Itoa(i) }

// resolve follows the reference under keyword k of n. It returns nil when
// the reference does not resolve within the document: a remote reference,
// a pointer to nothing, an ambiguous anchor, or any reference made inside
// an embedded resource (one with its own $id), whose base is not followed.
func (n *node) resolve(k string) *node {
	v, ok := n.kw(k)
	if !ok {
		return nil
	}
	ref, ok := v.(string)
	if !ok || n.embedded {
		return nil
	}
	d := n.doc
	if k == "$recursiveRef" {
		if ref != "#" {
			return nil
		}
		return d.rootNode()
	}
	u, err := url.Parse(ref)
	if err != nil {
		return nil
	}
	if u.Scheme != "" || u.Host != "" || u.Path != "" || u.Opaque != "" || u.RawQuery != "" {
		if d.base == nil {
			return nil
		}
		abs := d.base.ResolveReference(u)
		frag := abs.Fragment
		abs.Fragment, abs.RawFragment = "", ""
		if abs.String() != d.base.String() {
			return nil
		}
		u = &url.URL{Fragment: frag}
	}
	frag := u.Fragment
	switch {
	case frag == "":
		return d.rootNode()
	case strings.HasPrefix(frag, "/"):
		return d.pointer(frag)
	}
	loc, ok := d.anchor(frag)
	if !ok {
		return nil
	}
	return d.pointer(loc)
}

// pointer resolves a JSON pointer (RFC 6901) against the document root.
func (d *doc) pointer(p string) *node {
	if p == "" {
		return d.rootNode()
	}
	cur := d.root
	loc := ""
	res := ""
	for _, raw := range strings.Split(p[1:], "/") {
		tok, ok := unescape(raw)
		if !ok {
			return nil
		}
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil
			}
			cur = v
		case []any:
			i, ok := index(tok)
			if !ok || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
		loc += "/" + escape(tok)
		res = enter(res, cur)
	}
	return d.at(loc, cur, res)
}

// unescape reads a JSON pointer token; ok is false for a bad escape.
func unescape(t string) (string, bool) {
	for i := 0; i < len(t); i++ {
		if t[i] == '~' && (i+1 == len(t) || (t[i+1] != '0' && t[i+1] != '1')) {
			return "", false
		}
	}
	return strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~"), true
}

// index reads an array index token.
func index(t string) (int, bool) {
	if t == "" || len(t) > 9 || (len(t) > 1 && t[0] == '0') {
		return 0, false
	}
	i := 0
	for _, c := range t {
		if c < '0' || c > '9' {
			return 0, false
		}
		i = i*10 + int(c-'0')
	}
	return i, true
}

// anchor finds the location of a plain-name fragment: $anchor,
// $dynamicAnchor, or a draft-06/07 "$id": "#name".
func (d *doc) anchor(name string) (string, bool) {
	if d.anchors == nil {
		d.anchors = map[string]string{}
		d.collectAnchors("", d.root, 0)
	}
	loc, ok := d.anchors[name]
	return loc, ok && loc != ""
}

// collectAnchors records the anchors of the schema v at loc and below it.
func (d *doc) collectAnchors(loc string, v any, depth int) {
	m, ok := v.(map[string]any)
	if !ok || depth > maxDepth {
		return
	}
	if id, ok := m["$id"].(string); ok && loc != "" && !strings.HasPrefix(id, "#") {
		return // an embedded resource: its anchors are its own
	}
	add := func(name string) {
		if prev, dup := d.anchors[name]; dup && prev != loc {
			d.anchors[name] = ""
			return
		}
		d.anchors[name] = loc
	}
	for _, k := range []string{"$anchor", "$dynamicAnchor"} {
		if s, ok := m[k].(string); ok {
			add(s)
		}
	}
	if id, ok := m["$id"].(string); ok && strings.HasPrefix(id, "#") && len(id) > 1 {
		add(id[1:])
	}
	for k, sv := range m {
		switch subschemaShape[k] {
		case shapeOne:
			if _, isArr := sv.([]any); isArr && k == "items" {
				d.collectAll(loc+"/"+escape(k), sv, depth)
				continue
			}
			d.collectAnchors(loc+"/"+escape(k), sv, depth+1)
		case shapeList:
			d.collectAll(loc+"/"+escape(k), sv, depth)
		case shapeMap:
			if mm, ok := sv.(map[string]any); ok {
				for name, s := range mm {
					d.collectAnchors(loc+"/"+escape(k)+"/"+escape(name), s, depth+1)
				}
			}
		}
	}
}

// collectAll is collectAnchors for each schema of an array.
func (d *doc) collectAll(loc string, v any, depth int) {
	l, _ := v.([]any)
	for i, s := range l {
		d.collectAnchors(loc+"/"+strconv.Itoa(i), s, depth+1)
	}
}

// shape is how a keyword holds subschemas.
type shape uint8

const (
	shapeNone shape = iota
	shapeOne        // the value is a schema
	shapeList       // the value is an array of schemas
	shapeMap        // the value is an object of schemas
)

// subschemaShape says where the keywords that hold schemas hold them.
var subschemaShape = map[string]shape{
	"additionalProperties": shapeOne, "additionalItems": shapeOne,
	"unevaluatedProperties": shapeOne, "unevaluatedItems": shapeOne,
	"contains": shapeOne, "propertyNames": shapeOne, "not": shapeOne,
	"if": shapeOne, "then": shapeOne, "else": shapeOne,
	"contentSchema": shapeOne, "items": shapeOne,
	"allOf": shapeList, "anyOf": shapeList, "oneOf": shapeList, "prefixItems": shapeList,
	"properties": shapeMap, "patternProperties": shapeMap, "$defs": shapeMap,
	"definitions": shapeMap, "dependentSchemas": shapeMap, "dependencies": shapeMap,
}

package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Views of checked JSON: an object as its members and an array as its
// elements, each a slice of the text it was read from. Building a view
// copies nothing; its spans live in a buffer the viewer reuses for every
// message, so reading a message allocates only what it keeps.

// member is one member of an object view: key and value, as offsets into
// the object's text.
type member struct {
	k0, k1 int // the key, quotes included
	v0, v1 int // the value
}

// viewer holds the spans of the views built while one message is read.
type viewer struct {
	members []member
	elems   [][2]int
}

// reset forgets every view built so far.
func (v *viewer) reset() {
	v.members = v.members[:0]
	v.elems = v.elems[:0]
}

// jobj is an object view. The zero jobj is an empty object that is not
// valid (ok reports false).
type jobj struct {
	v      *viewer
	raw    []byte
	lo, hi int
}

// ok reports whether the view is of an object.
func (o jobj) ok() bool { return o.v != nil }

// get returns the value of key (its last occurrence, as encoding/json
// decodes a map), or nil when the object has no such member.
func (o jobj) get(key string) json.RawMessage {
	for i := o.hi - 1; i >= o.lo; i-- {
		m := &o.v.members[i]
		if rawEquals(o.raw[m.k0:m.k1], key) {
			return o.raw[m.v0:m.v1:m.v1]
		}
	}
	return nil
}

// has reports whether key is present, whatever its value.
func (o jobj) has(key string) bool { return o.get(key) != nil }

// keys calls fn with each key, decoded, in order (repeats included).
func (o jobj) keys(fn func(k string)) {
	for i := o.lo; i < o.hi; i++ {
		m := &o.v.members[i]
		fn(unquote(o.raw[m.k0:m.k1]))
	}
}

// jarr is an array view.
type jarr struct {
	v      *viewer
	raw    []byte
	lo, hi int
}

// len returns the number of elements.
func (a jarr) len() int { return a.hi - a.lo }

// at returns element k.
func (a jarr) at(k int) json.RawMessage {
	e := a.v.elems[a.lo+k]
	return a.raw[e[0]:e[1]:e[1]]
}

// object returns a view of raw when it is an object.
func (v *viewer) object(raw json.RawMessage) (jobj, bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return jobj{}, false
	}
	o := jobj{v: v, raw: raw, lo: len(v.members)}
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] == '"' {
		var m member
		m.k0 = i
		i = skipString(raw, i)
		m.k1 = i
		i = skipSpace(raw, i)
		i = skipSpace(raw, i+1) // the colon
		m.v0 = i
		i = skip(raw, i)
		m.v1 = i
		v.members = append(v.members, m)
		i = skipSpace(raw, i)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	o.hi = len(v.members)
	return o, true
}

// array returns a view of raw when it is an array.
func (v *viewer) array(raw json.RawMessage) (jarr, bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return jarr{}, false
	}
	a := jarr{v: v, raw: raw, lo: len(v.elems)}
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] != ']' {
		j := skip(raw, i)
		v.elems = append(v.elems, [2]int{i, j})
		i = skipSpace(raw, j)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	a.hi = len(v.elems)
	return a, true
}

// ---- paths in errors -------------------------------------------------------

// at is where in a message a fault is: nothing (the message itself), a
// member (".content"), an element (".content[1]"), and what follows
// (".functionCall"). Its text is made only for an error.
type at struct {
	key string
	k   int // element index, or -1 for the member itself
	sub string
}

// here is the message itself.
var here = at{k: -1}

// field is the member key of the message.
func field(key string) at { return at{key: key, k: -1} }

// elem is element k of the member key.
func elem(key string, k int) at { return at{key: key, k: k} }

// then appends a member path to a.
func (a at) then(sub string) at {
	a.sub += sub
	return a
}

func (a at) String() string {
	s := ""
	if a.key != "" {
		s = "." + a.key
		if a.k >= 0 {
			s += "[" + strconv.Itoa(a.k) + "]"
		}
	}
	return s + a.sub
}

// errAt builds an error at a whose text continues a path such as
// "messages[3]".
func errAt(a at, format string, args ...any) error {
	return &pathErr{path: a.String(), msg: oneLine(fmt.Sprintf(format, args...))}
}

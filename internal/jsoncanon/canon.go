// Package jsoncanon checks JSON text against the grammar encoding/json
// accepts and writes its canonical form: the members of every object
// sorted stably by key, no white space outside strings, strings and
// numbers kept as written. Two texts with the same canonical form decode
// to the same value.
//
// One grammar serves both: [Append] canonicalizes a text, [Valid] and
// [Value] check one without writing anything, and [String], [Number] and
// [SkipSpace] check the tokens they are made of. Each accepts exactly
// what encoding/json's Valid accepts (RFC 8259, nested at most [MaxDepth]
// containers deep); none decodes escapes or checks UTF-8, as Valid does
// not.
package jsoncanon

import (
	"bytes"
	"slices"
)

// MaxDepth is how deeply arrays and objects may nest, as in
// encoding/json.
const MaxDepth = 10000

// Append appends to dst the canonical form of the JSON text b. It reports
// false, with dst holding a partial result, when b is not what
// encoding/json's Valid accepts.
func Append(dst, b []byte) ([]byte, bool) {
	dst, i, ok := value(dst, b, SkipSpace(b, 0), MaxDepth, true)
	return dst, ok && SkipSpace(b, i) == len(b)
}

// Valid reports whether b is one JSON value, white space around it
// allowed, as encoding/json's Valid does.
func Valid(b []byte) bool {
	end, ok := Value(b, 0, MaxDepth)
	return ok && SkipSpace(b, end) == len(b)
}

// Value checks the JSON value that starts at b[i], after any white space,
// holding at most depth containers one inside the other, and returns the
// index just past it. It reports false when no such value starts there.
func Value(b []byte, i, depth int) (int, bool) {
	_, end, ok := value(nil, b, SkipSpace(b, i), depth, false)
	return end, ok
}

// value checks the value at b[i], which follows no white space, appends
// its canonical form to dst when write is set, and returns the index
// after it. room is how many containers it may nest.
func value(dst, b []byte, i, room int, write bool) ([]byte, int, bool) {
	if i >= len(b) {
		return dst, i, false
	}
	j := -1
	switch b[i] {
	case '{':
		return object(dst, b, i, room, write)
	case '[':
		return array(dst, b, i, room, write)
	case '"':
		j = String(b, i)
	case 't':
		j = literal(b, i, "true")
	case 'f':
		j = literal(b, i, "false")
	case 'n':
		j = literal(b, i, "null")
	default:
		j = Number(b, i)
	}
	if j < 0 {
		return dst, i, false
	}
	if write {
		dst = append(dst, b[i:j]...)
	}
	return dst, j, true
}

// object is value for the object at b[i]. Members are written in place;
// only when their keys are out of order are they sorted and written
// again.
func object(dst, b []byte, i, room int, write bool) ([]byte, int, bool) {
	if room--; room < 0 {
		return dst, i, false
	}
	obj := len(dst)
	if write {
		dst = append(dst, '{')
	}
	first, sorted, prev, prevEnd := true, true, 0, 0 // the last key, in dst
	if i = SkipSpace(b, i+1); i < len(b) && b[i] == '}' {
		if write {
			dst = append(dst, '}')
		}
		return dst, i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return dst, i, false
		}
		start := i
		if i = String(b, i); i < 0 {
			return dst, start, false
		}
		if write {
			if !first {
				dst = append(dst, ',')
			}
			k := len(dst)
			dst = append(dst, b[start:i]...)
			if !first && sorted {
				sorted = bytes.Compare(dst[prev:prevEnd], dst[k:]) <= 0
			}
			prev, prevEnd = k, len(dst)
		}
		first = false
		if i = SkipSpace(b, i); i >= len(b) || b[i] != ':' {
			return dst, i, false
		}
		if write {
			dst = append(dst, ':')
		}
		var ok bool
		if dst, i, ok = value(dst, b, SkipSpace(b, i+1), room, write); !ok {
			return dst, i, false
		}
		if i = SkipSpace(b, i); i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			break
		}
		return dst, i, false
	}
	if !write {
		return dst, i + 1, true
	}
	if !sorted {
		dst = sortMembers(dst[:obj+1], slices.Clone(dst[obj+1:]))
	}
	return append(dst, '}'), i + 1, true
}

// array is value for the array at b[i].
func array(dst, b []byte, i, room int, write bool) ([]byte, int, bool) {
	if room--; room < 0 {
		return dst, i, false
	}
	if write {
		dst = append(dst, '[')
	}
	if i = SkipSpace(b, i+1); i < len(b) && b[i] == ']' {
		if write {
			dst = append(dst, ']')
		}
		return dst, i + 1, true
	}
	for {
		var ok bool
		if dst, i, ok = value(dst, b, i, room, write); !ok {
			return dst, i, false
		}
		if i = SkipSpace(b, i); i < len(b) && b[i] == ',' {
			if write {
				dst = append(dst, ',')
			}
			i = SkipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			if write {
				dst = append(dst, ']')
			}
			return dst, i + 1, true
		}
		return dst, i, false
	}
}

// literal returns the index after lit at b[i], or -1 if lit is not there.
func literal(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// String returns the index after the JSON string whose opening quote is
// at b[i], or -1 if it is not one: unterminated, with a control
// character, or with an escape JSON does not know.
func String(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			if i++; i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i <= 4 {
					return -1
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// Number returns the index after the JSON number that starts at b[i], or
// -1 if none starts there:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func Number(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && isDigit(b[i]):
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i++; i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i
}

// SkipSpace returns the index of the first byte from b[i] on that is not
// JSON white space, or len(b).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// sortMembers appends to dst the members of obj, a canonical object
// without its braces, sorted stably by key.
func sortMembers(dst, obj []byte) []byte {
	type member struct{ key, kv []byte }
	var ms []member
	for i := 0; i < len(obj); {
		k := skipString(obj, i)
		end := skipCanonical(obj, k+1)
		ms = append(ms, member{obj[i:k], obj[i:end]})
		i = end + 1 // past the comma
	}
	slices.SortStableFunc(ms, func(x, y member) int { return bytes.Compare(x.key, y.key) })
	for j, m := range ms {
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, m.kv...)
	}
	return dst
}

// skipCanonical returns the index after the value that starts at b[i],
// in text without white space outside strings.
func skipCanonical(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = skipString(b, i) - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		}
		if depth == 0 && (b[i] == '"' || b[i] == '}' || b[i] == ']') {
			return i + 1
		}
	}
	return i
}

// skipString returns the index after the string, checked already, that
// starts at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

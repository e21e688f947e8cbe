package pruneguard

import (
	"bytes"
	"slices"
)

// Canonical JSON, for the signatures of calls: the members of every
// object sorted stably by key, no white space outside strings, strings
// and numbers kept as written.

// maxDepth is how deeply canonical lets arrays and objects nest, as
// encoding/json does.
const maxDepth = 10000

// canonical appends to dst the canonical form of the JSON text b. It
// reports false, with dst holding a partial result, when b is not what
// encoding/json's Valid accepts.
func canonical(dst, b []byte) ([]byte, bool) {
	dst, i, ok := canonValue(dst, b, skipSpace(b, 0), 0)
	return dst, ok && skipSpace(b, i) == len(b)
}

// canonValue appends the canonical form of the value at b[i], which
// follows no white space, and returns the index after it.
func canonValue(dst, b []byte, i, depth int) ([]byte, int, bool) {
	if i >= len(b) {
		return dst, i, false
	}
	switch b[i] {
	case '{':
		if depth++; depth > maxDepth {
			return dst, i, false
		}
		// Members are written in place; only when their keys are out of
		// order are they sorted and written again.
		obj := len(dst)
		dst = append(dst, '{')
		sorted, prev, prevEnd := true, -1, -1 // the last key, in dst
		if i = skipSpace(b, i+1); i < len(b) && b[i] == '}' {
			return append(dst, '}'), i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return dst, i, false
			}
			if prev >= 0 {
				dst = append(dst, ',')
			}
			start := i
			if i = validString(b, i); i < 0 {
				return dst, i, false
			}
			k := len(dst)
			dst = append(dst, b[start:i]...)
			if prev >= 0 && sorted {
				sorted = bytes.Compare(dst[prev:prevEnd], dst[k:]) <= 0
			}
			prev, prevEnd = k, len(dst)
			if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
				return dst, i, false
			}
			dst = append(dst, ':')
			var ok bool
			if dst, i, ok = canonValue(dst, b, skipSpace(b, i+1), depth); !ok {
				return dst, i, false
			}
			if i = skipSpace(b, i); i < len(b) && b[i] == ',' {
				i = skipSpace(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				break
			}
			return dst, i, false
		}
		if !sorted {
			dst = sortMembers(dst[:obj+1], slices.Clone(dst[obj+1:]))
		}
		return append(dst, '}'), i + 1, true
	case '[':
		if depth++; depth > maxDepth {
			return dst, i, false
		}
		dst = append(dst, '[')
		if i = skipSpace(b, i+1); i < len(b) && b[i] == ']' {
			return append(dst, ']'), i + 1, true
		}
		for {
			var ok bool
			if dst, i, ok = canonValue(dst, b, i, depth); !ok {
				return dst, i, false
			}
			if i = skipSpace(b, i); i < len(b) && b[i] == ',' {
				dst = append(dst, ',')
				i = skipSpace(b, i+1)
				continue
			}
			if i < len(b) && b[i] == ']' {
				return append(dst, ']'), i + 1, true
			}
			return dst, i, false
		}
	case '"':
		j := validString(b, i)
		if j < 0 {
			return dst, i, false
		}
		return append(dst, b[i:j]...), j, true
	case 't':
		return literal(dst, b, i, "true")
	case 'f':
		return literal(dst, b, i, "false")
	case 'n':
		return literal(dst, b, i, "null")
	}
	j := validNumber(b, i)
	if j < 0 {
		return dst, i, false
	}
	return append(dst, b[i:j]...), j, true
}

func literal(dst, b []byte, i int, lit string) ([]byte, int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return dst, i, false
	}
	return append(dst, lit...), i + len(lit), true
}

// validString returns the index after the JSON string at b[i], or -1 if
// it is not one: unterminated, with a control character, or with an
// escape JSON does not know.
func validString(b []byte, i int) int {
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

// validNumber returns the index after the JSON number at b[i], or -1 if
// none starts there.
func validNumber(b []byte, i int) int {
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

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i].
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

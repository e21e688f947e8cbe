package facts

import (
	"encoding/json"
	"strings"
)

// frame is one open JSON object or array: the key it sits under, and for
// an object the key of the value being read.
type frame struct {
	obj      bool
	name     string
	cur      string
	expected bool // an object expects a key next
}

// json adds the facts of t, which is valid JSON, read at base in the
// input (see off). Strings holding JSON are read as JSON again while
// depth is 0.
func (s *scanner) json(t string, base int, exact bool, depth int) {
	var stack []frame
	for i := 0; i < len(t); {
		c := t[i]
		switch {
		case c == '{' || c == '[':
			stack = append(stack, frame{obj: c == '{', name: valueKey(stack), expected: c == '{'})
			i++
		case c == '}' || c == ']':
			stack = stack[:len(stack)-1]
			i++
		case c == ',':
			if n := len(stack); n > 0 && stack[n-1].obj {
				stack[n-1].expected = true
			}
			i++
		case c == '"':
			end := stringEnd(t, i)
			if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].expected {
				stack[n-1].cur, stack[n-1].expected = decode(t[i:end]), false
			} else {
				s.jsonString(t[i:end], valueKey(stack), s.off(base, i, exact), exact, depth)
			}
			i = end
		case c == '-' || isDigit(c) || c == 't' || c == 'f' || c == 'n':
			j := i
			for j < len(t) && !isSpace(t[j]) && strings.IndexByte(",]}", t[j]) < 0 {
				j++
			}
			s.jsonLiteral(t[i:j], valueKey(stack), s.off(base, i, exact))
			i = j
		default: // white space and ':'
			i++
		}
	}
}

// valueKey returns the key of the value the stack is at: the object's
// current key, or the key of the array.
func valueKey(stack []frame) string {
	if len(stack) == 0 {
		return ""
	}
	if f := stack[len(stack)-1]; f.obj {
		return f.cur
	}
	return stack[len(stack)-1].name
}

// stringEnd returns the end of the JSON string that starts at t[i].
func stringEnd(t string, i int) int {
	for j := i + 1; j < len(t); j++ {
		switch t[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(t)
}

// decode returns the value of JSON string raw (quotes included).
func decode(raw string) string {
	if strings.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	var v string
	_ = json.Unmarshal([]byte(raw), &v) // raw is a valid JSON string
	return v
}

// jsonString adds the facts of a string leaf, raw with its quotes, under
// key, at off in the input.
func (s *scanner) jsonString(raw, key string, off int, exact bool, depth int) {
	v := decode(raw)
	// Without escapes the value is the raw bytes after the quote: its
	// facts keep their offsets.
	exact = exact && len(v) == len(raw)-2
	base := off
	if exact {
		base = off + 1
	}
	if depth == 0 && looksJSON(v) {
		s.json(v, off, false, 1)
		return
	}
	if idKey(key) && v != "" && len(v) <= 64 && !strings.ContainsAny(v, " \t\r\n") {
		s.c.add(KindID, v, base, key)
	}
	if errKey(key) {
		from, to := trimSpace(v, 0, len(v))
		if nl := strings.IndexAny(v[from:to], "\r\n"); nl >= 0 {
			to = from + nl
		}
		if to-from > MaxLen {
			from, to = window(v, from, to, from, 0)
		}
		s.c.add(KindError, v[from:to], s.off(base, from, exact), key)
	}
	saved := s.key
	s.key = key
	s.text(v, base, exact)
	s.key = saved
}

// jsonLiteral adds the fact of a number or boolean leaf under key: a
// number of two or more characters as KindNumber, a one-digit number or
// a boolean as a KindKV fact key=value.
func (s *scanner) jsonLiteral(lit, key string, off int) {
	switch {
	case lit == "null":
	case lit == "true" || lit == "false" || len(lit) == 1:
		if key != "" && !strings.ContainsAny(key, " \t\r\n") {
			s.c.add(KindKV, key+"="+lit, off, key)
		}
	default:
		s.c.add(KindNumber, lit, off, key)
	}
}

// idWords are the last words of the keys whose one-word strings are
// identifiers whatever their shape.
var idWords = map[string]bool{
	"id": true, "ids": true, "uuid": true, "guid": true, "code": true, "number": true,
	"no": true, "num": true, "sha": true, "hash": true, "digest": true, "ref": true, "nonce": true,
}

// idKey reports whether the last word of key (split at '_', '-', '.',
// ' ' and lower-to-upper case changes) is one of idWords.
func idKey(key string) bool {
	return idWords[strings.ToLower(lastWord(key))]
}

// errKey reports whether key names an error: error, err, exception,
// stderr or traceback, in any case.
func errKey(key string) bool {
	switch strings.ToLower(key) {
	case "error", "err", "exception", "stderr", "traceback", "error_message", "errormessage":
		return true
	}
	return false
}

// lastWord returns the last word of a key: "reservation_id" -> "id",
// "orderNumber" -> "Number", "ID" -> "ID".
func lastWord(key string) string {
	i := len(key)
	for i > 0 && !strings.ContainsRune("_-. ", rune(key[i-1])) {
		if i < len(key) && !isUpper(key[i-1]) && isUpper(key[i]) {
			break
		}
		i--
	}
	return key[i:]
}

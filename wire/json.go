package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"unicode/utf8"
)

// topLevel is a parsed top-level JSON object that remembers where each value
// sits in the original bytes, so one value can be replaced without touching
// the rest of the document.
type topLevel struct {
	src    []byte
	fields map[string]json.RawMessage
	spans  map[string][2]int
}

func parseTop(body []byte) (*topLevel, error) {
	if err := checkText(body); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("body is not valid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("body is not a JSON object")
	}
	t := &topLevel{src: body, fields: map[string]json.RawMessage{}, spans: map[string][2]int{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("body is not valid JSON: %v", err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("body is not valid JSON: object key is not a string")
		}
		if _, dup := t.fields[key]; dup {
			// Providers differ on which value counts, and an edit would
			// rewrite only one of them.
			return nil, fmt.Errorf("body has the key %q twice", key)
		}
		off := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("body is not valid JSON: value of %q: %v", key, err)
		}
		end := int(dec.InputOffset())
		start := valueStart(body, off)
		if start < 0 || start > end {
			return nil, fmt.Errorf("body is not valid JSON: value of %q", key)
		}
		t.fields[key] = raw
		t.spans[key] = [2]int{start, end}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("body is not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("body is not valid JSON: data after the top-level object")
	}
	return t, nil
}

// bom is the UTF-8 byte order mark.
var bom = []byte("\xef\xbb\xbf")

// TextError reports bytes that cannot be a JSON text at all: a byte
// order mark, or bytes that are not UTF-8. Offset is the position of the
// first offending byte. [Read], [Detect], [Unwrap] and [ReadManifest]
// return errors that wrap one (match it with errors.As). The zero value
// reports invalid UTF-8 at offset 0.
type TextError struct {
	Offset int
	BOM    bool // the text starts with a byte order mark
}

func (e *TextError) Error() string {
	if e.BOM {
		return "body starts with a byte order mark (U+FEFF), which JSON text must not have"
	}
	return fmt.Sprintf("body is not valid UTF-8 (byte %d)", e.Offset)
}

// checkText rejects what RFC 8259 rules out before any JSON is parsed:
// text other than UTF-8, and a leading byte order mark. Providers reject
// such bodies, and an edit that re-encodes a string would silently
// replace the bytes that are not UTF-8.
func checkText(b []byte) error {
	if bytes.HasPrefix(b, bom) {
		return &TextError{BOM: true}
	}
	if utf8.Valid(b) {
		return nil
	}
	off := 0
	for off < len(b) {
		r, n := utf8.DecodeRune(b[off:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		off += n
	}
	return &TextError{Offset: off}
}

// valueStart skips whitespace and the colon that follow an object key.
func valueStart(b []byte, off int) int {
	colon := false
	for i := off; i < len(b); i++ {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
		case ':':
			if colon {
				return -1
			}
			colon = true
		default:
			if !colon {
				return -1
			}
			return i
		}
	}
	return -1
}

// with returns the document with the values of the keys in edits swapped
// for the new ones; keys the document lacks are appended at the end of the
// object, in sorted order. Everything else is kept byte for byte.
func (t *topLevel) with(edits map[string][]byte) []byte {
	type span struct {
		start, end int
		val        []byte
	}
	var spans []span
	var added []string
	for k, v := range edits {
		if sp, ok := t.spans[k]; ok {
			spans = append(spans, span{sp[0], sp[1], v})
		} else {
			added = append(added, k)
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	sort.Strings(added)
	out := make([]byte, 0, len(t.src)+64)
	at := 0
	for _, sp := range spans {
		out = append(out, t.src[at:sp.start]...)
		out = append(out, sp.val...)
		at = sp.end
	}
	if len(added) == 0 {
		return append(out, t.src[at:]...)
	}
	closing := bytes.LastIndexByte(t.src, '}')
	out = append(out, t.src[at:closing]...)
	for i, k := range added {
		if len(t.fields) > 0 || i > 0 {
			out = append(out, ',')
		}
		kb, _ := json.Marshal(k)
		out = append(out, kb...)
		out = append(out, ':')
		out = append(out, edits[k]...)
	}
	return append(out, t.src[closing:]...)
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

func kindOf(raw json.RawMessage) byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	switch c := raw[0]; c {
	case '{', '[', '"', 't', 'f', 'n':
		return c
	default:
		return '0'
	}
}

func kindName(raw json.RawMessage) string {
	switch kindOf(raw) {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n', 0:
		return "null"
	default:
		return "a number"
	}
}

func asObject(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	if kindOf(raw) != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}

func asArray(raw json.RawMessage) ([]json.RawMessage, bool) {
	if kindOf(raw) != '[' {
		return nil, false
	}
	var a []json.RawMessage
	if json.Unmarshal(raw, &a) != nil {
		return nil, false
	}
	return a, true
}

func asString(raw json.RawMessage) (string, bool) {
	if kindOf(raw) != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// optString reads an optional string field: absent or null gives "", a
// value of another type is an error.
func optString(m map[string]json.RawMessage, key string) (string, error) {
	raw, ok := m[key]
	if !ok || isNull(raw) {
		return "", nil
	}
	s, ok := asString(raw)
	if !ok {
		return "", fmt.Errorf("%s is %s, not a string", key, kindName(raw))
	}
	return s, nil
}

// argsJSON turns a tool-call arguments value into JSON. Chat and Responses
// send arguments as a string holding JSON; when that string is valid JSON it
// is unwrapped, otherwise the raw value is kept.
func argsJSON(raw json.RawMessage) json.RawMessage {
	if isNull(raw) {
		return nil
	}
	if s, ok := asString(raw); ok {
		if json.Valid([]byte(s)) {
			return json.RawMessage(s)
		}
	}
	return append(json.RawMessage(nil), raw...)
}

func joinArray(items []json.RawMessage) []byte {
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	return append(out, ']')
}

package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"unicode/utf8"
)

// topLevel is a parsed top-level JSON object that remembers where each value
// sits in the original bytes, so one value can be replaced without touching
// the rest of the document. Its values are slices of src.
type topLevel struct {
	src    []byte
	fields map[string]json.RawMessage
	spans  map[string][2]int
	// elems holds, for each history key ("messages", "input",
	// "contents") whose value is an array, where each element sits.
	elems map[string][]span
	ws    int // whitespace between the tokens of src
}

// span is where one value sits in a text, with the whitespace between
// its tokens.
type span struct{ start, end, ws int }

// readTop reads a request body's top-level object in one pass. Only when
// the body is refused is it read again, by encoding/json, for the
// wording and place of the fault.
func readTop(body []byte) (*topLevel, error) {
	if err := checkText(body); err != nil {
		return nil, err
	}
	if t, ok := scanTop(body); ok {
		return t, nil
	}
	if _, err := parseTop(body); err != nil {
		return nil, err
	}
	return nil, errors.New("body is not valid JSON")
}

// isHistoryKey reports a top-level key that holds a history in some
// dialect.
func isHistoryKey(k string) bool { return k == "messages" || k == "input" || k == "contents" }

// scanTop reads a top-level object with a scanner, splitting the history
// arrays into their elements. ok is false when the body is not a JSON
// object, has a key twice, or breaks the JSON grammar anywhere.
func scanTop(body []byte) (*topLevel, bool) {
	s := &scanner{src: body}
	i := s.space(0)
	if i >= len(body) || body[i] != '{' {
		return nil, false
	}
	t := &topLevel{src: body, fields: map[string]json.RawMessage{}, spans: map[string][2]int{}, elems: map[string][]span{}}
	i = s.space(i + 1)
	if i < len(body) && body[i] == '}' {
		i++
	} else {
		for {
			if i >= len(body) || body[i] != '"' {
				return nil, false
			}
			k0 := i
			var err error
			if i, err = s.str(i); err != nil {
				return nil, false
			}
			key := unquote(body[k0:i])
			if _, dup := t.fields[key]; dup {
				return nil, false
			}
			i = s.space(i)
			if i >= len(body) || body[i] != ':' {
				return nil, false
			}
			start := s.space(i + 1)
			if start < len(body) && body[start] == '[' && isHistoryKey(key) {
				var es []span
				if i, es, err = s.elements(start); err != nil {
					return nil, false
				}
				t.elems[key] = es
			} else if i, err = s.value(start, maxDepth); err != nil {
				return nil, false
			}
			t.fields[key] = body[start:i:i]
			t.spans[key] = [2]int{start, i}
			i = s.space(i)
			if i < len(body) && body[i] == ',' {
				i = s.space(i + 1)
				continue
			}
			if i < len(body) && body[i] == '}' {
				i++
				break
			}
			return nil, false
		}
	}
	if s.space(i) != len(body) {
		return nil, false
	}
	t.ws = s.ws
	return t, true
}

// elements checks the array at i, element by element, and returns where
// each one sits.
func (s *scanner) elements(i int) (int, []span, error) {
	src := s.src
	i = s.space(i + 1)
	if i < len(src) && src[i] == ']' {
		return i + 1, []span{}, nil
	}
	var out []span
	for {
		ws := s.ws
		j, err := s.value(i, maxDepth-1)
		if err != nil {
			return 0, nil, err
		}
		out = append(out, span{i, j, s.ws - ws})
		i = s.space(j)
		if i < len(src) && src[i] == ',' {
			i = s.space(i + 1)
			continue
		}
		if i < len(src) && src[i] == ']' {
			return i + 1, out, nil
		}
		return 0, nil, errSyntax
	}
}

func parseTop(body []byte) (*topLevel, error) {
	if err := checkText(body); err != nil {
		return nil, err
	}
	t := &topLevel{src: body, fields: map[string]json.RawMessage{}, spans: map[string][2]int{}}
	err := walkObject(body, bodyWords, func(key string, raw json.RawMessage, off, end int) error {
		if _, dup := t.fields[key]; dup {
			// Providers differ on which value counts, and an edit would
			// rewrite only one of them.
			return fmt.Errorf("body has the key %q twice", key)
		}
		start := valueStart(body, off)
		if start < 0 || start > end {
			return fmt.Errorf("body is not valid JSON: value of %q", key)
		}
		t.fields[key] = raw
		t.spans[key] = [2]int{start, end}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// objectWords words the errors of walkObject for what is read.
type objectWords struct {
	invalid   string // "not valid JSON"
	notObject string // "not a JSON object"
	trailing  string // what follows the object: "data after the object"
}

var (
	bodyWords  = objectWords{"body is not valid JSON", "body is not a JSON object", "data after the top-level object"}
	plainWords = objectWords{"not valid JSON", "not a JSON object", "data after the object"}
)

// walkObject reads b as one JSON object and calls field with each key,
// in order, its value, and the input offsets before and after the value.
// An error of field ends the walk and is returned as it is.
func walkObject(b []byte, w objectWords, field func(key string, raw json.RawMessage, off, end int) error) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%s: %v", w.invalid, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New(w.notObject)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%s: %v", w.invalid, err)
		}
		key, ok := tok.(string)
		if !ok {
			return errors.New(w.invalid + ": object key is not a string")
		}
		off := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("%s: value of %q: %v", w.invalid, key, err)
		}
		if err := field(key, raw, off, int(dec.InputOffset())); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("%s: %v", w.invalid, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New(w.invalid + ": " + w.trailing)
	}
	return nil
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
	n := len(t.src) + 64
	for k, v := range edits {
		if sp, ok := t.spans[k]; ok {
			n += len(v) - (sp[1] - sp[0])
		} else {
			n += len(k) + len(v) + 4
		}
	}
	var buf bytes.Buffer
	buf.Grow(n)
	_ = t.write(&buf, edits, "", nil)
	return buf.Bytes()
}

// write writes the document as with does, and the value of key hist (when
// hist is not nil) as hist writes it.
func (t *topLevel) write(w io.Writer, edits map[string][]byte, key string, hist func(io.Writer) error) error {
	type span struct {
		start, end int
		val        []byte
		hist       bool
	}
	var spans []span
	var added []string
	for k, v := range edits {
		if sp, ok := t.spans[k]; ok {
			spans = append(spans, span{sp[0], sp[1], v, false})
		} else {
			added = append(added, k)
		}
	}
	if hist != nil {
		if sp, ok := t.spans[key]; ok {
			spans = slices.DeleteFunc(spans, func(s span) bool { return s.start == sp[0] })
			spans = append(spans, span{sp[0], sp[1], nil, true})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	sort.Strings(added)
	var err error
	put := func(b []byte) {
		if err == nil {
			_, err = w.Write(b)
		}
	}
	at := 0
	for _, sp := range spans {
		put(t.src[at:sp.start])
		if sp.hist {
			if err == nil {
				err = hist(w)
			}
		} else {
			put(sp.val)
		}
		at = sp.end
	}
	if len(added) == 0 {
		put(t.src[at:])
		return err
	}
	closing := bytes.LastIndexByte(t.src, '}')
	put(t.src[at:closing])
	for i, k := range added {
		if len(t.fields) > 0 || i > 0 {
			put([]byte{','})
		}
		kb, _ := json.Marshal(k)
		put(kb)
		put([]byte{':'})
		put(edits[k])
	}
	put(t.src[closing:])
	return err
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
	if t := trimSpace(raw); kindOf(t) == '"' {
		if s := unquoteBytes(t); validJSON(s) {
			return s
		}
	}
	return append(json.RawMessage(nil), raw...)
}

// joinArray writes raw values as a JSON array.
func joinArray(items []json.RawMessage) json.RawMessage {
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

// mustString encodes s as a JSON string.
func mustString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

package spill

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pruneguard/pruneguard"
)

// The layouts of a segment; a reader refuses others. The first has no
// description; the second adds one, and its checksum covers it.
const (
	segmentFormat1 = "pruneguard-spill-segment/1"
	segmentFormat  = "pruneguard-spill-segment/2"
)

// segment is what a Spiller stores under one key: the messages of one
// spill, with the key they were stored under, a short description of
// them (see describe) and a checksum of both, so a segment read back
// from any store can be checked on its own.
type segment struct {
	Format      string          `json:"format"`
	Key         string          `json:"key"`
	Count       int             `json:"count"`
	Description string          `json:"description,omitempty"`
	SHA256      string          `json:"sha256"`
	Messages    json.RawMessage `json:"messages"`
}

// checksum is the SHA-256 a segment of the given format records.
func checksum(format, desc string, body []byte) string {
	h := sha256.New()
	if format != segmentFormat1 {
		h.Write([]byte(desc))
		h.Write([]byte{0})
	}
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// stored is a segment as read back and checked.
type stored struct {
	ms   []pruneguard.Message
	body []byte // the encoding of ms
	desc string
}

// record is one message as a segment holds it, and as a recall answer
// shows it to a model. Content and call arguments are kept as text when
// they are UTF-8, as base64 otherwise, so that every byte comes back.
type record struct {
	ID            string       `json:"id"`
	Role          string       `json:"role,omitempty"`
	Tokens        int          `json:"tokens,omitempty"`
	Content       string       `json:"content,omitempty"`
	ContentBase64 []byte       `json:"content_base64,omitempty"`
	Calls         []callRecord `json:"calls,omitempty"`
	Answers       []string     `json:"answers,omitempty"`
	Class         string       `json:"class,omitempty"`
	Facts         []string     `json:"facts,omitempty"`
	Pinned        bool         `json:"pinned,omitempty"`
	NeededBy      []string     `json:"needed_by,omitempty"`
	Requires      []string     `json:"requires,omitempty"`
	IsError       bool         `json:"is_error,omitempty"`
}

type callRecord struct {
	ID         string `json:"id"`
	Tool       string `json:"tool"`
	Args       string `json:"args,omitempty"`
	ArgsBase64 []byte `json:"args_base64,omitempty"`
	Server     bool   `json:"server,omitempty"`
}

// className names a class in a record: by its name, or, for a value
// beyond [pruneguard.Irreducible] (which counts as Irreducible, but is
// kept as it was), "class-N".
func className(c pruneguard.Class) string {
	if c <= pruneguard.Irreducible {
		return c.String()
	}
	return "class-" + strconv.Itoa(int(c))
}

// parseClass reads a class className wrote.
func parseClass(name string) (pruneguard.Class, error) {
	for c := pruneguard.Reconstructible; c <= pruneguard.Irreducible; c++ {
		if c.String() == name {
			return c, nil
		}
	}
	if n, ok := strings.CutPrefix(name, "class-"); ok {
		v, err := strconv.ParseUint(n, 10, 8)
		if err == nil && v > uint64(pruneguard.Irreducible) && strconv.FormatUint(v, 10) == n {
			return pruneguard.Class(v), nil
		}
	}
	return 0, fmt.Errorf("unknown class %q", name)
}

// factNames name the facts a record may carry; other bits are written as
// "bit-N".
var factNames = map[pruneguard.Facts]string{
	pruneguard.NegativeResult: "negative-result",
	pruneguard.TransientState: "transient-state",
	pruneguard.OneTimeSecret:  "one-time-secret",
	pruneguard.UserConstraint: "user-constraint",
}

func text(b []byte) (string, []byte) {
	if utf8.Valid(b) {
		return string(b), nil
	}
	return "", b
}

func untext(s string, b []byte) []byte {
	if b != nil {
		return b
	}
	if s == "" {
		return nil
	}
	return []byte(s)
}

// checkText refuses a message whose names JSON text cannot hold exactly.
func checkText(m pruneguard.Message) error {
	ok := utf8.ValidString(string(m.ID)) && utf8.ValidString(string(m.Role))
	for _, c := range m.Calls {
		ok = ok && utf8.ValidString(string(c.ID)) && utf8.ValidString(c.Tool)
	}
	for _, a := range m.Answers {
		ok = ok && utf8.ValidString(string(a))
	}
	for _, st := range m.NeededBy {
		ok = ok && utf8.ValidString(string(st))
	}
	for _, t := range m.Requires {
		ok = ok && utf8.ValidString(t)
	}
	if !ok {
		return &MessageError{ID: m.ID, Err: ErrNotText}
	}
	return nil
}

func toRecord(m pruneguard.Message) record {
	r := record{ID: string(m.ID), Role: string(m.Role), Tokens: m.Tokens, Pinned: m.Pinned, IsError: m.IsError}
	r.Content, r.ContentBase64 = text(m.Content)
	for _, c := range m.Calls {
		cr := callRecord{ID: string(c.ID), Tool: c.Tool, Server: c.Server}
		cr.Args, cr.ArgsBase64 = text(c.Args)
		r.Calls = append(r.Calls, cr)
	}
	for _, a := range m.Answers {
		r.Answers = append(r.Answers, string(a))
	}
	if m.Class != pruneguard.ClassUnset {
		r.Class = className(m.Class)
	}
	for f := m.Facts; f != 0; f &= f - 1 {
		bit := f & -f
		name, ok := factNames[bit]
		if !ok {
			name = fmt.Sprintf("bit-%d", bits.TrailingZeros8(uint8(bit)))
		}
		r.Facts = append(r.Facts, name)
	}
	for _, s := range m.NeededBy {
		r.NeededBy = append(r.NeededBy, string(s))
	}
	r.Requires = append(r.Requires, m.Requires...)
	return r
}

func fromRecord(r record) (pruneguard.Message, error) {
	m := pruneguard.Message{
		ID:      pruneguard.MessageID(r.ID),
		Role:    pruneguard.Role(r.Role),
		Tokens:  r.Tokens,
		Content: untext(r.Content, r.ContentBase64),
		Pinned:  r.Pinned,
		IsError: r.IsError,
	}
	for _, cr := range r.Calls {
		m.Calls = append(m.Calls, pruneguard.Call{ID: pruneguard.CallID(cr.ID), Tool: cr.Tool, Args: untext(cr.Args, cr.ArgsBase64), Server: cr.Server})
	}
	for _, a := range r.Answers {
		m.Answers = append(m.Answers, pruneguard.CallID(a))
	}
	if r.Class != "" {
		c, err := parseClass(r.Class)
		if err != nil {
			return m, err
		}
		m.Class = c
	}
	for _, name := range r.Facts {
		f, err := parseFact(name)
		if err != nil {
			return m, err
		}
		m.Facts |= f
	}
	for _, s := range r.NeededBy {
		m.NeededBy = append(m.NeededBy, pruneguard.StepID(s))
	}
	m.Requires = append(m.Requires, r.Requires...)
	return m, nil
}

func parseFact(name string) (pruneguard.Facts, error) {
	for f, n := range factNames {
		if n == name {
			return f, nil
		}
	}
	var bit uint
	if _, err := fmt.Sscanf(name, "bit-%d", &bit); err == nil && bit < 8 && name == fmt.Sprintf("bit-%d", bit) {
		return pruneguard.Facts(1) << bit, nil
	}
	return 0, fmt.Errorf("unknown fact %q", name)
}

// marshal encodes v as compact JSON without HTML escaping, so that text a
// model reads back is the text that was spilled.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// encodeMessages returns the encoding of ms a segment holds. Ids, roles
// and tool names must be UTF-8, which JSON text can hold exactly.
func encodeMessages(ms []pruneguard.Message) ([]byte, error) {
	rs := make([]record, len(ms))
	for i, m := range ms {
		if err := checkText(m); err != nil {
			return nil, err
		}
		rs[i] = toRecord(m)
	}
	return marshal(rs)
}

// encodeSegment returns the stored form of the n messages encoded as
// body, described by desc, under key.
func encodeSegment(key string, n int, desc string, body []byte) ([]byte, error) {
	return marshal(segment{Format: segmentFormat, Key: key, Count: n, Description: desc,
		SHA256: checksum(segmentFormat, desc, body), Messages: body})
}

// decodeSegment checks a stored segment of key and returns what it
// holds. Anything amiss is an error matching [ErrCorrupt].
func decodeSegment(key string, b []byte) (stored, error) {
	var s segment
	if err := json.Unmarshal(b, &s); err != nil {
		return stored{}, fmt.Errorf("%w: not a segment: %v", ErrCorrupt, strings.TrimPrefix(err.Error(), "json: "))
	}
	if s.Format != segmentFormat && s.Format != segmentFormat1 {
		return stored{}, fmt.Errorf("%w: segment format %q", ErrCorrupt, s.Format)
	}
	if s.Key != key {
		return stored{}, fmt.Errorf("%w: segment of key %q", ErrCorrupt, s.Key)
	}
	if checksum(s.Format, s.Description, s.Messages) != s.SHA256 {
		return stored{}, fmt.Errorf("%w: segment checksum mismatch", ErrCorrupt)
	}
	if !validDescription(s.Description) || s.Format == segmentFormat1 && s.Description != "" {
		return stored{}, fmt.Errorf("%w: segment description is not one a spiller writes", ErrCorrupt)
	}
	var rs []record
	if err := json.Unmarshal(s.Messages, &rs); err != nil {
		return stored{}, fmt.Errorf("%w: segment messages: %v", ErrCorrupt, err)
	}
	if len(rs) != s.Count || len(rs) == 0 {
		return stored{}, fmt.Errorf("%w: segment holds %d messages, says %d", ErrCorrupt, len(rs), s.Count)
	}
	ms := make([]pruneguard.Message, len(rs))
	for i, r := range rs {
		m, err := fromRecord(r)
		if err != nil {
			return stored{}, fmt.Errorf("%w: message %d: %v", ErrCorrupt, i, err)
		}
		ms[i] = m
	}
	return stored{ms: ms, body: s.Messages, desc: s.Description}, nil
}

// sameMessages reports whether recalled messages are the spilled ones:
// equal in every field a segment keeps (all but Pointer), with empty and
// nil slices alike.
func sameMessages(got, want []pruneguard.Message) bool {
	return slices.EqualFunc(got, want, func(g, w pruneguard.Message) bool {
		return g.ID == w.ID && g.Role == w.Role && g.Tokens == w.Tokens &&
			bytes.Equal(g.Content, w.Content) && g.Class == w.Class &&
			g.Facts == w.Facts && g.Pinned == w.Pinned && g.IsError == w.IsError &&
			slices.Equal(g.Answers, w.Answers) && slices.Equal(g.NeededBy, w.NeededBy) &&
			slices.Equal(g.Requires, w.Requires) &&
			slices.EqualFunc(g.Calls, w.Calls, func(a, b pruneguard.Call) bool {
				return a.ID == b.ID && a.Tool == b.Tool && bytes.Equal(a.Args, b.Args) && a.Server == b.Server
			})
	})
}

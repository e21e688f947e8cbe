package wire

import (
	"encoding/json"
	"fmt"
)

// facts is what the package knows of one message: its raw JSON, a slice
// of the body it was read from, and the structural facts the rules, the
// pairing and the guard need. Texts are kept as their raw JSON strings
// with whether they are blank; a [Message] is made from facts only when
// a caller asks for one.
type facts struct {
	raw  []byte
	role string
	typ  string // Responses item type
	id   string // Responses item id
	name string // Chat message name

	parts []fpart
	refs  []string // tools named by tool_reference blocks

	ws int32 // whitespace between the tokens of raw

	ncalls, nresults int32

	empty     bool
	reasoning bool
	server    bool // server tool calls or results
	input     bool // a Responses input given as a plain string
	failed    bool // a result reports a failed call
	joins     bool // a summary message that joins the user message before it (see provider.summaryJoins)
}

// fpart is one content part of a message.
type fpart struct {
	kind   PartKind
	signed bool
	blank  bool // a text or reasoning part whose text is only white space
	failed bool // a result (or a provider's call) that reports a failed call
	typ    string
	id     string
	name   string
	// val is the raw JSON of the text of a text or reasoning part (a
	// string, or anything else for a text that is not one), of the
	// arguments of a call, and of the error a failed result reports.
	val []byte
}

// compact is the length of the message's compact JSON.
func (f *facts) compact() int { return len(f.raw) - int(f.ws) }

// add appends a part and keeps the message's summary up to date.
func (f *facts) add(p fpart) {
	f.parts = append(f.parts, p)
	switch p.kind {
	case PartCall:
		f.ncalls++
	case PartResult:
		f.nresults++
	case PartReasoning:
		f.reasoning = true
	case PartServerCall, PartServerResult:
		f.server = true
	}
	f.failed = f.failed || p.failed
}

// errorText returns what the failed results of the message report, one
// line apart: their content's JSON.
func (f *facts) errorText() []byte {
	var out []byte
	for i := range f.parts {
		p := &f.parts[i]
		if !p.failed || len(p.val) == 0 {
			continue
		}
		if len(out) > 0 {
			out = append(out, '\n')
		}
		out = append(out, p.val...)
	}
	return out
}

// calls calls fn with each call part, in order, and its index among the
// message's calls.
func (f *facts) eachCall(fn func(k int, p *fpart)) {
	k := 0
	for i := range f.parts {
		if f.parts[i].kind == PartCall {
			fn(k, &f.parts[i])
			k++
		}
	}
}

// resultIDs returns the ids of the message's results, in order.
func (f *facts) resultIDs() []string {
	if f.nresults == 0 {
		return nil
	}
	out := make([]string, 0, f.nresults)
	for i := range f.parts {
		if f.parts[i].kind == PartResult {
			out = append(out, f.parts[i].id)
		}
	}
	return out
}

// callAt returns call part k.
func (f *facts) callAt(k int) *fpart {
	for i := range f.parts {
		if f.parts[i].kind == PartCall {
			if k == 0 {
				return &f.parts[i]
			}
			k--
		}
	}
	return nil
}

// signedCall reports a signed call part.
func (f *facts) signedCall() bool {
	for i := range f.parts {
		if f.parts[i].kind == PartCall && f.parts[i].signed {
			return true
		}
	}
	return false
}

// anySigned reports a signed part of any kind.
func (f *facts) anySigned() bool {
	for i := range f.parts {
		if f.parts[i].signed {
			return true
		}
	}
	return false
}

// prose reports text or reasoning that is not blank.
func (f *facts) prose() bool {
	for i := range f.parts {
		if k := f.parts[i].kind; (k == PartText || k == PartReasoning) && !f.parts[i].blank {
			return true
		}
	}
	return false
}

// text returns the text of the text parts that are not blank, one line
// apart: the prose of the message.
func (f *facts) text() []byte {
	var out []byte
	for i := range f.parts {
		p := &f.parts[i]
		if p.kind != PartText || p.blank {
			continue
		}
		if len(out) > 0 {
			out = append(out, '\n')
		}
		out = append(out, unquote(p.val)...)
	}
	return out
}

// message makes the exported form of the facts.
func (f *facts) message() Message {
	m := Message{
		Raw: json.RawMessage(f.raw), Role: f.role, Type: f.typ, ID: f.id, Name: f.name,
		Reasoning: f.reasoning, ServerToolUse: f.server, Empty: f.empty, IsError: f.failed,
	}
	if len(f.refs) > 0 {
		m.References = append([]string(nil), f.refs...)
	}
	if len(f.parts) == 0 {
		return m
	}
	m.Parts = make([]Part, len(f.parts))
	for i := range f.parts {
		p := &f.parts[i]
		q := Part{Kind: p.kind, Type: p.typ, ID: p.id, Name: p.name, Signed: p.signed}
		switch p.kind {
		case PartText, PartReasoning:
			q.Text = unquote(p.val)
		case PartCall:
			m.Calls = append(m.Calls, Call{ID: p.id, Name: p.name, Args: argsJSON(p.val), Signed: p.signed})
		case PartResult:
			m.Results = append(m.Results, p.id)
		}
		if p.kind == PartText {
			m.Texts = append(m.Texts, q.Text)
		}
		m.Parts[i] = q
	}
	return m
}

// ---- reading one message ------------------------------------------------------

// reader reads messages of one dialect into facts, reusing its buffers
// from one message to the next. The parts of the messages it reads are
// cut from chunks of its own, each message's at its exact size.
type reader struct {
	p      *provider // nil for a reader that only views JSON
	v      viewer
	intern map[string]string
	parts  []fpart // the parts of the message being read
	cur    facts   // the message the provider's table is reading
	chunk  []fpart // where the parts of the messages read are kept
}

// keep moves the parts of f out of the reader's buffer into a chunk.
func (r *reader) keep(f *facts) {
	n := len(f.parts)
	if n == 0 {
		f.parts = nil
		return
	}
	if cap(r.chunk)-len(r.chunk) < n {
		// Chunks grow with the messages read: a reader of one message
		// allocates for it alone, one of a long body in large chunks.
		r.chunk = make([]fpart, 0, max(n, min(2*cap(r.chunk), 1024), 8))
	}
	at := len(r.chunk)
	r.chunk = append(r.chunk, f.parts...)
	f.parts = r.chunk[at : at+n : at+n]
}

func newReader(d Dialect) *reader {
	return &reader{p: d.provider(), intern: make(map[string]string)}
}

// str decodes a checked JSON string, sharing the strings that repeat
// (roles, types, tool names).
func (r *reader) str(raw []byte) string {
	if len(raw) < 2 {
		return ""
	}
	body := raw[1 : len(raw)-1]
	if len(body) <= 40 {
		if s, ok := r.intern[string(body)]; ok {
			return s
		}
	}
	s := unquote(raw)
	if len(body) <= 40 && len(r.intern) < 4096 {
		r.intern[string(body)] = s
	}
	return s
}

// optString reads an optional string member: absent or null gives "", a
// value of another type is an error.
func (r *reader) optString(o jobj, key string) (string, error) {
	raw := o.get(key)
	if isNull(raw) {
		return "", nil
	}
	if kindOf(raw) != '"' {
		return "", fmt.Errorf("%s is %s, not a string", key, kindName(raw))
	}
	return r.str(trimSpace(raw)), nil
}

// textVal reads an optional text member: its raw value, "" for absent
// or null, an error for a value that is not a string.
func textVal(o jobj, key string) ([]byte, error) {
	raw := o.get(key)
	if isNull(raw) {
		return nil, nil
	}
	if kindOf(raw) != '"' {
		return nil, fmt.Errorf("%s is %s, not a string", key, kindName(raw))
	}
	return trimSpace(raw), nil
}

// textPart makes a text or reasoning part from a raw text value (nil for
// none, as an absent member reads).
func textPart(kind PartKind, typ string, val []byte, signed bool) fpart {
	return fpart{kind: kind, typ: typ, val: val, signed: signed, blank: blankString(val)}
}

// message reads one message (item, content turn) into facts. ws is the
// whitespace between its tokens, counted by the scanner.
func (r *reader) message(raw []byte, ws int, inputString bool) (facts, error) {
	f, err := r.read(raw, ws, inputString)
	r.parts = f.parts[:0]
	r.keep(&f)
	return f, err
}

func (r *reader) read(raw []byte, ws int, inputString bool) (facts, error) {
	r.v.reset()
	f := facts{raw: raw, ws: int32(ws), parts: r.parts[:0]}
	if inputString {
		f.role, f.typ = "user", "message"
		f.add(textPart(PartText, "input_text", trimSpace(raw), false))
		f.empty = len(trimSpace(raw)) == 2
		return f, nil
	}
	obj, ok := r.v.object(raw)
	if !ok {
		return f, errAt(here, "%s is %s, not an object", r.p.entry, kindName(raw))
	}
	// The provider reads into the reader's own facts, so that handing
	// them to its table costs no allocation.
	r.cur = f
	err := r.p.readEntry(r, &r.cur, obj)
	f, r.cur = r.cur, facts{}
	return f, err
}

func trimSpace(raw []byte) []byte {
	i := skipSpace(raw, 0)
	j := len(raw)
	for j > i {
		switch raw[j-1] {
		case ' ', '\t', '\n', '\r':
			j--
			continue
		}
		break
	}
	return raw[i:j]
}

// ---- helpers shared by the dialects ------------------------------------------

// requireRole reads the message's role, which must be a non-empty string.
func (r *reader) requireRole(f *facts, obj jobj) error {
	var err error
	if f.role, err = r.optString(obj, "role"); err != nil {
		return errAt(here, "%v", err)
	}
	if f.role == "" {
		return errAt(here, "message without role")
	}
	return nil
}

// eachObject calls fn on each element of the array a (the member key of
// the message), in order, and stops at the first error. An element that
// is not an object is an error naming it as what ("content block").
func (r *reader) eachObject(a jarr, key, what string, fn func(p at, obj jobj) error) error {
	for k := 0; k < a.len(); k++ {
		raw := a.at(k)
		obj, ok := r.v.object(raw)
		if !ok {
			return errAt(elem(key, k), "%s is %s, not an object", what, kindName(raw))
		}
		if err := fn(elem(key, k), obj); err != nil {
			return err
		}
	}
	return nil
}

// eachBlock is eachObject over the array obj[key] of a Gemini or Bedrock
// message, which may only be an array or missing (null); it sets empty.
func (r *reader) eachBlock(f *facts, obj jobj, key, what string, fn func(p at, blk jobj) error) error {
	raw := obj.get(key)
	if isNull(raw) {
		f.empty = true
		return nil
	}
	items, ok := r.v.array(raw)
	if !ok {
		return errAt(field(key), "%s is %s, not an array", key, kindName(raw))
	}
	f.empty = items.len() == 0
	return r.eachObject(items, key, what, fn)
}

// objectAt returns the object obj[key]; anything else is an error at
// p.key.
func (r *reader) objectAt(obj jobj, key string, p at) (jobj, error) {
	o, ok := r.v.object(obj.get(key))
	if !ok {
		return jobj{}, errAt(p.then("."+key), "%s is %s, not an object", key, kindName(obj.get(key)))
	}
	return o, nil
}

func (r *reader) idAndName(obj jobj, idKey string) (id, name string, err error) {
	if id, err = r.optString(obj, idKey); err != nil {
		return "", "", err
	}
	name, err = r.optString(obj, "name")
	return id, name, err
}

// strOf decodes raw when it is a string, "" otherwise.
func (r *reader) strOf(raw []byte) string {
	if kindOf(raw) != '"' {
		return ""
	}
	return r.str(trimSpace(raw))
}

// firstKey returns the alphabetically first key of obj not in skip, or
// "other"; used to name parts that are recognised only by their key.
func (r *reader) firstKey(obj jobj, skip ...string) string {
	best := ""
	obj.keys(func(k string) {
		for _, s := range skip {
			if k == s {
				return
			}
		}
		if best == "" || k < best {
			best = k
		}
	})
	if best == "" {
		return "other"
	}
	return r.intern1(best)
}

// intern1 shares a decoded string.
func (r *reader) intern1(s string) string {
	if t, ok := r.intern[s]; ok {
		return t
	}
	if len(s) <= 40 && len(r.intern) < 4096 {
		r.intern[s] = s
	}
	return s
}

// objStr returns the string member key of raw when raw is an object, ""
// otherwise.
func (r *reader) objStr(raw []byte, key string) string {
	obj, ok := r.v.object(raw)
	if !ok {
		return ""
	}
	return r.strOf(obj.get(key))
}

// isTrue reports a JSON true, space around it allowed.
func isTrue(raw []byte) bool { return string(trimSpace(raw)) == "true" }

// textContent reads the content of an OpenAI message: absent or null
// (empty), a string (one text part of type strType), or an array of
// content parts, where isText tells the text parts and gives their type.
func (r *reader) textContent(f *facts, content []byte, strType string, isText func(typ string, part jobj) (string, bool)) error {
	switch kindOf(content) {
	case 0, 'n':
		f.empty = true
	case '"':
		s := trimSpace(content)
		f.empty = len(s) == 2
		if !f.empty {
			f.add(textPart(PartText, strType, s, false))
		}
	case '[':
		parts, _ := r.v.array(content)
		f.empty = parts.len() == 0
		return r.eachObject(parts, "content", "content part", func(p at, part jobj) error {
			typ, err := r.optString(part, "type")
			if err != nil {
				return errAt(p, "%v", err)
			}
			textType, ok := isText(typ, part)
			if !ok {
				f.add(fpart{kind: PartOther, typ: typ})
				return nil
			}
			t, err := textVal(part, "text")
			if err != nil {
				return errAt(p, "%v", err)
			}
			f.add(textPart(PartText, textType, t, false))
			return nil
		})
	default:
		return errAt(field("content"), "content is %s, not a string or an array", kindName(content))
	}
	return nil
}

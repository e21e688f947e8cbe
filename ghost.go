package pruneguard

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// The ghost-tool detector. Seed 001's signature of a pruner that took a
// schema the model still needed is a triad: (1) a call rebuilt from the
// arguments of an earlier call to the same tool while the schema was not
// in the prompt, missing keys the earlier call had or keeping values of
// an older schema's shape; (2) a validation error naming a field the
// schema would have told the model about; (3) a recovery that turns to a
// sibling tool instead of asking for the schema back. The Context follows
// each tool's episode from its first leg until all three are seen or the
// model asks for the schema ([Context.RequestTool]).

const (
	// ghostWindow is how many of a tool's latest calls a rebuilt call is
	// compared with.
	ghostWindow = 8
	// ghostLogBound is how many episodes Context.Ghosts keeps.
	ghostLogBound = 64
)

// GhostEvidence is one episode of the ghost-tool triad for one tool: the
// legs seen so far, each the first of its kind in the episode. A leg not
// yet seen has its fields zero. The episode opens with its first leg
// (rebuilt or rejected) and ends when all three are seen or the model
// asks for the tool's schema back.
type GhostEvidence struct {
	Tool string

	// Leg one. Call was made while Tool's schema was withdrawn, compressed
	// with losses or tombstoned, with arguments that copy those of Copied,
	// an earlier call to Tool still in the Context: its keys are a subset
	// of Copied's, missing the keys in Missing (sorted), or the keys in
	// Stale (sorted) hold values of the same JSON kind as in Copied, which
	// was made under an older version of the schema, a kind the schema's
	// current property types no longer admit.
	Call    CallID
	Copied  CallID
	Missing []string
	Stale   []string

	// Leg two. Rejected is a call made while Tool's schema was not shown
	// whole whose result reported an error ([Message.IsError]) naming
	// Fields, properties of Tool's schema (sorted); or that the runtime
	// reported with [Context.ReportValidationError].
	Rejected CallID
	Fields   []string

	// Leg three. SiblingCall, to the sibling tool Sibling (see
	// [Siblings]), came in a later message than the episode's ghost call,
	// before the model asked for Tool's schema back.
	Sibling     string
	SiblingCall CallID

	// Reexpanded says the episode ended with the model asking for the
	// schema back ([Context.RequestTool]).
	Reexpanded bool
}

// Legs counts the legs of the triad seen.
func (e GhostEvidence) Legs() int {
	n := 0
	for _, seen := range []bool{e.Call != "", e.Rejected != "", e.SiblingCall != ""} {
		if seen {
			n++
		}
	}
	return n
}

// Triad reports whether all three legs were seen.
func (e GhostEvidence) Triad() bool { return e.Legs() == 3 }

// ghostEpisode is an episode in the making.
type ghostEpisode struct {
	ev   GhostEvidence
	tool int32
	open bool
	// from is the message of the episode's latest ghost call: a detour
	// comes in another message.
	from MessageID
}

// Ghosts returns the evidence of the last 64 ghost-tool episodes, oldest
// first, those still open included. It does not empty them.
func (c *Context) Ghosts() []GhostEvidence {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]GhostEvidence, 0, len(c.ghostLog))
	for _, ep := range c.ghostLog {
		e := ep.ev
		e.Missing, e.Stale, e.Fields = slices.Clone(e.Missing), slices.Clone(e.Stale), slices.Clone(e.Fields)
		out = append(out, e)
	}
	return out
}

// Siblings reports whether tools a and b are siblings for the ghost-tool
// detector: when both have a Family, their Families are equal; otherwise
// their names end in the same word, of names of at least two words.
// Words are split at any character that is not an ASCII letter or digit
// and where a lower-case letter meets an upper-case one, and compared
// without case: update_incident, create-incident and closeIncident are
// siblings, search and search_logs are not. A tool is not its own
// sibling.
func Siblings(a, b Tool) bool {
	if a.Name == b.Name {
		return false
	}
	if a.Family != "" && b.Family != "" {
		return a.Family == b.Family
	}
	s := lastWord(a.Name)
	return s != "" && strings.EqualFold(s, lastWord(b.Name))
}

// lastWord returns the last word of a name of two words or more.
func lastWord(name string) string {
	alnum := func(ch byte) bool {
		return ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9'
	}
	end := len(name)
	for end > 0 && !alnum(name[end-1]) {
		end--
	}
	i := end
	for i > 0 && alnum(name[i-1]) {
		if ch := name[i-1]; ch >= 'A' && ch <= 'Z' && i-2 >= 0 && name[i-2] >= 'a' && name[i-2] <= 'z' {
			i--
			break
		}
		i--
	}
	if i == end {
		return ""
	}
	for j := 0; j < i; j++ {
		if alnum(name[j]) {
			return name[i:end] // a word before it
		}
	}
	return ""
}

// JSON kinds of values, as a set.
const (
	kindObject uint8 = 1 << iota
	kindArray
	kindString
	kindNumber
	kindBool
	kindNull
)

// kindOf returns the kind of the JSON value v.
func kindOf(v []byte) uint8 {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) == 0 {
		return 0
	}
	switch v[0] {
	case '{':
		return kindObject
	case '[':
		return kindArray
	case '"':
		return kindString
	case 't', 'f':
		return kindBool
	case 'n':
		return kindNull
	}
	return kindNumber
}

// typeKinds returns the kinds a JSON Schema type keyword admits, or zero
// for any.
func typeKinds(typ json.RawMessage) uint8 {
	var names []string
	var one string
	if json.Unmarshal(typ, &one) == nil {
		names = []string{one}
	} else if json.Unmarshal(typ, &names) != nil {
		return 0
	}
	var k uint8
	for _, n := range names {
		switch n {
		case "object":
			k |= kindObject
		case "array":
			k |= kindArray
		case "string":
			k |= kindString
		case "number", "integer":
			k |= kindNumber
		case "boolean":
			k |= kindBool
		case "null":
			k |= kindNull
		}
	}
	return k
}

// schemaProps maps the properties of a schema to the kinds their type
// keyword admits (zero: any, or no type given).
// Keywords are matched exactly, as JSON Schema spells them (a struct
// field would match "Properties" too).
func schemaProps(schema json.RawMessage) map[string]uint8 {
	var s, props map[string]json.RawMessage
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil || json.Unmarshal(s["properties"], &props) != nil || len(props) == 0 {
		return nil
	}
	out := make(map[string]uint8, len(props))
	for name, p := range props {
		var t map[string]json.RawMessage
		var k uint8
		if json.Unmarshal(p, &t) == nil && t["type"] != nil {
			k = typeKinds(t["type"])
		}
		out[name] = k
	}
	return out
}

// argKinds maps the keys of a JSON object to the kinds of their values.
func argKinds(args []byte) (map[string]uint8, bool) {
	var m map[string]json.RawMessage
	if len(args) == 0 || json.Unmarshal(args, &m) != nil || m == nil {
		return nil, false
	}
	out := make(map[string]uint8, len(m))
	for k, v := range m {
		out[k] = kindOf(v)
	}
	return out, true
}

// observeCall runs for each new call k, ghost when its tool's schema was
// not shown whole: it looks for the first leg in a ghost call and for
// the third in any, then adds k to its tool's window.
func (c *Context) observeCall(k int32, ghost bool) {
	ti := c.call(k).tool
	if ghost && c.tools[ti].registered {
		c.copyLeg(ti, k)
	}
	if c.openGhosts > 0 {
		c.detourLeg(ti, k)
	}
	t := &c.tools[ti]
	t.window[t.windowAt] = k + 1
	t.windowAt = (t.windowAt + 1) % ghostWindow
}

// copyLeg looks in the window of tool ti, newest first, for an earlier
// call whose arguments ghost call k copies.
func (c *Context) copyLeg(ti, k int32) {
	now, ok := argKinds(c.args(k))
	if !ok || len(now) == 0 {
		return
	}
	t := &c.tools[ti]
	for i := 1; i <= ghostWindow; i++ {
		e := t.window[(int(t.windowAt)-i+ghostWindow)%ghostWindow]
		if e == 0 {
			continue
		}
		q := e - 1
		r := c.call(q)
		if q == k || r.tool != ti || r.flags&cArgsMade == 0 {
			continue
		}
		prior, ok := argKinds(c.args(q))
		if !ok {
			continue
		}
		var missing, stale []string
		subset := true
		for key, kind := range now {
			pk, in := prior[key]
			if !in {
				subset = false
				break
			}
			if want := t.props[key]; r.ver < t.ver && want != 0 && kind == pk && kind&want == 0 {
				stale = append(stale, key)
			}
		}
		if !subset {
			continue
		}
		for key := range prior {
			if _, in := now[key]; !in {
				missing = append(missing, key)
			}
		}
		if len(missing) == 0 && len(stale) == 0 {
			continue
		}
		slices.Sort(missing)
		slices.Sort(stale)
		t.ghostCopies++
		ep := c.episode(ti)
		ep.from = c.id(c.call(k).caller)
		if ep.ev.Call == "" {
			ep.ev.Call, ep.ev.Copied = CallID(c.callID(k)), CallID(c.callID(q))
			ep.ev.Missing, ep.ev.Stale = missing, stale
		}
		c.settle(ep)
		return
	}
}

// detourLeg records call k as a detour of every open episode of a
// sibling tool, when it comes in a later message than the episode's
// ghost call.
func (c *Context) detourLeg(ti, k int32) {
	var from MessageID
	for _, ep := range c.ghostLog {
		if !ep.open || ep.tool == ti || !Siblings(c.tools[ep.tool].t, c.tools[ti].t) {
			continue
		}
		if from == "" {
			from = c.id(c.call(k).caller)
		}
		if ep.from == from {
			continue
		}
		c.tools[ep.tool].ghostDetours++
		if ep.ev.SiblingCall == "" {
			ep.ev.Sibling, ep.ev.SiblingCall = c.tools[ti].t.Name, CallID(c.callID(k))
		}
		c.settle(ep)
	}
}

// rejected reads result p, once closed, for the second leg: an error
// reported for a ghost call that names fields of the tool's schema.
func (c *Context) rejected(p int32) {
	if s := c.sideOf(p); s == nil || !s.isError {
		return
	}
	for k := range c.answersOf(p) {
		r := c.call(k)
		if r.flags&cGhost == 0 {
			continue
		}
		if fields := errorFields(c.tools[r.tool].props, c.content(p)); len(fields) > 0 {
			c.rejectLeg(k, fields)
		}
	}
}

// rejectLeg records the second leg for ghost call k.
func (c *Context) rejectLeg(k int32, fields []string) {
	r := c.call(k)
	c.tools[r.tool].ghostRejections++
	ep := c.episode(r.tool)
	if r.caller != none {
		ep.from = c.id(r.caller)
	}
	if ep.ev.Rejected == "" {
		ep.ev.Rejected, ep.ev.Fields = CallID(c.callID(k)), fields
	}
	c.settle(ep)
}

// errorFields returns the properties of props that text names, as words
// of their own (not inside a longer name), sorted.
func errorFields(props map[string]uint8, text []byte) []string {
	var out []string
	word := func(ch byte) bool {
		return ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '-'
	}
	for name := range props {
		if name == "" {
			continue
		}
		for i := 0; i < len(text); {
			j := bytes.Index(text[i:], []byte(name))
			if j < 0 {
				break
			}
			j += i
			end := j + len(name)
			if (j == 0 || !word(text[j-1])) && (end == len(text) || !word(text[end])) {
				out = append(out, name)
				break
			}
			i = j + 1
		}
	}
	slices.Sort(out)
	return out
}

// ReportValidationError records that the runtime rejected call id for
// the fields given, as a validation error would name them. When the call
// was made while its tool's schema was not shown whole, it is the second
// leg of the ghost-tool triad (see [GhostEvidence]); otherwise, or with
// no fields, it changes nothing. It fails with [ErrUnknownCall] when id
// names no call the Context holds: no call was made with it, or the
// latest call made with it was pruned (an earlier call with the id that
// is still held is not the one rejected).
func (c *Context) ReportValidationError(id CallID, fields ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	k, ok := c.byCall.Find(string(id))
	if !ok {
		return inputErr("report validation error", string(id), ErrUnknownCall)
	}
	fs := slices.Compact(slices.Sorted(slices.Values(fields)))
	fs = slices.DeleteFunc(fs, func(f string) bool { return f == "" })
	if c.call(k).flags&cGhost != 0 && len(fs) > 0 {
		c.rejectLeg(k, fs)
	}
	return nil
}

// episode returns the open episode of tool ti, opening one.
func (c *Context) episode(ti int32) *ghostEpisode {
	t := &c.tools[ti]
	if t.ep != nil {
		return t.ep
	}
	ep := &ghostEpisode{ev: GhostEvidence{Tool: t.t.Name}, tool: ti, open: true}
	if len(c.ghostLog) == ghostLogBound {
		if old := c.ghostLog[0]; old.open {
			c.endEpisode(old)
		}
		c.ghostLog = slices.Delete(c.ghostLog, 0, 1)
	}
	c.ghostLog = append(c.ghostLog, ep)
	t.ep = ep
	c.openGhosts++
	return ep
}

// settle ends an episode whose three legs are seen.
func (c *Context) settle(ep *ghostEpisode) {
	if ep.open && ep.ev.Triad() {
		c.tools[ep.tool].ghostTriads++
		c.endEpisode(ep)
	}
}

func (c *Context) endEpisode(ep *ghostEpisode) {
	ep.open = false
	c.tools[ep.tool].ep = nil
	c.openGhosts--
}

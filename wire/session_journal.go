package wire

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/pruneguard/pruneguard"
)

// A session's journal is what it was given since its history began (its
// last reset), in order: the messages as provider JSON, byte for byte,
// and as events, the streams, the calls abandoned, the request's other
// fields; and what the guard's decisions did to the history (evictions,
// stubs, schemas withdrawn or compressed, tombstones, pointers,
// summaries). It is the part of the saved state (see [Session.Save]) that
// rebuilds the session's own bookkeeping: [RestoreSession] replays it
// through the paths that built it, so that the entries, slots, pairing,
// pointer lines and the bytes a later Sync compares come back as they
// were. It grows with what was fed and decided, never with requests that
// decide nothing.

// The kinds of journal entries, as saved.
const (
	jAppend   = "append"   // Session.Append: Raw, the message as given
	jSync     = "sync"     // a message of a synced body: Raw as read; Span, the body's bytes, when they differ
	jEvent    = "event"    // Session.AppendMessage: Event
	jOpen     = "open"     // Session.Open: Role, Calls (the answers)
	jText     = "text"     // Session.WriteText: ID, Raw (the delta)
	jCall     = "call"     // Session.WriteCall: ID, Call, Name, Raw (the delta)
	jClose    = "close"    // Session.Close: ID
	jAbandon  = "abandon"  // Session.Abandon: Calls
	jTop      = "top"      // the request's other fields: Fields
	jDecision = "decision" // a decision carried out on the history: Decision
	jRestore  = "restore"  // a tool's schema brought back whole: Name
	jFold     = "fold"     // the pointer lines folded into a segment: Pointer
	jLine     = "line"     // a pointer line written shorter: Pointer, Raw (its text)
)

// jop is one entry of the journal, as it is kept and saved.
type jop struct {
	Op       string               `json:"op"`
	ID       pruneguard.MessageID `json:"id,omitempty"`
	Role     pruneguard.Role      `json:"role,omitempty"`
	Call     pruneguard.CallID    `json:"call,omitempty"`
	Name     string               `json:"name,omitempty"`
	Calls    []pruneguard.CallID  `json:"calls,omitempty"`
	Raw      []byte               `json:"raw,omitempty"`
	Span     []byte               `json:"span,omitempty"`
	Event    *jevent              `json:"event,omitempty"`
	Fields   []jfield             `json:"fields,omitempty"`
	Decision *jdecision           `json:"decision,omitempty"`
	Pointer  *jpointer            `json:"pointer,omitempty"`
}

// jevent is a message given as a pruneguard event.
type jevent struct {
	ID       pruneguard.MessageID `json:"id,omitempty"`
	Role     pruneguard.Role      `json:"role,omitempty"`
	Tokens   int                  `json:"tokens,omitempty"`
	Content  []byte               `json:"content,omitempty"`
	NoText   bool                 `json:"nilContent,omitempty"` // Content was nil, not empty
	Calls    []jcall              `json:"calls,omitempty"`
	Answers  []pruneguard.CallID  `json:"answers,omitempty"`
	Pinned   bool                 `json:"pinned,omitempty"`
	Class    pruneguard.Class     `json:"class,omitempty"`
	Facts    pruneguard.Facts     `json:"facts,omitempty"`
	Pointer  *jpointer            `json:"pointer,omitempty"`
	NeededBy []pruneguard.StepID  `json:"neededBy,omitempty"`
}

// jcall is a call of an event message.
type jcall struct {
	ID     pruneguard.CallID `json:"id,omitempty"`
	Tool   string            `json:"tool,omitempty"`
	Args   []byte            `json:"args,omitempty"`
	Server bool              `json:"server,omitempty"`
}

// jpointer is a spill pointer.
type jpointer struct {
	Store string `json:"store,omitempty"`
	Key   string `json:"key,omitempty"`
}

// jfield is one top-level field of the request, in order.
type jfield struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// jdecision is what a decision carried out on the session's history: the
// parts of a pruneguard.Decision that [Session.record] reads.
type jdecision struct {
	Evict       []pruneguard.MessageID `json:"evict,omitempty"`
	Stub        []pruneguard.MessageID `json:"stub,omitempty"`
	DropSchemas []string               `json:"dropSchemas,omitempty"`
	Compress    []jfield               `json:"compress,omitempty"` // tool and schema
	Tombstones  []jtomb                `json:"tombstones,omitempty"`
	Retire      []string               `json:"retire,omitempty"`
	Pointers    []jnote                `json:"pointers,omitempty"`
	Summary     *jsummary              `json:"summary,omitempty"`
}

type jtomb struct {
	Tool string `json:"tool"`
	Text string `json:"text"`
}

type jnote struct {
	Message pruneguard.MessageID `json:"message"`
	Store   string               `json:"store,omitempty"`
	Key     string               `json:"key,omitempty"`
}

type jsummary struct {
	ID   pruneguard.MessageID `json:"id"`
	Text string               `json:"text"`
}

// journal appends an entry to the journal.
func (s *Session) journal(op jop) {
	s.jr = append(s.jr, op)
}

// journalTop records the request's other fields as they now stand.
func (s *Session) journalTop() {
	fs := make([]jfield, len(s.top.keys))
	for i, k := range s.top.keys {
		fs[i] = jfield{Key: k, Value: s.top.vals[k]}
	}
	s.journal(jop{Op: jTop, Fields: fs})
}

// journalSynced records a message of a synced body: raw as read, and the
// body's bytes it stands for when they differ (a Responses input given
// as a plain string).
func (s *Session) journalSynced(raw, span []byte) {
	op := jop{Op: jSync, Raw: raw}
	if !bytes.Equal(raw, span) {
		op.Span = bytes.Clone(span)
	}
	s.journal(op)
}

// journalEvent records a message given as an event, copied.
func (s *Session) journalEvent(m pruneguard.Message) {
	ev := &jevent{ID: m.ID, Role: m.Role, Tokens: m.Tokens, Content: bytes.Clone(m.Content), NoText: m.Content == nil,
		Answers: slices.Clone(m.Answers), Pinned: m.Pinned, Class: m.Class, Facts: m.Facts, NeededBy: slices.Clone(m.NeededBy)}
	if !m.Pointer.IsZero() {
		ev.Pointer = &jpointer{Store: m.Pointer.Store, Key: m.Pointer.Key}
	}
	for _, c := range m.Calls {
		ev.Calls = append(ev.Calls, jcall{ID: c.ID, Tool: c.Tool, Args: bytes.Clone(c.Args), Server: c.Server})
	}
	s.journal(jop{Op: jEvent, Event: ev})
}

// message is the event as it was given.
func (ev *jevent) message() pruneguard.Message {
	m := pruneguard.Message{ID: ev.ID, Role: ev.Role, Tokens: ev.Tokens, Content: ev.Content, Answers: ev.Answers,
		Pinned: ev.Pinned, Class: ev.Class, Facts: ev.Facts, NeededBy: ev.NeededBy}
	if m.Content == nil && !ev.NoText {
		m.Content = []byte{}
	}
	if ev.Pointer != nil {
		m.Pointer = pruneguard.Pointer{Store: ev.Pointer.Store, Key: ev.Pointer.Key}
	}
	for _, c := range ev.Calls {
		m.Calls = append(m.Calls, pruneguard.Call{ID: c.ID, Tool: c.Tool, Args: json.RawMessage(c.Args), Server: c.Server})
	}
	return m
}

// journalDecision records what decision d carries out on the history.
func (s *Session) journalDecision(d *pruneguard.Decision) {
	jd := &jdecision{Evict: slices.Clone(d.Evict), Stub: slices.Clone(d.Stub), DropSchemas: slices.Clone(d.DropSchemas), Retire: slices.Clone(d.Retire)}
	for _, c := range d.Compress {
		jd.Compress = append(jd.Compress, jfield{Key: c.Tool, Value: bytes.Clone(c.Schema)})
	}
	for _, t := range d.Tombstones {
		jd.Tombstones = append(jd.Tombstones, jtomb{Tool: t.Tool, Text: t.Text})
	}
	for _, n := range d.Pointers {
		jd.Pointers = append(jd.Pointers, jnote{Message: n.Message, Store: n.Pointer.Store, Key: n.Pointer.Key})
	}
	if d.Summary != nil {
		jd.Summary = &jsummary{ID: d.Summary.ID, Text: d.Summary.Text}
	}
	s.journal(jop{Op: jDecision, Decision: jd})
}

// decision is the decision as the session's record reads it.
func (jd *jdecision) decision() *pruneguard.Decision {
	d := &pruneguard.Decision{Evict: jd.Evict, Stub: jd.Stub, DropSchemas: jd.DropSchemas, Retire: jd.Retire}
	for _, c := range jd.Compress {
		d.Compress = append(d.Compress, pruneguard.CompressedSchema{Tool: c.Key, Schema: json.RawMessage(c.Value)})
	}
	for _, t := range jd.Tombstones {
		d.Tombstones = append(d.Tombstones, pruneguard.Tombstone{Tool: t.Tool, Text: t.Text})
	}
	for _, n := range jd.Pointers {
		d.Pointers = append(d.Pointers, pruneguard.SpillNote{Message: n.Message, Pointer: pruneguard.Pointer{Store: n.Store, Key: n.Key}})
	}
	if jd.Summary != nil {
		d.Summary = &pruneguard.Summary{ID: jd.Summary.ID, Text: jd.Summary.Text}
	}
	return d
}

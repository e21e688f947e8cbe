package pruneguard

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/pruneguard/pruneguard/internal/schemadiff"
)

// The invariant checker. It reads only a Context's public state (captured
// in a [state]) plus what the test itself recorded about the messages in a
// [invRecord], and returns an error naming every invariant broken. Each
// broken invariant carries the kind of guarantee it belongs to, so that a
// test can tell which gate let it through.

// invKind names the family of an invariant.
type invKind string

const (
	kindBoundary invKind = "boundary" // seed 000: commit boundary, whole units
	kindUnread   invKind = "unread"   // seed 000: what the model has not read is in flight
	kindSchema   invKind = "schema"   // seed 001: evict-or-tombstone
	kindRegen    invKind = "regen"    // seed 002: regenerability
	kindModel    invKind = "model"    // the Context disagrees with the reference model
)

type invariantError struct {
	Kind invKind
	Msg  string
}

func (e *invariantError) Error() string { return string(e.Kind) + ": " + e.Msg }

// invariantErrors is every invariant a state broke.
type invariantErrors []*invariantError

func (es invariantErrors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

func (es invariantErrors) has(k invKind) bool {
	return slices.ContainsFunc(es, func(e *invariantError) bool { return e.Kind == k })
}

func (es *invariantErrors) add(k invKind, format string, args ...any) {
	*es = append(*es, &invariantError{Kind: k, Msg: fmt.Sprintf(format, args...)})
}

func (es invariantErrors) err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// kindsOf returns the invariant kinds an error of the checker holds.
func kindsOf(err error) []invKind {
	var es invariantErrors
	if !errors.As(err, &es) {
		var e *invariantError
		if errors.As(err, &e) {
			return []invKind{e.Kind}
		}
		return nil
	}
	var out []invKind
	for _, e := range es {
		if !slices.Contains(out, e.Kind) {
			out = append(out, e.Kind)
		}
	}
	return out
}

// state is a Context's public state at one moment.
type state struct {
	Messages []Message
	Units    []Unit
	Pending  []CallID
	Open     []MessageID
	Tools    []ToolState
	Tokens   int
	Entries  []Entry
	Ghosts   []GhostEvidence
	Unsound  []string
	Unread   []MessageID
}

func capture(c *Context) state {
	return state{
		Messages: c.Messages(),
		Units:    c.Units(),
		Pending:  c.Pending(),
		Open:     c.OpenMessages(),
		Tools:    c.Tools(),
		Tokens:   c.Tokens(),
		Entries:  c.Snapshot(),
		Ghosts:   c.Ghosts(),
		Unsound:  c.Unsound(),
		Unread:   c.Unread(),
	}
}

// diffState reports how two captured states differ, or nil.
func diffState(a, b state) error {
	switch {
	case !reflect.DeepEqual(a.Messages, b.Messages):
		return fmt.Errorf("messages changed:\n%v\n%v", a.Messages, b.Messages)
	case !reflect.DeepEqual(a.Units, b.Units):
		return fmt.Errorf("units changed:\n%v\n%v", a.Units, b.Units)
	case !reflect.DeepEqual(a.Pending, b.Pending):
		return fmt.Errorf("pending changed: %v -> %v", a.Pending, b.Pending)
	case !reflect.DeepEqual(a.Open, b.Open):
		return fmt.Errorf("open messages changed: %v -> %v", a.Open, b.Open)
	case !reflect.DeepEqual(a.Tools, b.Tools):
		return fmt.Errorf("tools changed:\n%+v\n%+v", a.Tools, b.Tools)
	case a.Tokens != b.Tokens:
		return fmt.Errorf("tokens changed: %d -> %d", a.Tokens, b.Tokens)
	case !reflect.DeepEqual(a.Entries, b.Entries):
		return fmt.Errorf("snapshot changed:\n%v\n%v", a.Entries, b.Entries)
	case !reflect.DeepEqual(a.Unread, b.Unread):
		return fmt.Errorf("unread changed: %v -> %v", a.Unread, b.Unread)
	}
	return nil
}

func (s state) message(id MessageID) (Message, bool) {
	for _, m := range s.Messages {
		if m.ID == id {
			return m, true
		}
	}
	return Message{}, false
}

func (s state) tool(name string) (ToolState, bool) {
	for _, t := range s.Tools {
		if t.Tool.Name == name {
			return t, true
		}
	}
	return ToolState{}, false
}

// callKey names one call: the message that emitted it and its id (ids may
// be reused once answered).
type callKey struct {
	Caller MessageID
	ID     CallID
}

// invRecord is what a test knows about a Context beyond its public state. It
// is kept by the test from the events it sent, never read from the
// Context.
type invRecord struct {
	Cfg Config
	// Facts, Class and Pointer are the facts, explicit class and spill
	// pointer the test gave each message.
	Facts   map[MessageID]Facts
	Class   map[MessageID]Class
	Pointer map[MessageID]Pointer
	// Live says whether a pointer resolves (the test's resolver).
	Live func(Pointer) bool
	// Refs counts the planned steps naming each message.
	Refs   map[MessageID]int
	Sealed bool
	// Tools holds the registered tools as last registered.
	Tools map[string]Tool
	// CallerOf maps a result and the call id it answers to the caller.
	CallerOf map[callKey]MessageID // key: result message, call id
	// ResultOf maps a call to the message carrying its result.
	ResultOf map[callKey]MessageID // key: caller message, call id
	// CallTool maps a call to the tool it called.
	CallTool map[callKey]string
	// Calls lists every call made, in the order made, pruned or not.
	Calls []callKey
	// Abandoned holds the calls the test abandoned.
	Abandoned map[callKey]bool
	// Stored returns what a pointer holds for a message, if anything.
	Stored func(Pointer, MessageID) ([]byte, bool)
	// Original holds each message's content as the runtime gave it, before
	// any stub.
	Original map[MessageID][]byte
	// Unit maps each message to a representative of its unit, as the
	// test computes it (calls, results, batches, couplings).
	Unit func(MessageID) MessageID
	// Requires maps a message to the tools whose schema it requires,
	// while its content is its own (a stub drops the requirement).
	Requires map[MessageID][]string
	// Seq numbers the messages in the order the test sent them; ReadTo
	// is the number after the model's last message (of role assistant
	// or reasoning): the messages numbered from there on are unread.
	Seq    map[MessageID]int
	ReadTo int
}

// unread reports whether the model has not read message id yet.
func (r *invRecord) unread(id MessageID) bool {
	seq, ok := r.Seq[id]
	return ok && seq >= r.ReadTo
}

// class computes the regenerability class of message m from what the test
// recorded, independently of the Context's classification: facts first,
// then the explicit class, then the derivation from the calls the message
// answers and emits and from its text.
func (r *invRecord) class(m Message) Class {
	if r.Facts[m.ID] != 0 {
		return Irreducible
	}
	if k := r.Class[m.ID]; k != ClassUnset {
		return min(k, Irreducible)
	}
	k := ClassUnset
	for _, id := range m.Answers {
		k = max(k, r.callClass(callKey{r.CallerOf[callKey{m.ID, id}], id}))
	}
	for _, c := range m.Calls {
		k = max(k, r.callClass(callKey{m.ID, c.ID}))
	}
	// Text a person or the model wrote: no answers, and Content or no calls.
	if len(m.Answers) == 0 && (len(m.Content) > 0 || len(m.Calls) == 0) {
		text := r.Cfg.TextClass
		if text == ClassUnset {
			text = Irreducible
		}
		k = max(k, min(text, Irreducible))
	}
	return k
}

func (r *invRecord) toolOfCall(caller MessageID, id CallID) string {
	return r.CallTool[callKey{caller, id}]
}

// callClass is the class of the results of one call: its tool's output
// class, irreducible for a read-only tool once a mutating call of an
// overlapping scope was made after its batch began.
func (r *invRecord) callClass(k callKey) Class {
	t := r.Tools[r.CallTool[k]]
	cls := min(r.outputClass(r.CallTool[k]), Irreducible)
	if cls != Reconstructible || !readOnly(t) {
		return cls
	}
	// Made at or after the first call of k's batch: after k, beside it, or
	// while its message still streamed and took calls.
	first := slices.IndexFunc(r.Calls, func(o callKey) bool { return o.Caller == k.Caller })
	for i, o := range r.Calls {
		if i < first || o == k {
			continue
		}
		u := r.Tools[r.CallTool[o]]
		if !readOnly(u) && (u.Scope == "" || t.Scope == "" || u.Scope == t.Scope) {
			return Irreducible
		}
	}
	return cls
}

// outputClass re-derives a tool's output class from its MCP annotations
// with the spec's defaults: read-only false, open world true. Only a
// read-only, closed-world tool is pure.
func (r *invRecord) outputClass(name string) Class {
	t := r.Tools[name]
	if t.Output != ClassUnset {
		return t.Output
	}
	a := t.Annotations
	ro := a.ReadOnlyHint != nil && *a.ReadOnlyHint
	open := a.OpenWorldHint == nil || *a.OpenWorldHint
	if ro && !open {
		return Reconstructible
	}
	return Irreducible
}

// regenSafe says whether message m may leave the prompt (be evicted or
// stubbed): no pending planned step names it, and it is reconstructible,
// spilled behind a resolvable pointer, or outside every step of a sealed
// plan.
func (r *invRecord) regenSafe(m Message) (bool, string) {
	if r.Refs[m.ID] > 0 {
		return false, "referenced by a planned step"
	}
	if r.Sealed {
		return true, ""
	}
	k := r.class(m)
	if k == Reconstructible {
		return true, ""
	}
	p := r.Pointer[m.ID]
	if p != (Pointer{}) && r.Cfg.Resolver != nil && r.Live != nil && r.Live(p) {
		// The pointer must lead to the message's content: what it holds now,
		// or what it held before a stub replaced it.
		if r.Stored == nil {
			return true, ""
		}
		if b, ok := r.Stored(p, m.ID); ok && (bytes.Equal(b, m.Content) || bytes.Equal(b, r.Original[m.ID])) {
			return true, ""
		}
		return false, fmt.Sprintf("class %s, pointer %v resolves but does not hold the content of %s", k, p, m.ID)
	}
	return false, fmt.Sprintf("class %s, facts %b, pointer %v unresolvable", k, r.Facts[m.ID], p)
}

// readOnly reports the readOnlyHint of a tool with its default (false).
func readOnly(t Tool) bool { return t.Annotations.ReadOnlyHint != nil && *t.Annotations.ReadOnlyHint }

// schemaShown says whether the prompt carries a schema for the tool that
// keeps every structural constraint of its registered schema.
func schemaShown(t ToolState) bool {
	if !t.Resident {
		return false
	}
	if t.Compressed == nil {
		return true
	}
	losses, err := schemadiff.Compare(t.Tool.Schema, t.Compressed)
	return err == nil && len(losses) == 0
}

// ghost says whether a tool with calls in the prompt has neither its
// schema nor a tombstone, where the configuration requires one.
func (r *invRecord) ghost(t ToolState) bool {
	if t.Tombstoned || schemaShown(t) {
		return false
	}
	noTomb := r.Cfg.NoTombstones || t.Tool.NoTombstone
	return !(noTomb && readOnly(t.Tool))
}

// checkPrune checks the invariants that must hold after an applied
// prune: pre is the state just before Apply, post just after.
func checkPrune(pre, post state, r *invRecord) error {
	var es invariantErrors
	postMsg := make(map[MessageID]Message, len(post.Messages))
	for _, m := range post.Messages {
		postMsg[m.ID] = m
	}
	preMsg := make(map[MessageID]Message, len(pre.Messages))
	for _, m := range pre.Messages {
		preMsg[m.ID] = m
	}
	pending := make(map[CallID]bool, len(post.Pending))
	for _, id := range post.Pending {
		pending[id] = true
	}

	// Boundary: results keep their calls; calls keep their results.
	for _, m := range post.Messages {
		for _, id := range m.Answers {
			caller, ok := r.CallerOf[callKey{m.ID, id}]
			if _, present := postMsg[caller]; !ok || !present {
				es.add(kindBoundary, "result %s answers call %s whose call message %s is gone", m.ID, id, caller)
			}
		}
		for _, k := range m.Calls {
			if pending[k.ID] || k.Server || r.Abandoned[callKey{m.ID, k.ID}] {
				continue
			}
			res, ok := r.ResultOf[callKey{m.ID, k.ID}]
			if _, present := postMsg[res]; !ok || !present {
				es.add(kindBoundary, "call %s of %s is neither pending nor answered in the context (result %q)", k.ID, m.ID, res)
			}
		}
	}
	// Boundary: open and pinned messages untouched.
	for _, id := range pre.Open {
		m, ok := postMsg[id]
		if !ok {
			es.add(kindBoundary, "open message %s was removed", id)
		} else if !reflect.DeepEqual(m, preMsg[id]) {
			es.add(kindBoundary, "open message %s was changed", id)
		}
	}
	for _, m := range pre.Messages {
		if !m.Pinned {
			continue
		}
		if n, ok := postMsg[m.ID]; !ok || !bytes.Equal(n.Content, m.Content) {
			es.add(kindBoundary, "pinned message %s was removed or stubbed", m.ID)
		}
	}
	// Boundary: no in-flight call evicted.
	for _, id := range pre.Pending {
		found := false
		for _, m := range post.Messages {
			if slices.ContainsFunc(m.Calls, func(k Call) bool { return k.ID == id }) {
				found = true
				break
			}
		}
		if !found {
			es.add(kindBoundary, "pending call %s was evicted", id)
		}
	}
	// Boundary: every unit (as the test computes units) whole or gone.
	groups := make(map[MessageID][]MessageID)
	var order []MessageID
	for _, m := range pre.Messages {
		rep := r.Unit(m.ID)
		if _, ok := groups[rep]; !ok {
			order = append(order, rep)
		}
		groups[rep] = append(groups[rep], m.ID)
	}
	for _, rep := range order {
		in, out := 0, 0
		for _, id := range groups[rep] {
			if _, ok := postMsg[id]; ok {
				in++
			} else {
				out++
			}
		}
		if in > 0 && out > 0 {
			es.add(kindBoundary, "unit %v was cut: %d members kept, %d evicted", groups[rep], in, out)
		}
	}
	// Boundary and regen: whatever left the prompt, or lost its content.
	for _, m := range pre.Messages {
		n, kept := postMsg[m.ID]
		if kept && bytes.Equal(n.Content, m.Content) {
			continue
		}
		if r.unread(m.ID) {
			verb := "evicted"
			if kept {
				verb = "stubbed"
			}
			es.add(kindUnread, "message %s, which came after the model's last message, was %s", m.ID, verb)
		}
		if kept && len(m.Answers) == 0 {
			es.add(kindBoundary, "message %s changed but is not a tool result", m.ID)
		}
		if ok, why := r.regenSafe(m); !ok {
			verb := "evicted"
			if kept {
				verb = "stubbed"
			}
			es.add(kindRegen, "irreducible message %s %s: %s", m.ID, verb, why)
		}
	}
	// Schema, per tool: after every applied decision, every surviving
	// argument has its schema or a tombstone, however it came to stand
	// behind none (a plan's edit, or a call the model made to a tool whose
	// schema had left), and every surviving message that requires a
	// schema has it whole. A decision made before such a state arose is
	// stale, so no applied decision may leave one. A call the provider ran
	// is no argument residency.
	calls := make(map[string][]CallID)
	for _, m := range post.Messages {
		for _, k := range m.Calls {
			if !k.Server {
				calls[k.Tool] = append(calls[k.Tool], k.ID)
			}
		}
	}
	for _, t := range post.Tools {
		name := t.Tool.Name
		if len(calls[name]) == 0 || !r.ghost(t) {
			continue
		}
		es.add(kindSchema, "tool %s: calls %v survive, schema resident=%v compressed=%s tombstoned=%v",
			name, calls[name], t.Resident, t.Compressed, t.Tombstoned)
	}
	for _, m := range post.Messages {
		for _, name := range r.Requires[m.ID] {
			if t, ok := post.tool(name); ok && !schemaShown(t) {
				es.add(kindSchema, "message %s requires tool %s, whose schema is not shown (resident=%v compressed=%s)",
					m.ID, name, t.Resident, t.Compressed)
			}
		}
	}
	return es.err()
}

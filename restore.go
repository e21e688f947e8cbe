package pruneguard

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"reflect"
)

// Restore rebuilds a Context from the state [Context.Save] wrote, so
// that it makes the same decisions as the Context saved: the same
// [Context.Snapshot], [Context.Messages], [Context.Tools] and
// [Context.Refusals], the same message and call ids, and, for the same
// plan and the same events after, the same [Decision]; its guards go on
// as the original's would, with the same compaction ids. It reads the
// states of version 1, which earlier releases wrote, too (their
// summaries carry no facts of their runs: those releases did not save
// them); a restored Context saves version 2.
//
// The Config is the saved one, but for its Oracle, Resolver, Counter,
// SummaryCounter and Text, which are functions and are taken from cfg;
// cfg's other fields are not used. The refusals the guards remember
// hold as they did: call [Context.ForgetRefusals] when the Oracle or the
// Resolver given answers otherwise than the original's did. When cfg.Resolver is a [Verifier]
// (as spill.Spiller is), Restore verifies each distinct pointer the
// state holds that it does not resolve yet, so that later prunes, which
// ask the Resolver from memory, resolve those that lead to their
// content. A pointer that does not resolve is kept, and counts for no
// prune, as always.
//
// Restore rebuilds the Context by replaying the state through the paths
// events take (appends, closes, couplings, abandons, registrations),
// then takes what no event says (what the prompt shows of each tool,
// stubs, counters, memory). State that Save did not write, that was
// truncated or altered since (its digest does not match), or that does
// not hold together (a Context rebuilt from it would not save it) fails
// with an [*InputError] matching [ErrBadState] and [ErrInvalidInput],
// naming the part of the state at fault; an error reading r is returned
// as it is. On error it returns no Context.
//
// Restore reads r to its end; its other I/O is the Verifier's. It
// verifies with context.Background(); use [RestoreContext] to bound the
// verification.
func Restore(r io.Reader, cfg Config) (*Context, error) {
	return RestoreContext(context.Background(), r, cfg)
}

// RestoreContext is [Restore] with a context for the verification of
// pointers: each Verify is called with ctx, before the Context is
// returned, so no lock of it is held. A pointer whose Verify fails does
// not resolve (unless the Verifier knew it already). When ctx is done
// before every pointer is verified, RestoreContext returns ctx's error
// and no Context.
func RestoreContext(ctx context.Context, r io.Reader, cfg Config) (*Context, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	s, err := readState(b)
	if err != nil {
		return nil, err
	}
	c, err := s.build(cfg)
	if err != nil {
		return nil, err
	}
	if v, ok := cfg.Resolver.(Verifier); ok {
		if err := s.verify(ctx, v); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// readState checks the digest of b and reads the state it holds, of
// either version, in the form of version 2.
func readState(b []byte) (*savedState, error) {
	b, ok := unsealState(b)
	if !ok {
		return nil, badState("sha256", "")
	}
	s := new(savedState)
	err := strict(b, s)
	if err == nil && s.Format == stateFormat && s.Version == stateVersion {
		return s, nil
	}
	var head struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, badStateBecause("", "", err)
	}
	if head.Format != stateFormat {
		return nil, badState("format", head.Format)
	}
	switch head.Version {
	case 1:
		return upgradeV1(b)
	case stateVersion:
		return nil, badStateBecause("", "", err)
	}
	return nil, badState("version", "")
}

// verify asks v to verify each distinct pointer of s's messages it does
// not resolve yet; it fails only when ctx is done.
func (s *savedState) verify(ctx context.Context, v Verifier) error {
	seen := make(map[Pointer]bool)
	for _, m := range s.Messages {
		if m.Pointer == nil {
			continue
		}
		p := Pointer{Store: string(m.Pointer.Store), Key: string(m.Pointer.Key)}
		if seen[p] || v.Resolvable(p) {
			continue
		}
		seen[p] = true
		if err := ctx.Err(); err != nil {
			return err
		}
		if v.Verify(ctx, p) != nil {
			// The pointer stays unresolved, unless the context ended.
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// restorer rebuilds a Context from a saved state, a step at a time.
type restorer struct {
	s   *savedState
	c   *Context
	cfg Config // the Config the Context ends with
	// late maps the messages the closes name to their close.
	late map[str]*savedClose
	// tools maps the names of the tools to their saved form.
	tools map[str]*savedTool
}

// build makes the Context s describes: it replays the events that make
// it, takes what they do not say, and checks that the Context saves s.
func (s *savedState) build(fns Config) (*Context, error) {
	sc := s.Config
	cfg := Config{
		Boundary: BoundaryMode(sc.Boundary), Regen: RegenMode(sc.Regen), TextClass: Class(sc.TextClass),
		NoTombstones: sc.NoTombstones, Ceiling: sc.Ceiling, HoardTokens: sc.HoardTokens,
		StubText: string(sc.StubText), StubTokens: sc.StubTokens, PointerTokens: sc.PointerTokens,
	}
	if err := cfg.Validate(); err != nil {
		return nil, badStateBecause("config", "", err)
	}
	// The replay counts nothing, asks nobody and judges no hoarding: the
	// state has the counts, and the Context is judged once it is whole.
	replay := cfg
	replay.HoardTokens = 0
	cfg.Oracle, cfg.Resolver, cfg.Counter, cfg.Text = fns.Oracle, fns.Resolver, fns.Counter, fns.Text
	cfg.SummaryCounter = fns.SummaryCounter
	b := &restorer{s: s, c: NewContext(replay), cfg: cfg}
	b.reserve()
	for _, step := range []func() error{
		b.registry, b.messages, b.couplings, b.steps, b.marks, b.toolStates, b.mutations, b.readThrough, b.finish, b.memory,
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	b.c.mem.checks.Store(s.Checks)
	if part, id := diffStates(s, b.c.state()); part != "" {
		return nil, badStateBecause(part, id, "a Context made from it saves otherwise")
	}
	return b.c, nil
}

// reserve sizes the Context's indexes for what the state holds.
func (b *restorer) reserve() {
	calls := 0
	for i := range b.s.Messages {
		calls += len(b.s.Messages[i].Calls)
	}
	b.c.byID.Reset(len(b.s.Messages))
	b.c.byCall.Reset(calls)
	b.c.msgs.Reserve(len(b.s.Messages))
	b.c.calls.Reserve(calls)
}

// registry adds the tools, registered or known by name, each with its
// schema shown whole for the replay.
func (b *restorer) registry() error {
	b.tools = make(map[str]*savedTool, len(b.s.Tools))
	for i := range b.s.Tools {
		st := &b.s.Tools[i]
		if _, dup := b.tools[st.Name]; dup || st.Name == "" {
			return badStateBecause("tools", string(st.Name), "a tool with no name, or twice")
		}
		b.tools[st.Name] = st
		if !st.Registered {
			b.c.tool(string(st.Name))
			continue
		}
		err := b.c.RegisterTool(Tool{
			Name: string(st.Name), Schema: bytesOf(st.Schema), Version: string(st.Version), Annotations: st.Annotations,
			Output: Class(st.Output), NoTombstone: st.NoTombstone, Family: string(st.Family), Scope: string(st.Scope),
			ScopeArgs: unstrs[string](st.ScopeArgs),
		})
		if err != nil {
			return badStateBecause("tools", string(st.Name), err)
		}
	}
	return nil
}

// messages replays the messages in transcript order: each appended, or
// opened, with its calls, then abandoned what it abandoned; and, after
// the message a close follows, the close.
func (b *restorer) messages() error {
	s := b.s
	b.late = make(map[str]*savedClose, len(s.Closes))
	for i := range s.Closes {
		cl := &s.Closes[i]
		if _, dup := b.late[cl.Message]; dup || cl.Calls <= 0 {
			return badStateBecause("closes", string(cl.Message), "closed twice, or with no call")
		}
		b.late[cl.Message] = cl
	}
	next := 0
	for i := range s.Messages {
		if err := b.add(&s.Messages[i]); err != nil {
			return err
		}
		for next < len(s.Closes) && s.Closes[next].After == s.Messages[i].ID {
			if err := b.close(&s.Closes[next]); err != nil {
				return err
			}
			next++
		}
	}
	if next < len(s.Closes) {
		return badStateBecause("closes", string(s.Closes[next].Message), "after no message before it")
	}
	return nil
}

// add appends or opens saved message m: open when it is still
// streaming or a close follows it, less the calls the close gives.
func (b *restorer) add(m *savedMessage) error {
	msg := Message{
		ID: MessageID(m.ID), Role: Role(m.Role), Tokens: m.Tokens, Content: bytesOf(m.Content),
		Answers: unstrs[CallID](m.Answers), Pinned: m.Pinned, Class: Class(m.Class), Facts: Facts(m.Facts),
		Requires: unstrs[string](m.Requires), IsError: m.IsError,
	}
	calls := m.Calls
	cl := b.late[m.ID]
	if cl != nil {
		if m.Open || cl.Calls > len(calls) {
			return badStateBecause("closes", string(m.ID), "an open message, or more calls than it has")
		}
		calls = calls[:len(calls)-cl.Calls]
	}
	msg.Calls = savedCalls(calls)
	if m.Pointer != nil && cl == nil {
		msg.Pointer = Pointer{Store: string(m.Pointer.Store), Key: string(m.Pointer.Key)}
	}
	var err error
	if m.Open || cl != nil {
		err = b.c.Open(msg)
	} else {
		err = b.c.Append(msg)
	}
	if err != nil {
		return badStateBecause("messages", string(m.ID), err)
	}
	return b.abandon(m, calls)
}

// savedCalls returns the calls of their saved form.
func savedCalls(scs []savedCall) []Call {
	if len(scs) == 0 {
		return nil
	}
	out := make([]Call, len(scs))
	for i, sc := range scs {
		out[i] = Call{ID: CallID(sc.ID), Tool: string(sc.Tool), Args: bytesOf(sc.Args), Server: sc.Server}
	}
	return out
}

// abandon abandons the calls of m among calls that the state says were.
func (b *restorer) abandon(m *savedMessage, calls []savedCall) error {
	for _, sc := range calls {
		if sc.State != callAbandoned {
			continue
		}
		if err := b.c.Abandon(CallID(sc.ID)); err != nil {
			return badStateBecause("messages", string(m.ID), err)
		}
	}
	return nil
}

// close closes the message cl names with the calls it gave, and records
// the pointer it carries, which no open message may.
func (b *restorer) close(cl *savedClose) error {
	p, ok := b.c.find(MessageID(cl.Message))
	if !ok {
		return badStateBecause("closes", string(cl.Message), "after a message that comes later")
	}
	m := &b.s.Messages[p]
	calls := m.Calls[len(m.Calls)-cl.Calls:]
	if err := b.c.Close(MessageID(m.ID), savedCalls(calls)...); err != nil {
		return badStateBecause("closes", string(m.ID), err)
	}
	if m.Pointer != nil {
		if err := b.c.Spill(MessageID(m.ID), Pointer{Store: string(m.Pointer.Store), Key: string(m.Pointer.Key)}); err != nil {
			return badStateBecause("messages", string(m.ID), err)
		}
	}
	return b.abandon(m, calls)
}

// couplings couples the messages of each coupling.
func (b *restorer) couplings() error {
	for _, g := range b.s.Couplings {
		if err := b.c.Couple(unstrs[MessageID](g)...); err != nil {
			return badStateBecause("couplings", "", err)
		}
	}
	return nil
}

// steps plans the steps and seals the plan.
func (b *restorer) steps() error {
	for _, st := range b.s.Steps {
		if err := b.c.PlanStep(StepID(st.ID), unstrs[MessageID](st.Needs)...); err != nil {
			return badStateBecause("steps", string(st.ID), err)
		}
	}
	b.c.SealSteps(b.s.Sealed)
	return nil
}

// readThrough takes what the model has read, when the state says more
// than the model's messages.
func (b *restorer) readThrough() error {
	if b.s.ReadThrough == "" {
		return nil
	}
	p, ok := b.c.find(MessageID(b.s.ReadThrough))
	if !ok || p+1 <= b.c.readEnd {
		return badStateBecause("readThrough", string(b.s.ReadThrough), "not after the model's last message")
	}
	b.c.readEnd = p + 1
	return nil
}

// finish gives the Context its Config, judges what it may hoard, and
// counts the pointer lines.
func (b *restorer) finish() error {
	c := b.c
	c.cfg = b.cfg
	c.retrackLarge()
	if len(b.s.Lines) > 0 && c.cfg.PointerTokens <= 0 {
		return badStateBecause("pointerLines", "", "lines without PointerTokens")
	}
	for _, sp := range b.s.Lines {
		ptr := Pointer{Store: string(sp.Store), Key: string(sp.Key)}
		if _, dup := c.lines[ptr]; dup || ptr.IsZero() {
			return badStateBecause("pointerLines", string(sp.Key), "a zero pointer, or twice")
		}
		if !c.fits(c.cfg.PointerTokens) {
			return badStateBecause("pointerLines", string(sp.Key), ErrTokenOverflow)
		}
		c.addLine(ptr)
	}
	return nil
}

// findCall returns the call ref names.
func (b *restorer) findCall(ref *savedCallRef) (int32, bool) {
	p, ok := b.c.find(MessageID(ref.Message))
	if !ok {
		return none, false
	}
	for k := range b.c.callsOf(p) {
		if string(b.c.callID(k)) == string(ref.Call) {
			return k, true
		}
	}
	return none, false
}

// stateList is a part of a saved state that Save writes as a list of
// records, each named by an id, for diffStates.
type stateList struct {
	part string
	n    int
	at   func(i int) any
	id   func(i int) str
}

// lists returns the parts of s that are lists of records.
func (s *savedState) lists() []stateList {
	return []stateList{
		{"tools", len(s.Tools), func(i int) any { return s.Tools[i] }, func(i int) str { return s.Tools[i].Name }},
		{"messages", len(s.Messages), func(i int) any { return s.Messages[i] }, func(i int) str { return s.Messages[i].ID }},
		{"closes", len(s.Closes), func(i int) any { return s.Closes[i] }, func(i int) str { return s.Closes[i].Message }},
		{"steps", len(s.Steps), func(i int) any { return s.Steps[i] }, func(i int) str { return s.Steps[i].ID }},
	}
}

// diffStates returns the first part, and the id in it, where the state
// read and the state its Context saves differ; an empty part when they
// do not.
func diffStates(read, made *savedState) (part, id string) {
	ra, ma := read.lists(), made.lists()
	for i := range ra {
		r, m := ra[i], ma[i]
		for j := range min(r.n, m.n) {
			if !deepEqual(r.at(j), m.at(j)) {
				return r.part, string(r.id(j))
			}
		}
		if r.n != m.n {
			return r.part, ""
		}
	}
	rest := []struct {
		part string
		r, m any
	}{
		{"format", read.Format, made.Format}, {"version", read.Version, made.Version}, {"config", read.Config, made.Config},
		{"couplings", read.Couplings, made.Couplings}, {"readThrough", read.ReadThrough, made.ReadThrough},
		{"sealed", read.Sealed, made.Sealed}, {"mutations", read.Mutations, made.Mutations}, {"pointerLines", read.Lines, made.Lines},
		{"memory", read.Memory, made.Memory}, {"checks", read.Checks, made.Checks},
	}
	for _, x := range rest {
		if !deepEqual(x.r, x.m) {
			return x.part, ""
		}
	}
	return "", ""
}

// deepEqual compares two parts of saved states, taking an empty list
// for none.
func deepEqual(a, b any) bool { return equalValues(reflect.ValueOf(a), reflect.ValueOf(b)) }

func equalValues(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		if a.Type().Elem().Kind() == reflect.Uint8 {
			return bytes.Equal(a.Bytes(), b.Bytes())
		}
		for i := range a.Len() {
			if !equalValues(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return equalValues(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !equalValues(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Array:
		for i := range a.Len() {
			if !equalValues(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return a.Uint() == b.Uint()
	}
	return a.Interface() == b.Interface()
}

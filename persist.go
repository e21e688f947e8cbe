package pruneguard

import (
	"cmp"
	"encoding/json"
	"io"
	"slices"
	"strings"
)

// Save writes the Context's state to w, so that [Restore] can rebuild it
// in another process or on another host, with the same message and call
// ids: every message with its id, role, tokens, content (or the stream
// so far), calls and their states, answers, pin, facts, class, pointer,
// steps, required tools, stub, and for a summary what it carries; how
// messages were coupled into units; what the model has read
// ([Context.Unread]); the tool registry with schemas, versions, scopes,
// families, what the prompt shows of each (whole, compressed, withdrawn,
// behind a tombstone) and their counters; the planned steps and whether
// the plan is sealed; the data fields of the Config (not its Oracle,
// Resolver, Counter, SummaryCounter or Text, which Restore takes
// again); the pointers whose lines it counts (Config.PointerTokens); and what it remembers:
// the calls and results pruned last (for [ErrPrunedCall],
// [ErrAbandonedCall] and refetch alerts), the alerts not yet taken, the
// ghost-tool episodes, the schemas asked back that wait for a logger,
// the refusals its guards remember ([Context.Refusals]), and the count
// of guard checks (for [Result.Compaction]). Decisions made before Save
// belong to this Context only.
//
// The state is JSON, version 2 of the format "pruneguard.context": it
// names messages, calls and tools by their ids and classes and facts by
// their names, so that a reader can write one by hand (see the format's
// description in the package's source, persist_format.go). It ends with
// a SHA-256 digest of the rest, so that an alteration is found. Equal
// Contexts save equal bytes.
//
// Save holds the Context's lock while it builds the state, so events and
// reads wait for it; it releases the lock before it writes, so a slow
// writer holds up nobody. Its only I/O is the writes to w, whose error
// it returns.
func (c *Context) Save(w io.Writer) error {
	c.mu.Lock()
	c.settleLedger()
	s := c.state()
	c.mu.Unlock()
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = w.Write(sealState(b))
	return err
}

// state builds the saved form, under the lock.
func (c *Context) state() *savedState {
	s := &savedState{Format: stateFormat, Version: stateVersion, Config: savedConfigOf(c.cfg)}
	s.Lines = c.savedLines()
	if c.roleIdx == nil {
		return s // a zero Context that saw no event
	}
	named := c.namedCalls()
	s.Tools = c.savedTools()
	s.Messages = c.savedMessages(named)
	t := c.transcript(named)
	s.Closes = t.savedCloses()
	s.Couplings = t.savedCouplings()
	s.ReadThrough = c.savedReadThrough()
	s.Steps = c.savedSteps()
	s.Sealed = c.sealed
	s.Mutations = c.savedMutations()
	s.Memory = c.savedMemory()
	s.Checks = c.mem.checks.Load()
	return s
}

func savedConfigOf(cfg Config) savedConfig {
	return savedConfig{
		Boundary: boundaryName(cfg.Boundary), Regen: regenName(cfg.Regen), TextClass: className(cfg.TextClass),
		NoTombstones: cfg.NoTombstones, Ceiling: cfg.Ceiling, HoardTokens: cfg.HoardTokens,
		StubText: str(cfg.StubText), StubTokens: cfg.StubTokens, PointerTokens: cfg.PointerTokens,
	}
}

// savedLines returns the pointers whose lines the Context counts, sorted.
func (c *Context) savedLines() []savedPointer {
	var out []savedPointer
	for ptr := range c.lines {
		out = append(out, savedPointer{Store: str(ptr.Store), Key: str(ptr.Key)})
	}
	slices.SortFunc(out, func(a, b savedPointer) int {
		return cmp.Or(strings.Compare(string(a.Store), string(b.Store)), strings.Compare(string(a.Key), string(b.Key)))
	})
	return out
}

// namedCalls reports, for each call, whether its id names it: it is the
// latest call made with the id, and its message is held.
func (c *Context) namedCalls() []bool {
	named := make([]bool, c.calls.Len())
	for p := range c.positions() {
		for k := range c.callsOf(p) {
			if q, ok := c.byCall.Find(string(c.callID(k))); ok && q == k {
				named[k] = true
			}
		}
	}
	return named
}

// callRef names call k, or is nil once its message is gone.
func (c *Context) callRef(k int32) *savedCallRef {
	r := c.call(k)
	if r.caller == none || c.msg(r.caller).flags&mDead != 0 {
		return nil
	}
	return &savedCallRef{Message: str(c.id(r.caller)), Call: str(c.callID(k))}
}

// savedTools returns the saved form of the tools, sorted by name.
func (c *Context) savedTools() []savedTool {
	out := make([]savedTool, 0, len(c.tools))
	for i := range c.tools {
		t := &c.tools[i]
		st := savedTool{
			Name: str(t.t.Name), Registered: t.registered, Migrations: t.ver,
			Withdrawn: !t.resident, Compressed: optStr(t.compressed), Tombstoned: t.tombstoned,
			SchemaTokens: t.schemaTok, Reexpansions: t.reexpand, GhostCalls: t.ghostCalls,
			Refetches: t.refetches, IrreducibleRefetches: t.irreducibleRefetches, GhostCopies: t.ghostCopies,
			GhostRejections: t.ghostRejections, GhostDetours: t.ghostDetours, GhostTriads: t.ghostTriads,
			MismatchedRefetches: t.mismatchedRefetches,
		}
		if t.registered {
			st.Schema, st.Version, st.Annotations = optStr(t.t.Schema), str(t.t.Version), t.t.Annotations
			st.Output, st.NoTombstone = className(t.t.Output), t.t.NoTombstone
			st.Family, st.Scope, st.ScopeArgs = str(t.t.Family), str(t.t.Scope), strs(t.t.ScopeArgs)
		}
		if t.compressed != nil {
			st.CompressedTokens = t.compTok
		}
		if t.tombstoned {
			st.TombstoneTokens = t.tombTok
		}
		st.Recent = c.recentCalls(t)
		st.PrunedLast = c.prunedLast(t)
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b savedTool) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return out
}

// recentCalls returns the window of tool t, oldest first, without the
// calls gone that no call held follows.
func (c *Context) recentCalls(t *toolRec) []*savedCallRef {
	var out []*savedCallRef
	for j := range ghostWindow {
		e := t.window[(int(t.windowAt)+j)%ghostWindow]
		var ref *savedCallRef
		if e != 0 {
			ref = c.callRef(e - 1)
		}
		if ref != nil || len(out) > 0 {
			out = append(out, ref)
		}
	}
	return out
}

// prunedLast places tool t's latest call when it is no longer held (its
// mark is the place between calls it took), or is nil.
func (c *Context) prunedLast(t *toolRec) *savedAfter {
	m := t.last
	if m == 0 {
		return nil
	}
	if m%2 == 0 && c.callRef(int32(m/2-1)) != nil {
		return nil // held: the calls say it
	}
	return &savedAfter{After: c.heldBefore(m)}
}

// heldBefore names the latest call held before the place of mark m (the
// place just before call (m-1)/2, or at the end), or is nil when none is.
func (c *Context) heldBefore(m int64) *savedCallRef {
	for k := int32((m-1)/2) - 1; k >= 0; k-- {
		if ref := c.callRef(k); ref != nil {
			return ref
		}
	}
	return nil
}

// savedMessages returns the saved form of the messages held.
func (c *Context) savedMessages(named []bool) []savedMessage {
	out := make([]savedMessage, 0, c.live)
	for p := range c.positions() {
		out = append(out, c.savedMessage(p, named))
	}
	return out
}

// savedMessage returns the saved form of message p.
func (c *Context) savedMessage(p int32, named []bool) savedMessage {
	x := c.msg(p)
	m := savedMessage{
		ID: str(c.id(p)), Role: str(c.role(p)), Tokens: c.tokensOf(p), Open: x.flags&mOpen != 0,
		Pinned: x.flags&mPinned != 0, Class: className(x.class), Facts: factNames(x.facts),
		Stubbed: x.flags&mStubbed != 0,
	}
	content := c.text.Bytes(x.text)[x.idLen:]
	if m.Open {
		content = c.sideOf(p).buf
	}
	if len(content) > 0 || x.flags&mEmpty != 0 && !m.Stubbed {
		m.Content = optStr(content)
	}
	if sd := c.sideOf(p); sd != nil {
		c.savedSide(&m, sd)
	}
	for k := range c.callsOf(p) {
		m.Calls = append(m.Calls, c.savedCall(k, named))
	}
	for k := range c.answersOf(p) {
		m.Answers = append(m.Answers, str(c.callID(k)))
	}
	return m
}

// savedSide fills m with what side record sd holds.
func (c *Context) savedSide(m *savedMessage, sd *side) {
	m.Counted, m.IsError = sd.counted && m.Open, sd.isError
	if !sd.pointer.IsZero() {
		m.Pointer = &savedPointer{Store: str(sd.pointer.Store), Key: str(sd.pointer.Key)}
	}
	if sd.neededBy != nil {
		ids := strs(sd.neededBy)
		if ids == nil {
			ids = []str{}
		}
		m.NeededBy = &ids
	}
	for _, t := range sd.requires {
		m.Requires = append(m.Requires, str(c.tools[t].t.Name))
	}
	for _, ptr := range sd.carries {
		m.Carries = append(m.Carries, savedPointer{Store: str(ptr.Store), Key: str(ptr.Key)})
	}
	for _, f := range sd.holds {
		m.Holds = append(m.Holds, savedFact{Kind: f.kind, Text: str(f.Text), Key: str(f.Key)})
	}
}

// savedCall returns the saved form of call k.
func (c *Context) savedCall(k int32, named []bool) savedCall {
	r := c.call(k)
	sc := savedCall{
		ID: str(c.callID(k)), Tool: str(c.tools[r.tool].t.Name), Args: optStr(c.args(k)),
		Server: r.flags&cServer != 0, State: callPending, Ghost: r.flags&cGhost != 0,
		Stale: r.ver < c.tools[r.tool].ver,
	}
	switch {
	case r.flags&cAbandon != 0:
		sc.State = callAbandoned
	case r.flags&cDone != 0:
		sc.State = callAnswered
	}
	if !named[k] {
		// Its id names a later call held, or, when it names none, one
		// that was pruned.
		q, ok := c.byCall.Find(string(c.callID(k)))
		sc.Superseded = !ok || q == k
	}
	return sc
}

// savedReadThrough names the last message the model has read, when the
// model's own messages do not say it.
func (c *Context) savedReadThrough() str {
	read, byModel := none, none // the last message held read, and of the model
	for p := range c.positions() {
		if p >= c.readEnd {
			break
		}
		read = p
		if c.isModels(p) {
			byModel = p
		}
	}
	if read == byModel {
		return ""
	}
	return str(c.id(read))
}

// savedSteps returns the planned steps, sorted by id, each with the
// messages held it reads, in transcript order.
func (c *Context) savedSteps() []savedStep {
	out := make([]savedStep, 0, len(c.steps))
	for _, id := range slices.Sorted(mapKeys(c.steps)) {
		refs := slices.Clone(c.steps[id].refs)
		slices.Sort(refs)
		st := savedStep{ID: str(id)}
		for _, p := range slices.Compact(refs) {
			if c.msg(p).flags&mDead == 0 {
				st.Needs = append(st.Needs, str(c.id(p)))
			}
		}
		out = append(out, st)
	}
	return out
}

// mapKeys walks the keys of m.
func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

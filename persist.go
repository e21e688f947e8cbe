package pruneguard

import (
	"cmp"
	"encoding/json"
	"io"
	"slices"
	"strings"
)

// Save writes the Context's state to w, so that [Restore] can rebuild it
// in another process or on another host: every message with its id,
// role, tokens, content (or the stream so far), calls, answers, unit,
// pin, facts, class, pointer, steps and required tools; the units and
// how they were joined; pending and abandoned calls, which call an id
// used again names, and streaming messages; the tool registry with schemas, residency, compressions,
// tombstones, versions, scopes, families and counters; the planned steps
// and whether the plan is sealed; the data fields of the Config (not its
// Oracle, Resolver or Counter, which Restore takes again); the calls
// pruned last (for [ErrPrunedCall] and [ErrAbandonedCall]), the results
// pruned last (for refetch alerts), the alerts not yet taken, the
// ghost-tool episodes, the count of guard checks (for
// [Result.Compaction]), the pointers whose lines it counts (see
// Config.PointerTokens), and which messages the model has read
// ([Context.Unread]).
//
// It does not save the refusals guards remembered ([Context.Refusals]):
// a restored Context's guards meet them again. Decisions made before
// Save belong to this Context only.
//
// The state is one JSON object whose "format" is "pruneguard.context"
// and whose "version" is 1; messages, calls, units and tools refer to
// each other by their place in its lists, and a string that is not UTF-8
// (an id, a role, a name) is written as {"base64": ...}, so that every
// byte comes back. It ends with a SHA-256 digest of the rest, so that
// an alteration is found. [Restore] refuses a digest that does not
// match, another format or version, a field it does not know, and
// trailing data. Save holds the Context's lock while it builds the
// state, so events and reads wait for it; it releases the lock before it
// writes, so a slow writer holds up nobody. Its only I/O is the writes to w, whose error it returns.
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

// state builds the saved form, under the lock. Places are
// renumbered as a compaction would: messages and calls gone are left out.
func (c *Context) state() *savedState {
	s := &savedState{Format: stateFormat, Version: stateVersion}
	cfg := c.cfg
	s.Config = savedConfig{
		Boundary: cfg.Boundary, Regen: cfg.Regen, TextClass: cfg.TextClass, NoTombstones: cfg.NoTombstones,
		Ceiling: cfg.Ceiling, HoardTokens: cfg.HoardTokens, StubText: str(cfg.StubText), StubTokens: cfg.StubTokens,
		PointerTokens: cfg.PointerTokens,
	}
	for ptr := range c.lines {
		s.Lines = append(s.Lines, savedPointer{Store: str(ptr.Store), Key: str(ptr.Key)})
	}
	slices.SortFunc(s.Lines, func(a, b savedPointer) int {
		return cmp.Or(strings.Compare(string(a.Store), string(b.Store)), strings.Compare(string(a.Key), string(b.Key)))
	})
	if c.roleIdx == nil {
		return s // a zero Context that saw no event
	}
	rn := c.saveRenumbering()
	var readEnd, byMsgs int32 // what the model read, and what its messages say it read
	for p := int32(0); p < c.msgs.Len(); p++ {
		q := rn.pm[p]
		switch {
		case q == none:
		case c.isModels(p):
			byMsgs = q + 1
			fallthrough
		case p < c.readEnd:
			if p < c.readEnd {
				readEnd = q + 1
			}
		}
	}
	if readEnd != byMsgs {
		s.ReadEnd = &readEnd
	}
	for u := c.firstUnit(); u != none; u = c.unit(u).next {
		s.Units = append(s.Units, savedUnit{Version: c.unit(u).version})
	}
	s.Messages = c.savedMessages(rn)
	s.Calls = c.savedCalls(rn)
	for _, k := range c.pend {
		s.Pending = append(s.Pending, rn.cm[k])
	}
	for _, p := range c.open {
		s.Open = append(s.Open, rn.pm[p])
	}
	s.Tools = c.savedTools(rn)
	s.Unsound = slices.Clone(c.unsound)
	for _, sc := range c.scopes {
		s.Scopes = append(s.Scopes, savedScope{Name: str(sc.name), Mut: rn.mark(sc.mut), Res: rn.mark(sc.res)})
	}
	s.MutAny, s.MutAll = rn.mark(c.mutAny), rn.mark(c.mutAll)
	s.ResAny, s.ResAll = rn.mark(c.resAny), rn.mark(c.resAll)
	for k, pm := range c.paths {
		if at, under := rn.mark(pm.at), rn.mark(pm.under); under > 1 {
			s.Paths = append(s.Paths, savedPath{Scope: k.scope, Path: str(k.path), At: at, Under: under})
		}
	}
	slices.SortFunc(s.Paths, func(a, b savedPath) int {
		return cmp.Or(cmp.Compare(a.Scope, b.Scope), strings.Compare(string(a.Path), string(b.Path)))
	})
	for _, id := range slices.Sorted(mapKeys(c.steps)) {
		st := savedStep{ID: str(id), Refs: []int32{}}
		for _, p := range c.steps[id].refs {
			if q := rn.pm[p]; q != none {
				st.Refs = append(st.Refs, q)
			}
		}
		s.Steps = append(s.Steps, st)
	}
	s.Sealed = c.sealed
	c.saveMemory(s)
	return s
}

// saveRenumbering maps the places of the Context to those of its saved
// state: messages and calls gone are left out, units go in list order.
type saveRenumbering struct {
	pm, cm, um []int32 // new places of messages, calls and units; none for those gone
	// rank counts, for each call, the calls kept before it, and at its
	// end all those kept.
	rank []int32
}

// saveRenumbering returns the renumbering of the Context's places.
func (c *Context) saveRenumbering() *saveRenumbering {
	rn := &saveRenumbering{
		pm: make([]int32, c.msgs.Len()), cm: make([]int32, c.calls.Len()),
		rank: make([]int32, c.calls.Len()+1), um: make([]int32, c.units.Len()),
	}
	n := int32(0)
	for p := int32(0); p < c.msgs.Len(); p++ {
		rn.pm[p] = none
		if c.msg(p).flags&mDead == 0 {
			rn.pm[p] = n
			n++
		}
	}
	n = 0
	for k := int32(0); k < c.calls.Len(); k++ {
		rn.cm[k] = none
		rn.rank[k] = n
		if c.callLive(k) {
			rn.cm[k] = n
			n++
		}
	}
	rn.rank[c.calls.Len()] = n
	n = 0
	for u := c.firstUnit(); u != none; u = c.unit(u).next {
		rn.um[u] = n
		n++
	}
	return rn
}

// mark moves a scope mark as remapScopes does.
func (rn *saveRenumbering) mark(m int64) int64 {
	switch {
	case m == 0:
		return 0
	case m%2 == 1:
		return 2*int64(rn.rank[(m-1)/2]) + 1
	}
	if k := rn.cm[m/2-1]; k != none {
		return callMark(k)
	}
	return 2*int64(rn.rank[m/2-1]) + 1
}

// savedMessages returns the saved form of the messages held.
func (c *Context) savedMessages(rn *saveRenumbering) []savedMsg {
	var out []savedMsg
	for p := range c.positions() {
		x := c.msg(p)
		m := savedMsg{
			ID: str(c.id(p)), Role: str(c.role(p)), Tokens: c.tokensOf(p), Unit: rn.um[x.unit],
			Empty: x.flags&mEmpty != 0, Open: x.flags&mOpen != 0, Stubbed: x.flags&mStubbed != 0,
			Pinned: x.flags&mPinned != 0, Class: x.class, Facts: x.facts,
		}
		if m.Open {
			m.Body = slices.Clone(c.sideOf(p).buf)
		} else {
			m.Body = slices.Clone(c.text.Bytes(x.text)[x.idLen:])
		}
		if sd := c.sideOf(p); sd != nil {
			m.Counted, m.IsError = sd.counted, sd.isError
			m.Store, m.Key = str(sd.pointer.Store), str(sd.pointer.Key)
			m.NeededBy = strs(sd.neededBy)
			m.Requires = slices.Clone(sd.requires)
		}
		for k := range c.callsOf(p) {
			m.Calls = append(m.Calls, rn.cm[k])
		}
		for k := range c.answersOf(p) {
			m.Answers = append(m.Answers, rn.cm[k])
		}
		out = append(out, m)
	}
	return out
}

// savedCalls returns the saved form of the calls kept.
func (c *Context) savedCalls(rn *saveRenumbering) []savedCall {
	var out []savedCall
	for k := int32(0); k < c.calls.Len(); k++ {
		if rn.cm[k] == none {
			continue
		}
		r := c.call(k)
		named, _ := c.byCall.Find(string(c.callID(k)))
		out = append(out, savedCall{
			ID: str(c.callID(k)), Tool: r.tool, Args: slices.Clone(c.args(k)), Ver: r.ver,
			Done: r.flags&cDone != 0, Ghost: r.flags&cGhost != 0, Server: r.flags&cServer != 0,
			Abandoned:  r.flags&cAbandon != 0,
			Superseded: r.caller != none && c.msg(r.caller).flags&mDead == 0 && named != k,
		})
	}
	return out
}

// savedTools returns the saved form of the tools.
func (c *Context) savedTools(rn *saveRenumbering) []savedTool {
	var out []savedTool
	for i := range c.tools {
		t := &c.tools[i]
		st := savedTool{
			Name: str(t.t.Name), Schema: slices.Clone(t.t.Schema), Version: str(t.t.Version),
			Annotations: t.t.Annotations, Output: t.t.Output, NoTombstone: t.t.NoTombstone,
			Family: str(t.t.Family), Scope: str(t.t.Scope), ScopeArgs: strs(t.t.ScopeArgs), Registered: t.registered, Resident: t.resident,
			Tombstoned: t.tombstoned, Compressed: slices.Clone(t.compressed), Lossy: t.lossy, Ver: t.ver,
			Reexpansions: t.reexpand, GhostCalls: t.ghostCalls, Refetches: t.refetches,
			IrreducibleRefetches: t.irreducibleRefetches, GhostCopies: t.ghostCopies,
			GhostRejections: t.ghostRejections, GhostDetours: t.ghostDetours, GhostTriads: t.ghostTriads,
			MismatchedRefetches: t.mismatchedRefetches, SchemaTokens: t.schemaTok,
			CompressedTokens: t.compTok, TombstoneTokens: t.tombTok, Last: rn.mark(t.last), WindowAt: t.windowAt,
		}
		for j, e := range t.window {
			if e != 0 {
				st.Window[j] = rn.cm[e-1] + 1 // zero when the call is gone
			}
		}
		out = append(out, st)
	}
	return out
}

// saveMemory writes into s what the Context remembers: the calls and
// results pruned last, the alerts, the ghost-tool episodes and the count
// of checks.
func (c *Context) saveMemory(s *savedState) {
	for k, v := range c.gone.All() {
		s.Gone = append(s.Gone, savedGone{Call: str(k), Abandoned: v})
	}
	for k, v := range c.cleared.All() {
		s.Cleared = append(s.Cleared, savedPruned{Sig: b64(k), Class: v.class, Hash: v.hash, Message: str(v.msg), Stubbed: v.stubbed})
	}
	for _, a := range c.alerts {
		s.Alerts = append(s.Alerts, savedAlert{
			Tool: str(a.Tool), Call: str(a.Call), Result: str(a.Result), Pruned: str(a.Pruned),
			Stubbed: a.Stubbed, Class: a.Class, Match: a.Match, Was: a.Was, Now: a.Now,
		})
	}
	for _, ep := range c.ghostLog {
		e := ep.ev
		s.Ghosts = append(s.Ghosts, savedGhost{
			Tool: ep.tool, Open: ep.open, From: str(ep.from), Call: str(e.Call), Copied: str(e.Copied),
			Missing: strs(e.Missing), Stale: strs(e.Stale), Rejected: str(e.Rejected), Fields: strs(e.Fields),
			Sibling: str(e.Sibling), SiblingCall: str(e.SiblingCall), Reexpanded: e.Reexpanded,
		})
	}
	s.Checks = c.mem.checks.Load()
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

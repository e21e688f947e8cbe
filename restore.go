package pruneguard

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"slices"
)

// Restore rebuilds a Context from the state [Context.Save] wrote, so
// that it makes the same decisions as the Context saved: the same
// [Context.Snapshot], [Context.Messages] and [Context.Tools], and, for
// the same plan and the same events after, the same [Decision] (the
// remembered refusals of guards aside; see Save).
//
// The Config is the saved one, but for its Oracle, Resolver and Counter,
// which are functions and are taken from cfg; cfg's other fields are not
// used. When cfg.Resolver is set, Restore asks it once about each
// distinct pointer the state holds, so that a Resolver that checks a
// pointer it does not know against its store (as spill.Spiller does)
// does so here, and later prunes answer from its memory. A pointer that
// does not resolve is kept, and counts for no prune, as always.
//
// Restore reads r to its end and does no other I/O. State that Save did
// not write, or that was truncated or altered since (its digest does
// not match), fails with an
// [*InputError] matching [ErrBadState] and [ErrInvalidInput]; an error
// reading r is returned as it is. On error it returns no Context.
func Restore(r io.Reader, cfg Config) (*Context, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	b, ok := unsealState(b)
	if !ok {
		return nil, badState("sha256", "")
	}
	var s savedState
	if err := strict(b, &s); err != nil {
		return nil, badState("", "")
	}
	if s.Format != stateFormat {
		return nil, badState("format", s.Format)
	}
	if s.Version != stateVersion {
		return nil, badState("version", "")
	}
	c, err := s.build(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Resolver != nil {
		seen := make(map[Pointer]bool)
		for _, m := range s.Messages {
			if p := (Pointer{Store: string(m.Store), Key: string(m.Key)}); !p.IsZero() && !seen[p] {
				seen[p] = true
				cfg.Resolver.Resolvable(p)
			}
		}
	}
	return c, nil
}

// build makes the Context s describes, checking every reference and
// every relation on the way; derived counts and indexes are computed,
// not read.
func (s *savedState) build(fns Config) (*Context, error) {
	cfg := Config{
		Boundary: s.Config.Boundary, Regen: s.Config.Regen, TextClass: s.Config.TextClass,
		NoTombstones: s.Config.NoTombstones, Ceiling: s.Config.Ceiling, HoardTokens: s.Config.HoardTokens,
		StubText: string(s.Config.StubText), StubTokens: s.Config.StubTokens, PointerTokens: s.Config.PointerTokens,
		Oracle: fns.Oracle, Resolver: fns.Resolver, Counter: fns.Counter,
	}
	if cfg.Validate() != nil {
		return nil, badState("config", "")
	}
	c := NewContext(cfg)
	nm, nk, nu, nt := int32(len(s.Messages)), int32(len(s.Calls)), int32(len(s.Units)), int32(len(s.Tools))
	if len(s.Messages) > 1<<30 || len(s.Calls) > 1<<30 {
		return nil, badState("", "")
	}
	in := func(i, n int32) bool { return i >= 0 && i < n }
	// Marks of calls: 0, 2k+2 for call k, 2k+1 just before call k (or
	// after the last).
	markOK := func(m int64) bool { return m >= 0 && m <= 2*int64(nk)+1 }

	// Scopes, then tools.
	for i, sc := range s.Scopes {
		if sc.Name == "" || c.scopeIdx[string(sc.Name)] != 0 || !markOK(sc.Mut) {
			return nil, badState("scopes", string(sc.Name))
		}
		if c.scopeIdx == nil {
			c.scopeIdx = make(map[string]int32)
		}
		c.scopes = append(c.scopes, scopeRec{name: string(sc.Name), mut: sc.Mut})
		c.scopeIdx[string(sc.Name)] = int32(i + 1)
	}
	if !markOK(s.MutAny) || !markOK(s.MutAll) {
		return nil, badState("scopes", "")
	}
	c.mutAny, c.mutAll = s.MutAny, s.MutAll
	for i, st := range s.Tools {
		name := string(st.Name)
		if _, dup := c.toolIdx[name]; dup || len(st.Schema) > 0 && !json.Valid(st.Schema) ||
			st.Registered && name == "" || !markOK(st.Last) || st.WindowAt >= ghostWindow {
			return nil, badState("tools", name)
		}
		t := toolRec{
			t: Tool{
				Name: name, Schema: st.Schema, Version: string(st.Version), Annotations: st.Annotations,
				Output: st.Output, NoTombstone: st.NoTombstone, Family: string(st.Family), Scope: string(st.Scope),
			},
			registered: st.Registered, resident: st.Resident, tombstoned: st.Tombstoned,
			compressed: st.Compressed, lossy: st.Lossy, ver: st.Ver, head: none, tail: none,
			reexpand: st.Reexpansions, ghostCalls: st.GhostCalls, refetches: st.Refetches,
			irreducibleRefetches: st.IrreducibleRefetches, ghostCopies: st.GhostCopies,
			ghostRejections: st.GhostRejections, ghostDetours: st.GhostDetours, ghostTriads: st.GhostTriads,
			mismatchedRefetches: st.MismatchedRefetches, schemaTok: st.SchemaTokens, compTok: st.CompressedTokens,
			tombTok: st.TombstoneTokens, last: st.Last, windowAt: st.WindowAt,
		}
		if t.t.Scope != "" {
			if t.scope = c.scopeIdx[t.t.Scope]; t.scope == 0 {
				return nil, badState("tools", name)
			}
		}
		for j, e := range st.Window {
			if e < 0 || e > nk {
				return nil, badState("tools", name)
			}
			t.window[j] = e
		}
		t.props = schemaProps(t.t.Schema)
		c.tools = append(c.tools, t)
		c.toolIdx[name] = int32(i)
	}

	// Units: each needs a member; the members say which.
	for range s.Units {
		c.newUnit()
	}
	for i, su := range s.Units {
		c.unit(int32(i)).version = su.Version
	}

	// Messages, with the calls they emit and answer.
	caller := make([]int32, nk)
	result := make([]int32, nk)
	for k := range caller {
		caller[k], result[k] = none, none
	}
	for i := range s.Messages {
		m := &s.Messages[i]
		p := int32(i)
		id := string(m.ID)
		if m.ID == "" || m.Tokens < 0 || !in(m.Unit, nu) || slices.Contains(m.NeededBy, "") ||
			m.Open && (m.Store != "" || m.Key != "") || m.Counted && !m.Open || m.Empty && len(m.Body) > 0 ||
			m.Stubbed && !m.Open && len(m.Body) > 0 {
			return nil, badState("messages", id)
		}
		if _, dup := c.find(MessageID(id)); dup {
			return nil, badState("messages", id)
		}
		for j, k := range m.Calls {
			if !in(k, nk) || caller[k] != none || slices.Contains(m.Answers, k) || slices.Contains(m.Calls[:j], k) {
				return nil, badState("messages", id)
			}
			caller[k] = p
		}
		for _, k := range m.Answers {
			if !in(k, nk) || result[k] != none || s.Calls[k].Server {
				return nil, badState("messages", id)
			}
			result[k] = p
		}
		for j, t := range m.Requires {
			if !in(t, nt) || slices.Contains(m.Requires[:j], t) {
				return nil, badState("messages", id)
			}
		}
		q := c.msgs.push()
		x := c.msg(q)
		*x = mrec{idLen: uint32(len(id)), unit: m.Unit, nextM: none, call: none, ans: none, class: m.Class, facts: m.Facts}
		if m.Open {
			x.text = c.text.add([]byte(id))
			x.flags |= mOpen
			c.side(q).buf = slices.Clone(m.Body)
		} else {
			x.text = c.text.add([]byte(id), m.Body)
		}
		if m.Empty {
			x.flags |= mEmpty
		}
		if m.Stubbed {
			x.flags |= mStubbed
		}
		if m.Pinned {
			x.flags |= mPinned
		}
		if r := c.internRole(Role(m.Role)); r == roleSide {
			c.side(q).role = Role(m.Role)
			c.msg(q).role = roleSide
		} else {
			c.msg(q).role = r
		}
		c.setTokens(q, m.Tokens)
		if m.Counted {
			c.side(q).counted = true
		}
		if m.IsError {
			c.side(q).isError = true
		}
		if m.Store != "" || m.Key != "" {
			c.side(q).pointer = Pointer{Store: string(m.Store), Key: string(m.Key)}
		}
		if m.NeededBy != nil {
			c.side(q).neededBy = unstrs[StepID](m.NeededBy)
		}
		if len(m.Requires) > 0 {
			c.side(q).requires = slices.Clone(m.Requires)
			for _, t := range m.Requires {
				c.tools[t].reqBy = append(c.tools[t].reqBy, q)
			}
		}
		c.live++
		c.byID.put(q)
	}

	// Units: members in transcript order, each unit listed by its first.
	for p := int32(0); p < nm; p++ {
		x := c.msg(p)
		un := c.unit(x.unit)
		if un.tail == none {
			un.head = p
		} else {
			c.msg(un.tail).nextM = p
		}
		un.tail = p
		if x.flags&mPinned != 0 {
			un.pinned++
		}
		if x.flags&mOpen != 0 {
			un.open++
		}
		c.tokens += c.tokensOf(p)
	}
	for u := int32(0); u < nu; u++ {
		if c.unit(u).head == none || u > 0 && c.unit(u-1).head > c.unit(u).head {
			return nil, badState("units", "")
		}
	}

	// Calls.
	latest := make(map[string]int32, nk)
	for k := int32(0); k < nk; k++ {
		sc := &s.Calls[k]
		id := string(sc.ID)
		if sc.ID == "" || !in(sc.Tool, nt) || caller[k] == none && result[k] == none {
			return nil, badState("calls", id)
		}
		open := result[k] != none && c.msg(result[k]).flags&mOpen != 0
		switch {
		case sc.Server && (caller[k] == none || !sc.Done || sc.Abandoned),
			sc.Abandoned && (!sc.Done || result[k] != none),
			sc.Superseded && (!sc.Done || caller[k] == none),
			result[k] != none && sc.Done == open,
			sc.Ver > c.tools[sc.Tool].ver,
			caller[k] != none && result[k] != none && c.msg(caller[k]).unit != c.msg(result[k]).unit:
			return nil, badState("calls", id)
		}
		k2 := c.calls.push()
		r := c.call(k2)
		*r = crec{
			text: c.text.add([]byte(id), sc.Args), idLen: uint32(len(id)), tool: sc.Tool,
			caller: caller[k], result: result[k], sib: none, nextAns: none, nextTool: none, ver: sc.Ver,
		}
		if sc.Args == nil {
			r.flags |= cArgsNil
		}
		if sc.Done {
			r.flags |= cDone
		}
		if sc.Ghost {
			r.flags |= cGhost
		}
		if sc.Server {
			r.flags |= cServer
		}
		if sc.Abandoned {
			r.flags |= cAbandon
		}
		if caller[k] != none {
			if !sc.Server {
				r.flags |= cArgsMade
				c.tools[sc.Tool].args++
				if !sc.Done {
					r.flags |= cPending
					c.unit(c.msg(caller[k]).unit).pending++
					c.nPending++
				}
			}
			t := &c.tools[sc.Tool]
			if t.tail == none {
				t.head = k
			} else {
				c.call(t.tail).nextTool = k
			}
			t.tail = k
			// An earlier call with this id must be done: two calls with
			// one id never wait at once.
			if old, ok := latest[id]; ok && c.call(old).flags&cDone == 0 {
				return nil, badState("calls", id)
			}
			latest[id] = k
		}
	}
	// An id names the latest call with it, unless a later call took it
	// (and was pruned).
	for k := int32(0); k < nk; k++ {
		if r := c.call(k); r.caller != none && !s.Calls[k].Superseded {
			if q, ok := latest[string(c.callID(k))]; ok && q == k {
				c.byCall.put(k)
			}
		}
	}
	// The calls of each message, and the answers, in order.
	for p := int32(0); p < nm; p++ {
		m := &s.Messages[p]
		last := none
		for _, k := range m.Calls {
			if last == none {
				c.msg(p).call = k
			} else {
				c.call(last).sib = k
			}
			last = k
		}
		last = none
		for _, k := range m.Answers {
			if last == none {
				c.msg(p).ans = k
			} else {
				c.call(last).nextAns = k
			}
			last = k
		}
		c.readTo(p)
	}
	// What the model has read: at least up to its last message.
	if s.ReadEnd != nil {
		if *s.ReadEnd < c.readEnd || *s.ReadEnd > nm {
			return nil, badState("readEnd", "")
		}
		c.readEnd = *s.ReadEnd
	}
	// The pending calls and the streaming messages, in the saved order.
	if len(s.Pending) != c.nPending {
		return nil, badState("pending", "")
	}
	for i, k := range s.Pending {
		if !in(k, nk) || c.call(k).flags&cPending == 0 || slices.Contains(s.Pending[:i], k) {
			return nil, badState("pending", "")
		}
	}
	c.pend = slices.Clone(s.Pending)
	nOpen := 0
	for p := int32(0); p < nm; p++ {
		if c.msg(p).flags&mOpen != 0 {
			nOpen++
		}
	}
	if len(s.Open) != nOpen {
		return nil, badState("open", "")
	}
	for i, p := range s.Open {
		if !in(p, nm) || c.msg(p).flags&mOpen == 0 || slices.Contains(s.Open[:i], p) {
			return nil, badState("open", "")
		}
	}
	c.open = slices.Clone(s.Open)
	if nOpen == 0 {
		c.open = nil
	}

	// Steps.
	for _, st := range s.Steps {
		id := StepID(st.ID)
		if id == "" || c.steps[id] != nil {
			return nil, badState("steps", string(id))
		}
		c.steps[id] = &step{refs: make([]int32, 0, len(st.Refs))}
		for _, p := range st.Refs {
			if !in(p, nm) {
				return nil, badState("steps", string(id))
			}
			c.steps[id].refs = append(c.steps[id].refs, p)
			c.side(p).refs++
		}
	}
	c.sealed = s.Sealed

	// The tools: what they add to the tokens, and those unsound, in the
	// saved order.
	for i := range c.tools {
		c.retally(int32(i))
	}
	want := 0
	for i := range c.tools {
		if c.tools[i].isUnsound() {
			want++
		}
	}
	if len(s.Unsound) != want {
		return nil, badState("unsound", "")
	}
	for j, i := range s.Unsound {
		if !in(i, nt) || !c.tools[i].isUnsound() || c.tools[i].unsound != 0 {
			return nil, badState("unsound", "")
		}
		c.tools[i].unsound = int32(j + 1)
	}
	c.unsound = slices.Clone(s.Unsound)

	// The indexes of results, and the large messages.
	for p := int32(0); p < nm; p++ {
		if x := c.msg(p); x.ans != none {
			c.results.Insert(p)
			if x.flags&mStubbed == 0 {
				c.whole.Insert(p)
				c.bySize.Insert(c.sizeKey(p))
			}
		}
		c.trackLarge(p)
	}

	// What the Context remembers.
	for _, g := range s.Gone {
		c.gone.put(string(g.Call), g.Abandoned)
	}
	for _, pr := range s.Cleared {
		sig, err := base64.StdEncoding.DecodeString(pr.Sig)
		if err != nil {
			return nil, badState("cleared", "")
		}
		c.cleared.put(string(sig), prunedResult{class: pr.Class, hash: pr.Hash, msg: MessageID(pr.Message), stubbed: pr.Stubbed})
	}
	if len(s.Alerts) > alertBound {
		return nil, badState("alerts", "")
	}
	for _, a := range s.Alerts {
		c.alerts = append(c.alerts, RefetchAlert{
			Tool: string(a.Tool), Call: CallID(a.Call), Result: MessageID(a.Result), Pruned: MessageID(a.Pruned),
			Stubbed: a.Stubbed, Class: a.Class, Match: a.Match, Was: a.Was, Now: a.Now,
		})
	}
	if len(s.Ghosts) > ghostLogBound {
		return nil, badState("ghosts", "")
	}
	for _, g := range s.Ghosts {
		if !in(g.Tool, nt) || g.Open && c.tools[g.Tool].ep != nil {
			return nil, badState("ghosts", "")
		}
		ep := &ghostEpisode{
			ev: GhostEvidence{
				Tool: c.tools[g.Tool].t.Name, Call: CallID(g.Call), Copied: CallID(g.Copied),
				Missing: unstrs[string](g.Missing), Stale: unstrs[string](g.Stale), Rejected: CallID(g.Rejected),
				Fields: unstrs[string](g.Fields), Sibling: string(g.Sibling), SiblingCall: CallID(g.SiblingCall),
				Reexpanded: g.Reexpanded,
			},
			tool: g.Tool, open: g.Open, from: MessageID(g.From),
		}
		if g.Open {
			c.tools[g.Tool].ep = ep
			c.openGhosts++
		}
		c.ghostLog = append(c.ghostLog, ep)
	}
	c.mem.checks.Store(s.Checks)

	// The pointer lines: only with PointerTokens set, each once.
	if len(s.Lines) > 0 && cfg.PointerTokens <= 0 {
		return nil, badState("pointerLines", "")
	}
	for _, sp := range s.Lines {
		ptr := Pointer{Store: string(sp.Store), Key: string(sp.Key)}
		if _, dup := c.lines[ptr]; dup || ptr.IsZero() {
			return nil, badState("pointerLines", string(sp.Key))
		}
		c.addLine(ptr)
	}
	return c, nil
}

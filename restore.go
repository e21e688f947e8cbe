package pruneguard

import (
	"context"
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
// used. When cfg.Resolver is a [Verifier] (as spill.Spiller is), Restore
// verifies each distinct pointer the state holds that it does not resolve
// yet, so that later prunes, which ask the Resolver from memory, resolve
// those that lead to their content. A pointer that does not resolve is kept, and counts for no
// prune, as always.
//
// Restore reads r to its end; its other I/O is the Verifier's. State that
// Save did not write, or that was truncated or altered since (its digest
// does not match), fails with an [*InputError] matching [ErrBadState] and
// [ErrInvalidInput]; an error reading r is returned as it is. On error it
// returns no Context.
//
// Restore verifies with context.Background(); use [RestoreContext] to
// bound the verification.
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
	if v, ok := cfg.Resolver.(Verifier); ok {
		if err := s.verify(ctx, v); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// verify asks v to verify each distinct pointer of s's messages it does
// not resolve yet; it fails only when ctx is done.
func (s *savedState) verify(ctx context.Context, v Verifier) error {
	seen := make(map[Pointer]bool)
	for _, m := range s.Messages {
		p := Pointer{Store: string(m.Store), Key: string(m.Key)}
		if p.IsZero() || seen[p] || v.Resolvable(p) {
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
	if len(s.Messages) > 1<<30 || len(s.Calls) > 1<<30 {
		return nil, badState("", "")
	}
	b := &restorer{
		s: s, c: NewContext(cfg),
		nm: int32(len(s.Messages)), nk: int32(len(s.Calls)), nu: int32(len(s.Units)), nt: int32(len(s.Tools)),
	}
	for _, step := range []func() error{
		b.scopes, b.tools, b.units, b.messages, b.members, b.calls, b.callLinks,
		b.inFlight, b.steps, b.toolTallies, b.memory, b.pointerLines,
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return b.c, nil
}

// restorer builds a Context from a saved state, a section at a time:
// each step checks what its section refers to and adds it.
type restorer struct {
	s              *savedState
	c              *Context
	nm, nk, nu, nt int32 // messages, calls, units and tools saved
	// caller and result are, for each call, the message that emits it
	// and the one that answers it, or none.
	caller, result []int32
	// latest is, for each call id, the latest call with it.
	latest map[string]int32
}

// inRange reports whether i indexes a list of n.
func inRange(i, n int32) bool { return i >= 0 && i < n }

// markOK reports whether m is a mark of a call: 0, 2k+2 for call k, 2k+1
// just before call k (or after the last).
func (b *restorer) markOK(m int64) bool { return m >= 0 && m <= 2*int64(b.nk)+1 }

// scopes adds the scopes of mutating tools and their latest marks.
func (b *restorer) scopes() error {
	s, c := b.s, b.c
	for i, sc := range s.Scopes {
		if sc.Name == "" || c.scopeIdx[string(sc.Name)] != 0 || !b.markOK(sc.Mut) || !b.markOK(sc.Res) {
			return badState("scopes", string(sc.Name))
		}
		if c.scopeIdx == nil {
			c.scopeIdx = make(map[string]int32)
		}
		c.scopes = append(c.scopes, scopeRec{name: string(sc.Name), mut: sc.Mut, res: sc.Res})
		c.scopeIdx[string(sc.Name)] = int32(i + 1)
	}
	if !b.markOK(s.MutAny) || !b.markOK(s.MutAll) || !b.markOK(s.ResAny) || !b.markOK(s.ResAll) {
		return badState("scopes", "")
	}
	c.mutAny, c.mutAll, c.resAny, c.resAll = s.MutAny, s.MutAll, s.ResAny, s.ResAll
	for _, sp := range s.Paths {
		k := pathKey{sp.Scope, string(sp.Path)}
		if _, dup := c.paths[k]; dup || k.scope < anyScope || k.scope > int32(len(c.scopes)) || cleanPath(k.path) != k.path ||
			!b.markOK(sp.At) || !b.markOK(sp.Under) || sp.At > sp.Under || sp.Under <= 1 {
			return badState("paths", k.path)
		}
		if c.paths == nil {
			c.paths = make(map[pathKey]pathMarks, len(s.Paths))
		}
		c.paths[k] = pathMarks{at: sp.At, under: sp.Under}
	}
	return nil
}

// tools adds the tools, registered or only called.
func (b *restorer) tools() error {
	c := b.c
	for i, st := range b.s.Tools {
		name := string(st.Name)
		if _, dup := c.toolIdx[name]; dup || len(st.Schema) > 0 && !json.Valid(st.Schema) ||
			st.Registered && name == "" || !b.markOK(st.Last) || st.WindowAt >= ghostWindow ||
			st.SchemaTokens < 0 || st.CompressedTokens < 0 || st.TombstoneTokens < 0 {
			return badState("tools", name)
		}
		t := toolRec{
			t: Tool{
				Name: name, Schema: st.Schema, Version: string(st.Version), Annotations: st.Annotations,
				Output: st.Output, NoTombstone: st.NoTombstone, Family: string(st.Family), Scope: string(st.Scope),
				ScopeArgs: unstrs[string](st.ScopeArgs),
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
				return badState("tools", name)
			}
		}
		for j, e := range st.Window {
			if e < 0 || e > b.nk {
				return badState("tools", name)
			}
			t.window[j] = e
		}
		t.props = schemaProps(t.t.Schema)
		c.tools = append(c.tools, t)
		c.toolIdx[name] = int32(i)
	}
	return nil
}

// units adds the units, empty: each needs a member, and the members say
// which.
func (b *restorer) units() error {
	for range b.s.Units {
		b.c.newUnit()
	}
	for i, su := range b.s.Units {
		b.c.unit(int32(i)).version = su.Version
	}
	return nil
}

// messages adds the messages, noting the calls they emit and answer.
func (b *restorer) messages() error {
	b.caller = make([]int32, b.nk)
	b.result = make([]int32, b.nk)
	for k := range b.caller {
		b.caller[k], b.result[k] = none, none
	}
	for p := range b.nm {
		if !b.messageOK(p) {
			return badState("messages", string(b.s.Messages[p].ID))
		}
		b.addMessage(p)
	}
	return nil
}

// messageOK checks saved message p: its fields agree, its id is new, and
// it names calls no other message emits or answers and tools that exist.
// It records p as the caller and the result of the calls it names.
func (b *restorer) messageOK(p int32) bool {
	m := &b.s.Messages[p]
	if m.ID == "" || m.Tokens < 0 || !inRange(m.Unit, b.nu) || slices.Contains(m.NeededBy, "") ||
		m.Open && (m.Store != "" || m.Key != "") || m.Counted && !m.Open || m.Empty && len(m.Body) > 0 ||
		m.Stubbed && !m.Open && len(m.Body) > 0 {
		return false
	}
	if _, dup := b.c.find(MessageID(m.ID)); dup {
		return false
	}
	for j, k := range m.Calls {
		if !inRange(k, b.nk) || b.caller[k] != none || slices.Contains(m.Answers, k) || slices.Contains(m.Calls[:j], k) {
			return false
		}
		b.caller[k] = p
	}
	for _, k := range m.Answers {
		if !inRange(k, b.nk) || b.result[k] != none || b.s.Calls[k].Server {
			return false
		}
		b.result[k] = p
	}
	for j, t := range m.Requires {
		if !inRange(t, b.nt) || slices.Contains(m.Requires[:j], t) {
			return false
		}
	}
	return true
}

// addMessage adds the record of saved message p, checked.
func (b *restorer) addMessage(p int32) {
	c, m := b.c, &b.s.Messages[p]
	id := string(m.ID)
	q := c.msgs.Push()
	x := c.msg(q)
	*x = mrec{idLen: uint32(len(id)), unit: m.Unit, nextM: none, call: none, ans: none, class: m.Class, facts: m.Facts}
	if m.Open {
		x.text = c.text.Add([]byte(id))
		x.flags |= mOpen
		c.side(q).buf = slices.Clone(m.Body)
	} else {
		x.text = c.text.Add([]byte(id), m.Body)
	}
	if m.Empty {
		x.flags |= mEmpty
	}
	if m.Stubbed {
		x.flags |= mStubbed
	}
	if m.Pinned {
		c.pin(q)
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
	c.byID.Put(q)
}

// members links the messages into their units, in transcript order, and
// checks that every unit has members and is listed by its first.
func (b *restorer) members() error {
	c := b.c
	for p := range b.nm {
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
		if !c.fits(c.tokensOf(p)) {
			return badState("messages", string(c.id(p)))
		}
		c.tokens += c.tokensOf(p)
	}
	for u := range b.nu {
		if c.unit(u).head == none || u > 0 && c.unit(u-1).head > c.unit(u).head {
			return badState("units", "")
		}
	}
	return nil
}

// calls adds the calls, each after checking that its state agrees with
// the messages that emit and answer it.
func (b *restorer) calls() error {
	b.latest = make(map[string]int32, b.nk)
	for k := range b.nk {
		sc := &b.s.Calls[k]
		if !b.callOK(k) {
			return badState("calls", string(sc.ID))
		}
		b.addCall(k)
		if b.caller[k] == none {
			continue
		}
		// An earlier call with this id must be done: two calls with one
		// id never wait at once.
		id := string(sc.ID)
		if old, ok := b.latest[id]; ok && b.c.call(old).flags&cDone == 0 {
			return badState("calls", id)
		}
		b.latest[id] = k
	}
	return nil
}

// callOK checks saved call k against itself and its messages.
func (b *restorer) callOK(k int32) bool {
	c, sc := b.c, &b.s.Calls[k]
	caller, result := b.caller[k], b.result[k]
	if sc.ID == "" || !inRange(sc.Tool, b.nt) || caller == none && result == none {
		return false
	}
	open := result != none && c.msg(result).flags&mOpen != 0
	switch {
	case sc.Server && (caller == none || !sc.Done || sc.Abandoned),
		sc.Abandoned && (!sc.Done || result != none),
		sc.Superseded && (!sc.Done || caller == none),
		result != none && sc.Done == open,
		sc.Ver > c.tools[sc.Tool].ver,
		caller != none && result != none && c.msg(caller).unit != c.msg(result).unit:
		return false
	}
	return true
}

// addCall adds the record of saved call k, checked, and links it into
// its tool's calls and, while it waits, its unit's pending count.
func (b *restorer) addCall(k int32) {
	c, sc := b.c, &b.s.Calls[k]
	id := string(sc.ID)
	k2 := c.calls.Push()
	r := c.call(k2)
	*r = crec{
		text: c.text.Add([]byte(id), sc.Args), idLen: uint32(len(id)), tool: sc.Tool,
		caller: b.caller[k], result: b.result[k], sib: none, nextAns: none, nextTool: none, ver: sc.Ver,
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
	if b.caller[k] == none {
		return
	}
	if !sc.Server {
		r.flags |= cArgsMade
		c.tools[sc.Tool].args++
		if !sc.Done {
			r.flags |= cPending
			c.unit(c.msg(b.caller[k]).unit).pending++
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
}

// callLinks files each call id under the latest call with it, unless a
// later call took it (and was pruned), and links the calls of each
// message, and its answers, in order.
func (b *restorer) callLinks() error {
	c := b.c
	for k := range b.nk {
		if r := c.call(k); r.caller != none && !b.s.Calls[k].Superseded {
			if q, ok := b.latest[string(c.callID(k))]; ok && q == k {
				c.byCall.Put(k)
			}
		}
	}
	for p := range b.nm {
		m := &b.s.Messages[p]
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
	if s := b.s; s.ReadEnd != nil {
		if *s.ReadEnd < c.readEnd || *s.ReadEnd > b.nm {
			return badState("readEnd", "")
		}
		c.readEnd = *s.ReadEnd
	}
	return nil
}

// inFlight takes the pending calls and the streaming messages, in the
// saved order, checking them against the records.
func (b *restorer) inFlight() error {
	s, c := b.s, b.c
	if len(s.Pending) != c.nPending {
		return badState("pending", "")
	}
	for i, k := range s.Pending {
		if !inRange(k, b.nk) || c.call(k).flags&cPending == 0 || slices.Contains(s.Pending[:i], k) {
			return badState("pending", "")
		}
	}
	c.pend = slices.Clone(s.Pending)
	nOpen := 0
	for p := range b.nm {
		if c.msg(p).flags&mOpen != 0 {
			nOpen++
		}
	}
	if len(s.Open) != nOpen {
		return badState("open", "")
	}
	for i, p := range s.Open {
		if !inRange(p, b.nm) || c.msg(p).flags&mOpen == 0 || slices.Contains(s.Open[:i], p) {
			return badState("open", "")
		}
	}
	c.open = slices.Clone(s.Open)
	if nOpen == 0 {
		c.open = nil
	}
	return nil
}

// steps adds the planned steps and the messages they name.
func (b *restorer) steps() error {
	c := b.c
	for _, st := range b.s.Steps {
		id := StepID(st.ID)
		if id == "" || c.steps[id] != nil {
			return badState("steps", string(id))
		}
		c.steps[id] = &step{refs: make([]int32, 0, len(st.Refs))}
		for _, p := range st.Refs {
			if !inRange(p, b.nm) {
				return badState("steps", string(id))
			}
			c.steps[id].refs = append(c.steps[id].refs, p)
			c.side(p).refs++
		}
	}
	c.sealed = b.s.Sealed
	return nil
}

// toolTallies computes what the tools add to the tokens, takes the
// unsound ones in the saved order, and files the results and the large
// messages in their indexes.
func (b *restorer) toolTallies() error {
	s, c := b.s, b.c
	for i := range c.tools {
		if n := heldBy(&c.tools[i]); n.over || !c.fits(n.n) {
			return badState("tools", c.tools[i].t.Name)
		}
		c.retally(int32(i))
	}
	want := 0
	for i := range c.tools {
		if c.tools[i].isUnsound() {
			want++
		}
	}
	if len(s.Unsound) != want {
		return badState("unsound", "")
	}
	for j, i := range s.Unsound {
		if !inRange(i, b.nt) || !c.tools[i].isUnsound() || c.tools[i].unsound != 0 {
			return badState("unsound", "")
		}
		c.tools[i].unsound = int32(j + 1)
	}
	c.unsound = slices.Clone(s.Unsound)
	for p := range b.nm {
		if x := c.msg(p); x.ans != none {
			c.results.Insert(p)
			if x.flags&mStubbed == 0 {
				c.whole.Insert(p)
				c.bySize.Insert(c.sizeKey(p))
			}
		}
		c.trackLarge(p)
	}
	return nil
}

// memory takes what the Context remembers: the calls and results pruned
// last, the alerts, the ghost-tool episodes and the count of checks.
func (b *restorer) memory() error {
	s, c := b.s, b.c
	for _, g := range s.Gone {
		c.gone.Put(string(g.Call), g.Abandoned)
	}
	for _, pr := range s.Cleared {
		sig, err := base64.StdEncoding.DecodeString(pr.Sig)
		if err != nil {
			return badState("cleared", "")
		}
		c.cleared.Put(string(sig), prunedResult{class: pr.Class, hash: pr.Hash, msg: MessageID(pr.Message), stubbed: pr.Stubbed})
	}
	if len(s.Alerts) > alertBound {
		return badState("alerts", "")
	}
	for _, a := range s.Alerts {
		c.alerts = append(c.alerts, RefetchAlert{
			Tool: string(a.Tool), Call: CallID(a.Call), Result: MessageID(a.Result), Pruned: MessageID(a.Pruned),
			Stubbed: a.Stubbed, Class: a.Class, Match: a.Match, Was: a.Was, Now: a.Now,
		})
	}
	if err := b.ghosts(); err != nil {
		return err
	}
	c.mem.checks.Store(s.Checks)
	return nil
}

// ghosts takes the ghost-tool episodes, open ones on their tools.
func (b *restorer) ghosts() error {
	c := b.c
	if len(b.s.Ghosts) > ghostLogBound {
		return badState("ghosts", "")
	}
	for _, g := range b.s.Ghosts {
		if !inRange(g.Tool, b.nt) || g.Open && c.tools[g.Tool].ep != nil {
			return badState("ghosts", "")
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
	return nil
}

// pointerLines takes the pointer lines: only with PointerTokens set, each
// once.
func (b *restorer) pointerLines() error {
	c := b.c
	if len(b.s.Lines) > 0 && c.cfg.PointerTokens <= 0 {
		return badState("pointerLines", "")
	}
	for _, sp := range b.s.Lines {
		ptr := Pointer{Store: string(sp.Store), Key: string(sp.Key)}
		if _, dup := c.lines[ptr]; dup || ptr.IsZero() || !c.fits(c.cfg.PointerTokens) {
			return badState("pointerLines", string(sp.Key))
		}
		c.addLine(ptr)
	}
	return nil
}

package pruneguard

import (
	"encoding/base64"
	"slices"
	"strings"
)

// Version 1 of the saved state, which earlier releases wrote: the
// Context's records in lists, referring to each other by their place.
// upgradeV1 reads one into the form of version 2, which Restore builds.

type savedStateV1 struct {
	Format   string          `json:"format"`
	Version  int             `json:"version"`
	Config   savedConfigV1   `json:"config"`
	Messages []savedMsgV1    `json:"messages"`
	Calls    []savedCallV1   `json:"calls"`
	Units    []savedUnitV1   `json:"units"`
	Pending  []int32         `json:"pending"` // pending calls, in the Context's order
	Open     []int32         `json:"open"`    // streaming messages, in the Context's order
	Tools    []savedToolV1   `json:"tools"`
	Unsound  []int32         `json:"unsound"` // tools, in the Context's order
	Scopes   []savedScopeV1  `json:"scopes"`
	MutAny   int64           `json:"mutAny"`
	MutAll   int64           `json:"mutAll"`
	Steps    []savedStepV1   `json:"steps"`
	Sealed   bool            `json:"sealed"`
	Gone     []savedGoneV1   `json:"gone"`    // oldest first
	Cleared  []savedPrunedV1 `json:"cleared"` // oldest first
	Alerts   []savedAlertV1  `json:"alerts"`
	Ghosts   []savedGhostV1  `json:"ghosts"` // oldest first
	Checks   uint64          `json:"checks"`
	// Lines are the pointers whose lines the Context counts (see
	// Config.PointerTokens), sorted; written only when there are some.
	Lines []savedPointerV1 `json:"pointerLines,omitempty"`
	// ReadEnd is how many of the messages the model has read: those
	// before the first unread one (see Context.Unread). It is written
	// only when the messages do not say it, the model's last message
	// having left; a state without it (as earlier releases wrote) has read
	// the messages up to the model's last (see Context.Append).
	ReadEnd *int32 `json:"readEnd,omitempty"`
}

type savedPointerV1 struct {
	Store str `json:"store"`
	Key   str `json:"key"`
}

type savedConfigV1 struct {
	Boundary     BoundaryMode `json:"boundary"`
	Regen        RegenMode    `json:"regen"`
	TextClass    Class        `json:"textClass"`
	NoTombstones bool         `json:"noTombstones"`
	Ceiling      int          `json:"ceiling"`
	HoardTokens  int          `json:"hoardTokens"`
	StubText     str          `json:"stubText"`
	StubTokens   int          `json:"stubTokens"`
	// PointerTokens is written only when set: state without it reads
	// as before.
	PointerTokens int `json:"pointerTokens,omitempty"`
}

type savedMsgV1 struct {
	ID     str    `json:"id"`
	Role   str    `json:"role"`
	Tokens int    `json:"tokens"`
	Unit   int32  `json:"unit"`
	Body   []byte `json:"body,omitempty"` // the content held: none when stubbed, the stream so far when open
	// Empty says the content is empty but not nil.
	Empty    bool    `json:"empty,omitempty"`
	Open     bool    `json:"open,omitempty"`
	Counted  bool    `json:"counted,omitempty"` // open with no count: the Counter counts it
	Stubbed  bool    `json:"stubbed,omitempty"`
	Pinned   bool    `json:"pinned,omitempty"`
	Class    Class   `json:"class,omitempty"`
	Facts    Facts   `json:"facts,omitempty"`
	Store    str     `json:"store,omitempty"` // the pointer
	Key      str     `json:"key,omitempty"`
	NeededBy []str   `json:"neededBy"`
	Requires []int32 `json:"requires,omitempty"` // tools
	IsError  bool    `json:"isError,omitempty"`
	Calls    []int32 `json:"calls,omitempty"`   // the calls it emits, in order
	Answers  []int32 `json:"answers,omitempty"` // the calls it answers, in order
}

type savedCallV1 struct {
	ID        str    `json:"id"`
	Tool      int32  `json:"tool"`
	Args      []byte `json:"args"` // null when nil
	Ver       uint32 `json:"ver,omitempty"`
	Done      bool   `json:"done,omitempty"`
	Ghost     bool   `json:"ghost,omitempty"`
	Server    bool   `json:"server,omitempty"`
	Abandoned bool   `json:"abandoned,omitempty"`
	// Superseded: the call's message is held, but its id no longer names
	// it, since a later call with the id was made (and may have been
	// pruned since).
	Superseded bool `json:"superseded,omitempty"`
}

// savedUnitV1 is a unit; its members are the messages that name it.
type savedUnitV1 struct {
	Version uint32 `json:"version"`
}

type savedToolV1 struct {
	Name        str         `json:"name"`
	Schema      []byte      `json:"schema"`
	Version     str         `json:"version,omitempty"`
	Annotations Annotations `json:"annotations"`
	Output      Class       `json:"output,omitempty"`
	NoTombstone bool        `json:"noTombstone,omitempty"`
	Family      str         `json:"family,omitempty"`
	Scope       str         `json:"scope,omitempty"`
	Registered  bool        `json:"registered,omitempty"`
	Resident    bool        `json:"resident,omitempty"`
	Tombstoned  bool        `json:"tombstoned,omitempty"`
	Compressed  []byte      `json:"compressed"`
	Lossy       bool        `json:"lossy,omitempty"`
	Ver         uint32      `json:"ver,omitempty"`
	// The counters of [ToolState].
	Reexpansions         int `json:"reexpansions,omitempty"`
	GhostCalls           int `json:"ghostCalls,omitempty"`
	Refetches            int `json:"refetches,omitempty"`
	IrreducibleRefetches int `json:"irreducibleRefetches,omitempty"`
	GhostCopies          int `json:"ghostCopies,omitempty"`
	GhostRejections      int `json:"ghostRejections,omitempty"`
	GhostDetours         int `json:"ghostDetours,omitempty"`
	GhostTriads          int `json:"ghostTriads,omitempty"`
	MismatchedRefetches  int `json:"mismatchedRefetches,omitempty"`
	// The tokens of the schema, the compressed schema and the tombstone,
	// as the Counter counted them.
	SchemaTokens     int                `json:"schemaTokens,omitempty"`
	CompressedTokens int                `json:"compressedTokens,omitempty"`
	TombstoneTokens  int                `json:"tombstoneTokens,omitempty"`
	Last             int64              `json:"last,omitempty"`
	Window           [ghostWindow]int32 `json:"window"` // calls plus one, zero for none
	WindowAt         uint8              `json:"windowAt,omitempty"`
}

type savedScopeV1 struct {
	Name str   `json:"name"`
	Mut  int64 `json:"mut,omitempty"`
}

type savedStepV1 struct {
	ID   str     `json:"id"`
	Refs []int32 `json:"refs"` // messages
}

type savedGoneV1 struct {
	Call      str  `json:"call"`
	Abandoned bool `json:"abandoned,omitempty"`
}

type savedPrunedV1 struct {
	Sig     string      `json:"sig"` // base64
	Class   Class       `json:"class,omitempty"`
	Hash    ContentHash `json:"hash"`
	Message str         `json:"message"`
	Stubbed bool        `json:"stubbed,omitempty"`
}

type savedAlertV1 struct {
	Tool    str         `json:"tool"`
	Call    str         `json:"call"`
	Result  str         `json:"result"`
	Pruned  str         `json:"pruned"`
	Stubbed bool        `json:"stubbed,omitempty"`
	Class   Class       `json:"class,omitempty"`
	Match   bool        `json:"match,omitempty"`
	Was     ContentHash `json:"was"`
	Now     ContentHash `json:"now"`
}

type savedGhostV1 struct {
	Tool        int32 `json:"tool"`
	Open        bool  `json:"open,omitempty"`
	From        str   `json:"from,omitempty"`
	Call        str   `json:"call,omitempty"`
	Copied      str   `json:"copied,omitempty"`
	Missing     []str `json:"missing,omitempty"`
	Stale       []str `json:"stale,omitempty"`
	Rejected    str   `json:"rejected,omitempty"`
	Fields      []str `json:"fields,omitempty"`
	Sibling     str   `json:"sibling,omitempty"`
	SiblingCall str   `json:"siblingCall,omitempty"`
	Reexpanded  bool  `json:"reexpanded,omitempty"`
}

// upgradeV1 reads state of version 1 into the form of version 2.
func upgradeV1(b []byte) (*savedState, error) {
	var v savedStateV1
	if err := strict(b, &v); err != nil {
		return nil, badStateBecause("", "", err)
	}
	if len(v.Messages) > 1<<30 || len(v.Calls) > 1<<30 {
		return nil, badState("", "")
	}
	u := &upgrader{v: &v, callerOf: make([]int32, len(v.Calls)), resultOf: make([]int32, len(v.Calls))}
	for _, step := range []func() error{u.links, u.messages, u.tools, u.order, u.rest} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return &u.s, nil
}

// upgrader reads a state of version 1.
type upgrader struct {
	v                  *savedStateV1
	s                  savedState
	callerOf, resultOf []int32 // each call's message and result, or none
}

func (u *upgrader) tool(i int32) (str, bool) {
	if i < 0 || int(i) >= len(u.v.Tools) {
		return "", false
	}
	return u.v.Tools[i].Name, true
}

// links finds the message that makes each call and the one that answers
// it, checking that each is one.
func (u *upgrader) links() error {
	v := u.v
	for k := range u.callerOf {
		u.callerOf[k], u.resultOf[k] = none, none
	}
	nk := int32(len(v.Calls))
	for p, m := range v.Messages {
		for _, k := range m.Calls {
			if k < 0 || k >= nk || u.callerOf[k] != none {
				return badStateBecause("messages", string(m.ID), "a call out of range, or made twice")
			}
			u.callerOf[k] = int32(p)
		}
		for _, k := range m.Answers {
			if k < 0 || k >= nk || u.resultOf[k] != none {
				return badStateBecause("messages", string(m.ID), "an answer out of range, or given twice")
			}
			u.resultOf[k] = int32(p)
		}
	}
	for k, caller := range u.callerOf {
		if caller == none {
			return badStateBecause("calls", string(v.Calls[k].ID), "no message makes it")
		}
	}
	return nil
}

// callRef names call k.
func (u *upgrader) callRef(k int32) *savedCallRef {
	return &savedCallRef{Message: u.v.Messages[u.callerOf[k]].ID, Call: u.v.Calls[k].ID}
}

// messages reads the messages and their calls.
func (u *upgrader) messages() error {
	v := u.v
	for _, m := range v.Messages {
		sm := savedMessage{
			ID: m.ID, Role: m.Role, Tokens: m.Tokens, Open: m.Open, Counted: m.Counted && m.Open, Pinned: m.Pinned,
			Class: className(m.Class), Facts: factNames(m.Facts), IsError: m.IsError, Stubbed: m.Stubbed,
		}
		if len(m.Body) > 0 || m.Empty && !m.Stubbed {
			sm.Content = optStr(append([]byte{}, m.Body...))
		}
		if m.Store != "" || m.Key != "" {
			sm.Pointer = &savedPointer{Store: m.Store, Key: m.Key}
		}
		if m.NeededBy != nil {
			ids := slices.Clone(m.NeededBy)
			sm.NeededBy = &ids
		}
		for _, t := range m.Requires {
			name, ok := u.tool(t)
			if !ok {
				return badStateBecause("messages", string(m.ID), "requires a tool out of range")
			}
			sm.Requires = append(sm.Requires, name)
		}
		for _, k := range m.Calls {
			sc, err := u.call(k)
			if err != nil {
				return err
			}
			sm.Calls = append(sm.Calls, sc)
		}
		for _, k := range m.Answers {
			sm.Answers = append(sm.Answers, v.Calls[k].ID)
		}
		u.s.Messages = append(u.s.Messages, sm)
	}
	return nil
}

// call reads call k.
func (u *upgrader) call(k int32) (savedCall, error) {
	c := &u.v.Calls[k]
	name, ok := u.tool(c.Tool)
	if !ok {
		return savedCall{}, badStateBecause("calls", string(c.ID), "a tool out of range")
	}
	sc := savedCall{
		ID: c.ID, Tool: name, Args: optStr(c.Args), Server: c.Server, State: callPending, Ghost: c.Ghost,
		Stale: c.Ver < u.v.Tools[c.Tool].Ver,
	}
	switch {
	case c.Abandoned:
		sc.State = callAbandoned
	case c.Done:
		sc.State = callAnswered
	}
	// Version 1 says superseded of a call a later call held took the id
	// from too; version 2 only of one whose id names no call.
	if c.Superseded {
		sc.Superseded = !slices.ContainsFunc(u.v.Calls[k+1:], func(o savedCallV1) bool { return o.ID == c.ID })
	}
	return sc, nil
}

// tools reads the tools, sorted by name.
func (u *upgrader) tools() error {
	for _, t := range u.v.Tools {
		st := savedTool{
			Name: t.Name, Registered: t.Registered, Migrations: t.Ver, Withdrawn: !t.Resident,
			Compressed: optStr(t.Compressed), Tombstoned: t.Tombstoned, SchemaTokens: t.SchemaTokens,
			Reexpansions: t.Reexpansions, GhostCalls: t.GhostCalls, Refetches: t.Refetches,
			IrreducibleRefetches: t.IrreducibleRefetches, GhostCopies: t.GhostCopies, GhostRejections: t.GhostRejections,
			GhostDetours: t.GhostDetours, GhostTriads: t.GhostTriads, MismatchedRefetches: t.MismatchedRefetches,
		}
		if t.Registered {
			st.Schema, st.Version, st.Annotations = optStr(t.Schema), t.Version, t.Annotations
			st.Output, st.NoTombstone, st.Family, st.Scope = className(t.Output), t.NoTombstone, t.Family, t.Scope
		}
		if t.Compressed != nil {
			st.CompressedTokens = t.CompressedTokens
		}
		if t.Tombstoned {
			st.TombstoneTokens = t.TombstoneTokens
		}
		if err := u.recent(&st, &t); err != nil {
			return err
		}
		if err := u.last(&st, t.Last); err != nil {
			return err
		}
		u.s.Tools = append(u.s.Tools, st)
	}
	slices.SortFunc(u.s.Tools, func(a, b savedTool) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return nil
}

// recent reads a tool's window of calls, oldest first.
func (u *upgrader) recent(st *savedTool, t *savedToolV1) error {
	if t.WindowAt >= ghostWindow {
		return badStateBecause("tools", string(t.Name), "a window out of range")
	}
	for j := range ghostWindow {
		e := t.Window[(int(t.WindowAt)+j)%ghostWindow]
		if e < 0 || int(e) > len(u.v.Calls) {
			return badStateBecause("tools", string(t.Name), "a window out of range")
		}
		var ref *savedCallRef
		if e != 0 {
			ref = u.callRef(e - 1)
		}
		if ref != nil || len(st.Recent) > 0 {
			st.Recent = append(st.Recent, ref)
		}
	}
	return nil
}

// last reads the mark of a tool's latest call: when the call is no
// longer held, where it came.
func (u *upgrader) last(st *savedTool, m int64) error {
	nk := int64(len(u.v.Calls))
	switch {
	case m < 0 || m > 2*nk+1:
		return badStateBecause("tools", string(st.Name), "a mark out of range")
	case m == 0 || m%2 == 0:
		return nil // none, or a call held: the calls say it
	}
	st.PrunedLast = &savedAfter{}
	if k := int32((m-1)/2) - 1; k >= 0 {
		st.PrunedLast.After = u.callRef(k)
	}
	return nil
}

// order finds the closes and the couplings from the calls' order and
// the units.
func (u *upgrader) order() error {
	v := u.v
	t := &transcript{units: int32(len(v.Units))}
	seen := make(map[string]bool, len(v.Calls))
	for _, m := range v.Messages {
		if m.Unit < 0 || int(m.Unit) >= len(v.Units) {
			return badStateBecause("messages", string(m.ID), "a unit out of range")
		}
		t.ids = append(t.ids, m.ID)
		t.unit = append(t.unit, m.Unit)
	}
	// Each unit has members, and the units are listed in the order of
	// their first member.
	next := int32(0)
	for _, u := range t.unit {
		if u > next {
			return badState("units", "")
		}
		if u == next {
			next++
		}
	}
	if int(next) != len(v.Units) {
		return badState("units", "")
	}
	for k, c := range v.Calls {
		id := string(c.ID)
		if seen[id] {
			if t.reused == nil {
				t.reused = make(map[string]bool)
			}
			t.reused[id] = true
		}
		seen[id] = true
		t.calls = append(t.calls, tcall{caller: u.callerOf[k], result: u.resultOf[k], id: id})
	}
	u.s.Closes = t.savedCloses()
	u.s.Couplings = t.savedCouplings()
	return nil
}

// rest reads the steps, what the model read and what the Context
// remembers.
func (u *upgrader) rest() error {
	v, s := u.v, &u.s
	s.Format, s.Version = stateFormat, stateVersion
	s.Config = savedConfig{
		Boundary: boundaryName(v.Config.Boundary), Regen: regenName(v.Config.Regen), TextClass: className(v.Config.TextClass),
		NoTombstones: v.Config.NoTombstones, Ceiling: v.Config.Ceiling, HoardTokens: v.Config.HoardTokens,
		StubText: v.Config.StubText, StubTokens: v.Config.StubTokens, PointerTokens: v.Config.PointerTokens,
	}
	if r := v.ReadEnd; r != nil {
		if *r <= 0 || int(*r) > len(v.Messages) {
			return badState("readEnd", "")
		}
		s.ReadThrough = v.Messages[*r-1].ID
	}
	for _, st := range v.Steps {
		refs := slices.Clone(st.Refs)
		slices.Sort(refs)
		step := savedStep{ID: st.ID}
		for _, p := range slices.Compact(refs) {
			if p < 0 || int(p) >= len(v.Messages) {
				return badStateBecause("steps", string(st.ID), "a message out of range")
			}
			step.Needs = append(step.Needs, v.Messages[p].ID)
		}
		s.Steps = append(s.Steps, step)
	}
	s.Sealed, s.Checks = v.Sealed, v.Checks
	for _, l := range v.Lines {
		s.Lines = append(s.Lines, savedPointer(l))
	}
	return u.memory()
}

// memory reads what the Context remembers.
func (u *upgrader) memory() error {
	v, s := u.v, &u.s.Memory
	for _, g := range v.Gone {
		s.PrunedCalls = append(s.PrunedCalls, &savedGone{Call: g.Call, Abandoned: g.Abandoned})
	}
	for _, pr := range v.Cleared {
		sig, err := base64.StdEncoding.DecodeString(pr.Sig)
		if err != nil {
			return badStateBecause("cleared", "", err)
		}
		s.PrunedResults = append(s.PrunedResults, &savedPruned{
			Signature: hexBytes(sig), Class: className(pr.Class), Hash: hexHash(pr.Hash), Message: pr.Message, Stubbed: pr.Stubbed,
		})
	}
	for _, a := range v.Alerts {
		s.Alerts = append(s.Alerts, savedAlert{
			Tool: a.Tool, Call: a.Call, Result: a.Result, Pruned: a.Pruned, Stubbed: a.Stubbed,
			Class: className(a.Class), Match: a.Match, Was: hexHash(a.Was), Now: hexHash(a.Now),
		})
	}
	for _, g := range v.Ghosts {
		name, ok := u.tool(g.Tool)
		if !ok {
			return badState("ghosts", "")
		}
		s.Ghosts = append(s.Ghosts, savedGhost{
			Tool: name, Open: g.Open, From: g.From, Call: g.Call, Copied: g.Copied, Missing: g.Missing, Stale: g.Stale,
			Rejected: g.Rejected, Fields: g.Fields, Sibling: g.Sibling, SiblingCall: g.SiblingCall, Reexpanded: g.Reexpanded,
		})
	}
	return nil
}

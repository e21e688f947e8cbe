package pruneguard

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Annotations are the MCP tool annotations (spec 2025-03-26 and later).
// A nil field takes the spec's default: not read-only, destructive, not
// idempotent, open world. Those defaults are pessimistic on purpose: a
// tool nobody described counts as mutating, and its outputs as
// irreducible. MCP calls annotations hints that must not be trusted from
// untrusted servers; pass them on only from servers you trust.
//
// The zero Annotations take every default: a tool described by nothing else
// counts as mutating, and its results as irreducible.
type Annotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

// ReadOnly reports readOnlyHint with its default (false).
func (a Annotations) ReadOnly() bool { return hint(a.ReadOnlyHint, false) }

// Destructive reports destructiveHint with its default (true). A read-only
// tool is never destructive.
func (a Annotations) Destructive() bool { return !a.ReadOnly() && hint(a.DestructiveHint, true) }

// Idempotent reports idempotentHint with its default (false). A read-only
// tool is always idempotent.
func (a Annotations) Idempotent() bool { return a.ReadOnly() || hint(a.IdempotentHint, false) }

// OpenWorld reports openWorldHint with its default (true).
func (a Annotations) OpenWorld() bool { return hint(a.OpenWorldHint, true) }

// SideEffects reports whether the hints say a call's result records a
// side effect: the tool is destructive or not idempotent, with MCP's
// defaults (so any tool that is not read-only, unless annotated both
// non-destructive and idempotent). A blanket [Oracle] cannot lift the
// class of such a tool's results; [Tool.Output] or [Message.Class] can.
func (a Annotations) SideEffects() bool { return a.Destructive() || !a.Idempotent() }

func hint(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

// Bool returns a pointer to b, for filling [Annotations].
func Bool(b bool) *bool { return &b }

// Tool describes one tool the model may call: its schema, whether calling
// it changes the world, and whether its outputs can be obtained again.
//
// The zero Tool has no Name, which RegisterTool refuses.
type Tool struct {
	// Name is the tool's name as calls give it. Required.
	Name string
	// Schema is the tool's input JSON Schema as the prompt carries it.
	Schema json.RawMessage
	// Version names the schema's version. Registering the tool again with
	// another version (or, when both versions are empty, another schema)
	// is a migration: arguments of calls made before it are stale.
	Version string
	// Annotations decide mutation and, with Output unset, the class of the
	// tool's results.
	Annotations Annotations
	// Output, when set, is the regenerability class of the tool's results,
	// overriding the one derived from Annotations. It is the one choice
	// that may make the results of a tool with side effects
	// ([Annotations.SideEffects]) reconstructible for every call: a
	// blanket [Oracle] cannot (see [Oracle]).
	Output Class
	// NoTombstone says the runtime cannot insert a tombstone for this tool.
	// Withdrawing a mutation tool's schema while its arguments stay is then
	// refused.
	NoTombstone bool
	// Family names the group of tools that act on the same thing (say
	// "incident" for create_incident and update_incident), for the
	// ghost-tool detector: a call that turns to a sibling tool while the
	// tool's schema is missing is a detour (see [GhostEvidence]). Tools
	// that both have a Family are siblings when their Families are equal;
	// otherwise when their names end in the same word (see [Siblings]).
	Family string
	// Scope names what the tool reads or writes (a directory, a table, a
	// service); empty means everything. Two scopes overlap when they are
	// equal or either is empty. A read result stops being reconstructible
	// once a mutating call of an overlapping scope is made after the call
	// that produced it, or in the same batch (see [Context.ClassOf]).
	Scope string
	// ScopeArgs names the arguments of a call (members of its JSON
	// object) that say which resource within the Scope it reads or
	// writes, as a '/'-separated path: "path" for a file tool. A mutating
	// call whose arguments hold each as a string touches only those
	// paths, and stales only the reads of an overlapping one: the same
	// path once cleaned ("notes/./a.txt" is "notes/a.txt"), a path inside
	// it, or a directory holding it (a write to notes/b.txt leaves a read
	// of notes/a.txt reconstructible; a write to notes, or a read of it,
	// does not); an absolute and a relative path always overlap. A read
	// whose arguments name its paths is staled only by writes that touch
	// them, or that touch all of an overlapping scope. A call whose
	// arguments lack one, hold one twice or not as a string, or are not
	// an object, touches all of its Scope, as does every call of a tool
	// with no ScopeArgs: the default is today's rule.
	ScopeArgs []string
}

// Mutating reports whether calling the tool may change its environment
// (MCP: not read-only).
func (t Tool) Mutating() bool { return !t.Annotations.ReadOnly() }

// OutputClass returns the regenerability class of the tool's results as
// the tool is described, before any call: Output when set; otherwise
// [Reconstructible] for a pure tool, one that is read-only and
// closed-world, and [Irreducible] for every other (a mutating tool, even
// an idempotent one, or an open-world one). A Context raises the class of
// one result of a read-only tool to Irreducible once a mutating call of
// an overlapping [Tool.Scope] is made after the call that produced it or
// in the same batch: re-reading would no longer give the same bytes.
func (t Tool) OutputClass() Class {
	if t.Output != ClassUnset {
		return t.Output
	}
	a := t.Annotations
	if a.ReadOnly() && !a.OpenWorld() {
		return Reconstructible
	}
	return Irreducible
}

// Tombstone is the one-line note a runtime inserts in the prompt when a
// tool's schema leaves while arguments of earlier calls to it stay: it
// tells the model the tool exists and must be asked for before use.
//
// The zero Tombstone names no tool.
type Tombstone struct {
	Tool     string
	Mutating bool
	// Stale lists surviving calls made under an older schema version.
	Stale []CallID
	Text  string
}

// ToolState is the guard's record of one tool.
//
// The zero ToolState describes a tool the Context does not know.
type ToolState struct {
	Tool Tool
	// Registered is false for tools known only from calls.
	Registered bool
	// Resident reports whether the schema is in the prompt.
	Resident bool
	// Tombstoned reports whether a tombstone stands in for the schema.
	Tombstoned bool
	// Compressed holds the compressed schema in the prompt, if any.
	Compressed json.RawMessage
	// Args counts calls to the tool whose arguments are in the Context.
	Args int
	// Stale counts those made under an older schema version.
	Stale int
	// Reexpansions counts [Context.RequestTool] calls for the tool while it
	// was tombstoned: how often the model asked for a withdrawn schema.
	Reexpansions int
	// GhostCalls counts calls the model made to the tool while its schema
	// was not shown whole: withdrawn, compressed with losses, or behind a
	// tombstone.
	GhostCalls int
	// Refetches counts the results fetched again after pruning: a closed
	// result for a call whose signature (tool and arguments, see
	// [RefetchAlert]) matches a call whose result was pruned or stubbed,
	// while no result for that signature was left in the prompt. Each is
	// also queued as a [RefetchAlert]. IrreducibleRefetches counts those
	// whose pruned result was classed irreducible, which only a gate
	// switched off or a bad classification lets happen: alert on it.
	Refetches            int
	IrreducibleRefetches int

	// Ghost reports that arguments of calls to the tool, or messages that
	// require it ([Message.Requires]), are in the Context while its
	// schema is not shown whole (withdrawn, or compressed with losses)
	// and, for the arguments, no tombstone stands for it. The next
	// decision repairs it with a tombstone, or Prune refuses (see
	// [Context.Prune]); a read-only tool that cannot be tombstoned is
	// left so, as it fails closed.
	Ghost bool
	// Required counts the messages in the Context that require the
	// tool's schema ([Message.Requires]).
	Required int
	// GhostCopies, GhostRejections and GhostDetours count the legs of the
	// ghost-tool triad seen for the tool (see [GhostEvidence]): calls
	// rebuilt from earlier arguments while the schema was not shown,
	// validation errors naming its fields reported for calls made so, and
	// calls routed to a sibling tool instead of asking for the schema
	// back. GhostTriads counts the episodes in which all three were seen.
	GhostCopies, GhostRejections, GhostDetours, GhostTriads int
	// MismatchedRefetches counts the refetches whose new result differs
	// from the content that was pruned (see [RefetchAlert]).
	MismatchedRefetches int
	// Tokens is what the tool adds to [Context.Tokens]: its schema (or
	// compressed schema) while it is in the prompt, and its tombstone
	// while one stands, as Config.Counter counts them (zero without one).
	Tokens int
}

type toolRec struct {
	t          Tool
	registered bool
	resident   bool
	tombstoned bool
	compressed json.RawMessage
	ver        uint32
	args       int   // calls to the tool whose caller the Context holds
	head, tail int32 // the tool's calls in call order, linked by nextTool
	reexpand   int
	ghostCalls int

	refetches            int
	irreducibleRefetches int

	// lossy says the compressed schema loses constraints of the
	// registered one: the schema is not shown whole.
	lossy bool
	// unsound is the tool's place in Context.unsound plus one, or zero.
	unsound int32
	// reqBy are the messages that require the schema, by position.
	reqBy []int32
	// props maps the properties of the registered schema to the JSON
	// kinds their declared type admits (zero: any).
	props map[string]uint8
	// window holds the tool's last calls, by index plus one, a ring
	// whose next slot is windowAt.
	window   [ghostWindow]int32
	windowAt uint8
	// ep is the tool's open ghost episode, or nil.
	ep *ghostEpisode

	ghostCopies, ghostRejections, ghostDetours, ghostTriads int
	mismatchedRefetches                                     int

	// Tokens: of the registered schema, of the compressed one, of the
	// standing tombstone, and what the tool adds to Context.Tokens now.
	schemaTok, compTok, tombTok, held int
	// last is the mark of the tool's latest call, or 0; scope is one more
	// than the index of its scope in Context.scopes, or 0 for the empty
	// scope (see regen_scope.go).
	last  int64
	scope int32
}

// tool returns the index of the record of name, creating an unregistered
// one.
func (c *Context) tool(name string) int32 {
	if t, ok := c.toolIdx[name]; ok {
		return t
	}
	c.tools = append(c.tools, toolRec{t: Tool{Name: name}, resident: true, head: none, tail: none})
	t := int32(len(c.tools) - 1)
	c.toolIdx[name] = t
	return t
}

// toolRec returns the record of name, or nil.
func (c *Context) toolRec(name string) *toolRec {
	if t, ok := c.toolIdx[name]; ok {
		return &c.tools[t]
	}
	return nil
}

// RegisterTool adds a tool to the registry with its schema resident, or
// updates it. A changed Version (or schema, when no versions are given)
// is a migration: calls already in the Context become stale. A schema
// whose count (Config.Counter) would take [Context.Tokens] past the
// largest int is refused with [ErrTokenOverflow], changing nothing. With
// Config.HoardTokens set, an update that changes how results are classed
// (the tool's output class, whether it is read-only, or its scope) after
// calls to it were made judges every message again for hoarding, in time
// proportional to the Context (see [HoardMode]).
func (c *Context) RegisterTool(t Tool) error {
	if t.Name == "" {
		return inputErr("register tool", "", ErrEmptyID)
	}
	if len(t.Schema) > 0 && !json.Valid(t.Schema) {
		return inputErr("register tool", t.Name, ErrBadSchema)
	}
	t.Schema = slices.Clone(t.Schema)
	t.ScopeArgs = slices.Clone(t.ScopeArgs)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if !c.registrationFits(t) {
		return inputErr("register tool", t.Name, ErrTokenOverflow)
	}
	same, reclass := false, false
	if _, ok := c.toolIdx[t.Name]; !ok {
		c.tools = append(c.tools, toolRec{t: t, registered: true, resident: true, head: none, tail: none})
		c.toolIdx[t.Name] = int32(len(c.tools) - 1)
	} else {
		r := c.toolRec(t.Name)
		same = r.registered && bytes.Equal(r.t.Schema, t.Schema) && r.compressed == nil
		if r.registered && migrated(r.t, t) {
			r.ver++
			// A compression of the old schema says nothing of the new one.
			r.compressed = nil
		}
		reclass = r.last != 0 && classKey(r.t) != classKey(t)
		r.t = t
		r.registered = true
	}
	c.setScope(c.toolRec(t.Name), reclass)
	c.registered(c.toolIdx[t.Name], same)
	if reclass {
		// The results of its calls, or the reads its calls made stale,
		// may have changed class: hoarding judges them again.
		c.retrackLarge()
	}
	c.epoch++
	return nil
}

// registrationFits reports whether what the tools add to the tokens
// held fits an int once t is registered: its schema counted, and a
// compression kept from before, while resident, with its tombstone.
func (c *Context) registrationFits(t Tool) bool {
	after := toolRec{resident: true, schemaTok: c.count(t.Schema)}
	held := 0
	if r := c.toolRec(t.Name); r != nil {
		after.resident, after.tombstoned, after.tombTok = r.resident, r.tombstoned, r.tombTok
		if r.compressed != nil && !(r.registered && migrated(r.t, t)) {
			after.compressed, after.compTok = r.compressed, c.count(r.compressed)
		}
		held = r.held
	}
	n := heldBy(&after)
	return !n.over && c.fits(n.n-held)
}

// toolClassKey is what of a tool decides the class of results: of its
// own calls, and of the reads its calls make stale.
type toolClassKey struct {
	output    Class
	readOnly  bool
	scope     string
	scopeArgs string
	hints     bool // the side-effect hints that bind an Oracle
}

func classKey(t Tool) toolClassKey {
	return toolClassKey{output: t.OutputClass(), readOnly: t.Annotations.ReadOnly(), scope: t.Scope,
		scopeArgs: strings.Join(t.ScopeArgs, "\x00"), hints: t.Annotations.SideEffects()}
}

func migrated(old, new Tool) bool {
	if old.Version != "" || new.Version != "" {
		return old.Version != new.Version
	}
	return !bytes.Equal(old.Schema, new.Schema)
}

// Tool returns the guard's record of a tool.
func (c *Context) Tool(name string) (ToolState, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r := c.toolRec(name)
	if r == nil {
		return ToolState{}, false
	}
	return c.toolState(r), true
}

// Tools returns the records of every tool, sorted by name.
func (c *Context) Tools() []ToolState {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]ToolState, 0, len(c.tools))
	for i := range c.tools {
		out = append(out, c.toolState(&c.tools[i]))
	}
	slices.SortFunc(out, func(a, b ToolState) int { return strings.Compare(a.Tool.Name, b.Tool.Name) })
	return out
}

func (c *Context) toolState(r *toolRec) ToolState {
	s := ToolState{
		Tool: r.t, Registered: r.registered, Resident: r.resident, Tombstoned: r.tombstoned,
		Compressed: r.compressed, Args: r.args, Reexpansions: r.reexpand, GhostCalls: r.ghostCalls,
		Refetches: r.refetches, IrreducibleRefetches: r.irreducibleRefetches,
		Ghost: r.unsound != 0, Required: len(r.reqBy),
		GhostCopies: r.ghostCopies, GhostRejections: r.ghostRejections, GhostDetours: r.ghostDetours, GhostTriads: r.ghostTriads,
		MismatchedRefetches: r.mismatchedRefetches, Tokens: r.held,
	}
	if r.ver > 0 {
		s.Stale = len(c.staleCalls(r))
	}
	return s
}

// StaleCalls returns the calls to a tool, still in the Context, that were
// made under an older version of its schema. Their arguments may not fit
// the current schema; a model copying them would send stale values.
func (c *Context) StaleCalls(tool string) []CallID {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r := c.toolRec(tool)
	if r == nil {
		return nil
	}
	return c.staleCalls(r)
}

func (c *Context) staleCalls(r *toolRec) []CallID {
	if r.ver == 0 || r.args == 0 {
		return nil
	}
	return c.callIDs(r, func(k int32) bool { return c.call(k).ver < r.ver })
}

// callIDs returns the ids of the tool's calls in the Context that keep
// passes, in the order the calls were made. It costs time in proportion
// to the tool's calls (and those pruned since the last compaction), not
// to the Context.
func (c *Context) callIDs(r *toolRec, keep func(k int32) bool) []CallID {
	var ks []int32
	for k := r.head; k != none; k = c.call(k).nextTool {
		if c.call(k).flags&cArgsMade != 0 && keep(k) {
			ks = append(ks, k)
		}
	}
	return c.sortedCallIDs(ks)
}

// RequestTool records that the model asked for a tool's schema back and
// makes the schema resident again, whole, which ends the tool's
// ghost-tool episode ([GhostEvidence.Reexpanded]). It reports whether the
// tool was tombstoned: a true answer is the diagnostic signal that
// pruning took a schema the model still needed. When the schema was not
// shown whole (withdrawn, tombstoned or compressed), the request waits
// in the Context, the 256 latest, for the next check of a [Guard] with a
// Logger, which writes a LogReexpansion record for it; [Context.Save]
// keeps the requests waiting. A schema whose count would take
// [Context.Tokens] past the largest int stays out, and the request fails
// with [ErrTokenOverflow].
func (c *Context) RequestTool(name string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	r := c.toolRec(name)
	if r == nil {
		return false, inputErr("request tool", name, ErrUnknownTool)
	}
	if !c.fits(r.schemaTok - r.held) {
		return false, inputErr("request tool", name, ErrTokenOverflow)
	}
	was := r.tombstoned
	if was {
		r.reexpand++
	}
	if !r.resident || r.tombstoned || r.compressed != nil {
		c.reexpanded(reexpansion{tool: name, tombstoned: was, withdrawn: !r.resident})
	}
	r.resident, r.tombstoned, r.compressed = true, false, nil
	c.requested(c.toolIdx[name])
	c.epoch++
	return was, nil
}

// reexpansion is a schema the model asked back ([Context.RequestTool])
// while it was not shown whole, waiting for a Guard with a Logger.
type reexpansion struct {
	tool       string
	tombstoned bool // a tombstone stood in for the schema
	withdrawn  bool // the schema was out of the prompt (else compressed)
}

// reexpBound is how many re-expansions wait for a check with a Logger;
// beyond it the oldest are dropped (ToolState.Reexpansions keeps
// counting the tombstoned ones).
const reexpBound = 256

// reexpanded queues e for the next check with a Logger.
func (c *Context) reexpanded(e reexpansion) {
	if len(c.reexp) == reexpBound {
		c.reexp = slices.Delete(c.reexp, 0, 1)
	}
	c.reexp = append(c.reexp, e)
}

// takeReexpansions returns the re-expansions waiting, in the order made,
// and empties the queue.
func (c *Context) takeReexpansions() []reexpansion {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.reexp
	c.reexp = nil
	return out
}

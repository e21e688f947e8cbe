package wire

import (
	"slices"

	"github.com/pruneguard/pruneguard"
)

// A history read one message at a time, as the provider reads it: which
// call each result answers, which calls can no longer be answered, which
// messages go in one unit, which user messages are real, and what class
// the wire knows better than the Context. [Body.Bind] runs it over a
// body it holds whole, [Session] over messages as they come; both get the
// same pairing, units, pins and classes from it.

// tracker pairs results with calls by each dialect's adjacency rules, the
// ones [Validate] checks, never by a global id map: real agents reuse
// call ids. Calls are named by keys the caller gives (the tracker only
// compares their wire ids); results are answered with those keys.
type tracker struct {
	p         *provider
	continues bool // Responses: the input continues what the server holds

	// Chat: the calls of the assistant message whose block of tool
	// messages is open.
	block   []tcall
	inBlock bool

	// Anthropic: the role of the current turn, and the calls of the last
	// assistant turn while it or the user turn after it lasts.
	role      string
	turnCalls []tcall
	answering bool // the current turn is the user turn after an assistant turn

	// Gemini, Bedrock: the calls of the previous message, and a spare
	// buffer for the next one's.
	prev, spare []tcall

	// Responses: every call in order, the unanswered ones by kind and id,
	// and the last message that closes the model's turn.
	calls   []tcall
	queue   map[[2]string][]int
	n       int // messages added
	barrier int

	st step // the step of the message being added
}

// tcall is a call the tracker follows.
type tcall struct {
	key  int32
	id   string
	typ  string // Responses: the call item's type
	msg  int    // Responses: the message's position among those added
	done bool
}

// step is what the tracker makes of one message.
type step struct {
	// answers lists, for each result of the message in order, the key of
	// the call it answers, or -1 for a result that answers none.
	answers []int32
	// closed lists the keys of earlier calls that can no longer be
	// answered: the block or turn they waited in has ended.
	closed []int32
	// stored reports a Responses item that refers to what the server
	// holds: an item_reference, or an output answering a call it holds.
	stored bool
}

// unanswered counts the results of s that answer no call.
func (s *step) unanswered() int {
	n := 0
	for _, k := range s.answers {
		if k < 0 {
			n++
		}
	}
	return n
}

func newTracker(d Dialect, continues bool) *tracker {
	return &tracker{p: d.provider(), continues: continues, barrier: -1, queue: map[[2]string][]int{}}
}

// clone returns a copy of t that reads on without changing t.
func (t *tracker) clone() *tracker {
	c := *t
	c.block, c.turnCalls = slices.Clone(t.block), slices.Clone(t.turnCalls)
	c.prev, c.spare, c.calls = slices.Clone(t.prev), slices.Clone(t.spare), slices.Clone(t.calls)
	c.queue = make(map[[2]string][]int, len(t.queue))
	for k, q := range t.queue {
		c.queue[k] = slices.Clone(q)
	}
	c.st = step{}
	return &c
}

// add reads the next message, whose calls the caller names with keys, in
// order.
func (t *tracker) add(f *facts, keys []int32) step {
	var s step
	if f.nresults > 0 {
		s.answers = make([]int32, 0, f.nresults)
	}
	// The table fills the tracker's own step, so that handing it over
	// costs no allocation; f must not be a local variable of the caller
	// for the same reason.
	t.st = s
	t.p.track(t, f, keys, &t.st)
	s, t.st = t.st, step{}
	t.n++
	return s
}

// finish returns the keys of the calls that will never be answered, now
// that the history ends: unanswered calls that are not the trailing
// batch still waiting for its results. In Responses an MCP approval
// request among them may legitimately stay unanswered; report says so.
func (t *tracker) finish() (closed []int32, report func(key int32) bool) {
	if t.p.finish != nil {
		return t.p.finish(t)
	}
	return nil, reportAll
}

// reportAll reports every call that will never be answered.
func reportAll(int32) bool { return true }

// callsOf lists the calls of f with the caller's keys.
func callsOf(f *facts, keys []int32) []tcall { return appendCalls(nil, f, keys) }

// appendCalls appends the calls of f with the caller's keys to out.
func appendCalls(out []tcall, f *facts, keys []int32) []tcall {
	if f.ncalls == 0 {
		return out
	}
	f.eachCall(func(k int, p *fpart) {
		key := int32(-1)
		if k < len(keys) {
			key = keys[k]
		}
		out = append(out, tcall{key: key, id: p.id, typ: f.typ})
	})
	return out
}

// openKeys returns the keys of the calls not answered.
func openKeys(cs []tcall) []int32 {
	var out []int32
	for _, c := range cs {
		if !c.done {
			out = append(out, c.key)
		}
	}
	return out
}

// answer marks the first unanswered call of cs with id answered and
// returns its key.
func answer(cs []tcall, id string) (int32, bool) {
	for i := range cs {
		if !cs[i].done && cs[i].id == id {
			cs[i].done = true
			return cs[i].key, true
		}
	}
	return -1, false
}

// adjacent pairs the results of a message with the calls of the message
// right before it (Gemini, Bedrock): by id, or, with byPosition, in order
// when a call or a result carries no id. anyRole lets a message of any
// role answer; otherwise only a user message does.
func (t *tracker) adjacent(f *facts, keys []int32, s *step, anyRole, byPosition bool) {
	prev := t.prev
	t.prev, t.spare = appendCalls(t.spare[:0], f, keys), prev
	if len(prev) == 0 || !(anyRole || f.role == "user") || f.nresults == 0 {
		for range f.nresults {
			s.answers = append(s.answers, -1)
		}
		s.closed = openKeys(prev)
		return
	}
	byPos := byPosition && !allIDs(prev, f)
	r := 0
	for _, p := range f.parts {
		if p.kind != PartResult {
			continue
		}
		k := int32(-1)
		switch {
		case byPos:
			if r < len(prev) && !prev[r].done {
				prev[r].done = true
				k = prev[r].key
			}
		default:
			k, _ = answer(prev, p.id)
		}
		s.answers = append(s.answers, k)
		r++
	}
	s.closed = openKeys(prev)
}

// allIDs reports whether every call and every result of f carries an id.
func allIDs(calls []tcall, f *facts) bool {
	for _, c := range calls {
		if c.id == "" {
			return false
		}
	}
	for _, p := range f.parts {
		if p.kind == PartResult && p.id == "" {
			return false
		}
	}
	return true
}

// ---- what the tracker's callers share -------------------------------------

// coupled reports whether message f goes in one unit with prev, the
// message before it, as the provider's table says.
func coupled(p *provider, prev, f *facts) bool {
	return prev != nil && p.coupled != nil && p.coupled(prev, f)
}

// coupledTurns is the coupling of the providers whose history is turns:
// the messages of one turn, and an assistant turn with the turn after
// it, so that a cut keeps roles alternating. prev and cur are the sides
// ("user" or "assistant") of the two messages.
func coupledTurns(prev, cur string) bool { return prev == cur || prev == "assistant" }

// realUser reports a user message that is not (only) tool results.
func (p *provider) realUser(f *facts) bool { return f.nresults == 0 && p.userMessage(f.role, f.typ) }

// closesTurn reports a message after which calls still waiting for their
// results are a trailing batch: one that carries results, or a user
// message (what Responses calls its barrier).
func (p *provider) closesTurn(f *facts) bool { return f.nresults > 0 || p.userMessage(f.role, f.typ) }

// userRole reports the role "user".
func userRole(role, _ string) bool { return role == "user" }

// isSystem reports a system or developer message, which is pinned.
func isSystem(f *facts) bool { return f.role == "system" || f.role == "developer" }

// coreRole maps a provider message to a Context role. The model's own
// messages (an assistant or model turn, a call item, a reasoning item, a
// Responses item the provider ran within the model's turn) take a role
// of the model's, so that the Context knows what the model has read: the
// messages before its last one.
func coreRole(f *facts) pruneguard.Role {
	switch {
	case isSystem(f):
		return pruneguard.RoleSystem
	case f.typ == "reasoning":
		return pruneguard.RoleReasoning
	case f.nresults > 0:
		return pruneguard.RoleTool
	case f.role == "assistant" || f.role == "model" || f.ncalls > 0 || f.server && f.role == "":
		return pruneguard.RoleAssistant
	case f.role == "user":
		return pruneguard.RoleUser
	case f.role != "":
		return pruneguard.Role(f.role)
	}
	return pruneguard.Role(f.typ)
}

// coreContent is the Content the Context is given for a message: the
// prose of an assistant message that also makes calls (its text parts),
// so that the Context tells the model's words from a message of calls
// alone; what a failed result reports (its content's JSON), which the
// ghost-tool detector reads for the fields a validation error names;
// nothing for any other message, whose class does not hang on it.
func coreContent(f *facts) []byte {
	if f.failed {
		return f.errorText()
	}
	if (f.ncalls == 0 && !f.serverCalls()) || coreRole(f) != pruneguard.RoleAssistant {
		return nil
	}
	return f.text()
}

// clientCalls returns calls without those the provider ran ([Call.Server]):
// a Context holds no outcome to write for them, so a message written from
// events leaves them out.
func clientCalls(calls []pruneguard.Call) []pruneguard.Call {
	if !slices.ContainsFunc(calls, func(c pruneguard.Call) bool { return c.Server }) {
		return calls
	}
	return slices.DeleteFunc(slices.Clone(calls), func(c pruneguard.Call) bool { return c.Server })
}

// serverCalls reports a call the provider runs among the parts of f.
func (f *facts) serverCalls() bool {
	if !f.server {
		return false
	}
	for i := range f.parts {
		if f.parts[i].kind == PartServerCall {
			return true
		}
	}
	return false
}

// appendServerCalls appends to calls the calls of f the provider runs
// (Anthropic server_tool_use and mcp_tool_use blocks, Responses server
// items, Gemini executableCode parts) as [pruneguard.Call] with Server
// set: each is answered in its own turn, never pending, and its
// signature (tool and arguments) is what a refetch alert compares. id
// gives the Context's id of the k-th of them, whose provider id is
// wire (empty when it has none).
func appendServerCalls(calls []pruneguard.Call, f *facts, id func(k int, wire string) pruneguard.CallID) []pruneguard.Call {
	if !f.server {
		return calls
	}
	k := 0
	for i := range f.parts {
		p := &f.parts[i]
		if p.kind != PartServerCall {
			continue
		}
		args := argsJSON(p.val)
		if p.failed {
			args = nil // val holds the error an MCP call reports
		}
		calls = append(calls, pruneguard.Call{ID: id(k, p.id), Tool: p.name, Args: args, Server: true})
		k++
	}
	return calls
}

// coreMessage is the Context's message for message f of the body: its
// role, its tokens, its content (see coreContent), the tools its
// tool_reference blocks require, and whether it reports a failed call.
func coreMessage(id pruneguard.MessageID, f *facts, tokens int) pruneguard.Message {
	m := pruneguard.Message{ID: id, Role: coreRole(f), Tokens: tokens, Content: coreContent(f), IsError: f.failed}
	if len(f.refs) > 0 {
		m.Requires = f.refs
	}
	return m
}

// signedFacts reports reasoning, or a signature on a call or a part.
func signedFacts(f *facts) bool { return f.reasoning || f.anySigned() }

// waitingServerCall reports a server tool call among parts with no
// server result for its id among them (an Anthropic pause_turn).
func waitingServerCall(parts [][]fpart) bool {
	open := map[string]int{}
	for _, ps := range parts {
		for _, p := range ps {
			switch p.kind {
			case PartServerCall:
				open[p.id]++
			case PartServerResult:
				open[p.id] = -1 << 30
			}
		}
	}
	for _, n := range open {
		if n > 0 {
			return true
		}
	}
	return false
}

// classing is what the class of a message depends on besides the message.
type classing struct {
	p *provider
	// server returns the class of the results of a tool the provider
	// runs, when the body or a manifest annotates it.
	server func(name string) (pruneguard.Class, bool)
	// tool returns a registered tool.
	tool func(name string) (pruneguard.Tool, bool)
	// called returns the tool of the call a key names.
	called func(key int32) string
	// unannotated is how tools without annotations are treated.
	unannotated Unannotated
}

// class returns the class the Context must give message f, when the wire
// says more than the Context can see; answers are the keys of the calls
// its results answer (-1 for none). It only ever makes a message
// stricter than the Context's own derivation, never laxer:
//
//   - a compaction block or item, the only record of the history it
//     summarises, is irreducible;
//   - a message carrying the calls or results of tools the provider
//     runs (Anthropic server and MCP tool calls and results, Gemini code
//     execution, Responses server items, which carry their own outcome)
//     takes the class of those results: irreducible unless
//     the body or a manifest annotates the tool, whatever Unannotated
//     says (web search is open-world); when annotated reproducible, the
//     message takes that class only if it holds no text of its own;
//   - a message with results that pair with no call (the call was lost,
//     or was never there) takes the class of the tool the result names
//     when the Context knows it, of an unannotated tool otherwise, and
//     of the tools of the calls its other results answer.
//
// Other messages get ClassUnset: the Context derives their class.
func (c *classing) class(f *facts, answers []int32) pruneguard.Class {
	if f.typ == "compaction" {
		return pruneguard.Irreducible
	}
	k, server := pruneguard.ClassUnset, false
	for i := range f.parts {
		p := &f.parts[i]
		switch {
		case p.typ == "compaction":
			return pruneguard.Irreducible
		case p.kind == PartServerResult, p.kind == PartServerCall:
			cl, ok := c.server(p.name)
			if !ok {
				cl = pruneguard.Irreducible
			}
			k, server = max(k, cl), true
		}
	}
	if server && (k == pruneguard.Irreducible || !f.prose()) {
		return k
	}
	unpaired := false
	for _, a := range answers {
		unpaired = unpaired || a < 0
	}
	if !unpaired {
		return pruneguard.ClassUnset
	}
	unknown := pruneguard.Tool{}
	if c.unannotated == UnannotatedRegenerable {
		unknown.Output = pruneguard.Reconstructible
	}
	k = pruneguard.Reconstructible
	r := 0
	for i := range f.parts {
		p := &f.parts[i]
		if p.kind != PartResult {
			continue
		}
		t := unknown
		name := p.name
		if r < len(answers) && answers[r] >= 0 {
			name = c.called(answers[r])
		}
		if ts, ok := c.tool(name); ok && name != "" {
			t = ts
		}
		k = max(k, t.OutputClass())
		r++
	}
	return k
}

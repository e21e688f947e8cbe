package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// Tokenizer counts the tokens of one message, item or content turn given
// as its raw JSON, or of the rest of a request body.
type Tokenizer interface {
	Tokens(raw json.RawMessage) int
}

// TokenizerFunc adapts a function to a [Tokenizer].
type TokenizerFunc func(raw json.RawMessage) int

// Tokens calls f.
func (f TokenizerFunc) Tokens(raw json.RawMessage) int { return f(raw) }

// ApproxTokens is the default [Tokenizer]: a quarter of the length of the
// compact JSON, rounded up. It is a rough estimate, close enough for
// English text and JSON with the common BPE tokenizers; pass a real one
// for accurate budgets.
var ApproxTokens Tokenizer = TokenizerFunc(approxTokens)

func approxTokens(raw json.RawMessage) int {
	var buf bytes.Buffer
	n := len(raw)
	if json.Compact(&buf, raw) == nil {
		n = buf.Len()
	}
	return (n + 3) / 4
}

// Unannotated says how to treat tools that carry no MCP annotations,
// neither in the body nor in a manifest.
type Unannotated uint8

const (
	// UnannotatedIrreducible, the default, takes the MCP defaults: such a
	// tool may change the world and its results cannot be obtained again,
	// so they are never evicted or stubbed.
	UnannotatedIrreducible Unannotated = iota
	// UnannotatedRegenerable takes the caller's word that such tools can
	// be called again for the same result: Tool.Output is
	// [pruneguard.Reconstructible].
	UnannotatedRegenerable
)

// String returns "irreducible" or "regenerable", the names the pruneguard
// command's --unannotated flag takes; any other value reads as
// "irreducible", the default.
func (u Unannotated) String() string {
	if u == UnannotatedRegenerable {
		return "regenerable"
	}
	return "irreducible"
}

// Options configure [Body.Context].
type Options struct {
	// Config is the configuration of the pruneguard.Context. When
	// Config.StubTokens is zero it is set to the tokenizer's count of the
	// stub text plus a small allowance for the result's envelope.
	Config pruneguard.Config
	// Tokenizer counts tokens; nil means [ApproxTokens].
	Tokenizer Tokenizer
	// Manifest, if set, supplies annotations (and schemas for tools the
	// body declares without one) by tool name. Its annotations win over
	// those in the body.
	Manifest *Manifest
	// Unannotated says how tools without annotations are treated, and
	// results whose call is not in the body. It does not reach tools the
	// provider runs: their results are irreducible unless annotated.
	Unannotated Unannotated
}

// Unpaired is a call or a result the body's own adjacency rules leave
// without a partner. The Context holds the message, but not the pairing:
// a result without a call carries no Answers (and is classed as an
// unannotated tool's result), and a call without a result (other than the
// trailing, pending batch) is left out of the message's Calls, so it
// never holds up the boundary gate. Not listed: a Responses output that
// answers a call the server holds, and an MCP approval request the user
// left unanswered, which pair with nothing legitimately.
type Unpaired struct {
	Index  int    // the message's index in the body as read
	CallID string // the wire call id
	Result bool   // true for a result without a call, false for a call without a result
}

// Refusal is a candidate a prune left out, and why.
type Refusal struct {
	// Gate is "boundary", "schema", "regen" or "wire". A "wire" refusal
	// means the body, pruned with the candidate, would break a provider
	// rule the input did not break, or empty a tools array; or that the
	// candidate's stub or tombstone would not make the body smaller, or its
	// stub cannot be made.
	Gate string
	// Code is the core's reason code, or for "wire" the provider rule.
	Code string
	// Units and Messages name the candidate; Indexes are the messages'
	// indexes in the body as read. For a boundary "deferred" refusal they
	// name what is in flight: open messages, and the messages whose calls
	// are pending, with their units.
	Units    []pruneguard.UnitID
	Messages []pruneguard.MessageID
	Indexes  []int
	// Tools names the tools, for schema refusals.
	Tools []string
	// Detail is the provider's wording for "wire", empty otherwise.
	Detail string
}

// Guarded is a request body bound to the pruneguard.Context built from it.
// Decisions applied through it edit both. It is not safe for concurrent
// use.
type Guarded struct {
	src   *Body
	ctx   *pruneguard.Context
	tok   Tokenizer
	ids   []pruneguard.MessageID
	index map[pruneguard.MessageID]int

	unpaired []Unpaired
	inputV   []Violation
	stubText string

	arrays []toolArray // the tools arrays of the body as read
	// serverClass is the class of each server tool's results, by name,
	// for the tools a manifest or the body annotates.
	serverClass map[string]pruneguard.Class

	// Edit state, by index in src.Messages.
	editState
	stubCache map[int]stubbed
	// vouched is the decision Prune screened last: Apply takes it as it is.
	vouched *pruneguard.Decision
}

// editState is what the applied decisions did to the body.
type editState struct {
	removed    []bool
	stubbed    []bool
	dropped    map[string]bool
	compressed map[string]json.RawMessage
	tombstones map[string]string
	tombOrder  []string
}

// stubbed is a message with its results stubbed, or ok false when its
// results cannot be stubbed.
type stubbed struct {
	m  Message
	ok bool
}

// saveEdits returns a copy of the edit state.
func (g *Guarded) saveEdits() editState {
	return editState{
		removed: slices.Clone(g.removed), stubbed: slices.Clone(g.stubbed),
		dropped: maps.Clone(g.dropped), compressed: maps.Clone(g.compressed),
		tombstones: maps.Clone(g.tombstones), tombOrder: slices.Clone(g.tombOrder),
	}
}

// restoreEdits puts back an edit state saveEdits returned.
func (g *Guarded) restoreEdits(e editState) { g.editState = e }

// ID returns the message id the Context gives message i of the body as
// read: "m" followed by i.
func ID(i int) pruneguard.MessageID { return pruneguard.MessageID("m" + strconv.Itoa(i)) }

// Context builds a pruneguard.Context from the body, one message per body
// message (item, content turn) with the id [ID](index), and returns it
// bound to the body. The body itself is not changed; [Guarded.Body]
// returns the edited copy.
//
// Calls and results are paired by each dialect's adjacency rules, the
// ones [Body.Validate] checks, never by a global id map; the Context's
// call ids are synthesised from positions, so reused and duplicate wire
// ids do no harm. What does not pair is reported by [Guarded.Unpaired].
// Calls of the trailing batch that have no result yet stay pending.
//
// Units follow each dialect's atomic structure: a call with its results
// and its whole parallel batch (the core's own grouping); in Responses,
// consecutive call items, and a reasoning item with the item after it;
// in Anthropic, Gemini and Bedrock, each assistant (model) turn with the
// user turn right after it, so that a cut keeps roles alternating and the
// history starting with a user turn. Pinned: system and developer
// messages; the first real user message (the task, usually; and the start
// of the history); the last real user message (not tool results); when
// the body carries reasoning or signed calls, every message from the
// last real user message on, where the thinking and signature rules
// forbid edits; in Responses, outputs answering calls the server holds
// and item references (see [Validate]); in Anthropic, the last assistant
// turn when it holds a server tool call still waiting for its result
// (pause_turn), which goes back unchanged.
//
// Tools declared in the body register with their schema and annotations
// (a manifest's annotations win), and so do tools known only from calls.
// Messages the Context cannot class for itself get a Class (see the
// package documentation, "Guarding a body"): results of tools the
// provider runs, results that pair with no call, compaction blocks and
// items. Such a class only ever makes a message stricter than the
// Context's own derivation.
//
// When the body has no system prompt that tombstone lines can go into (a
// Chat body without a system or developer message, a Gemini body without
// systemInstruction, a Bedrock body without system), opts.Config gets
// NoTombstones. A Config.StubText that is blank (whitespace only) is an
// error: providers reject blank results.
func (b *Body) Context(opts Options) (*Guarded, error) {
	if b == nil || b.top == nil {
		return nil, errors.New("wire: context of a body that was not read")
	}
	tok := opts.Tokenizer
	if tok == nil {
		tok = ApproxTokens
	}
	cfg := opts.Config
	stubText := cfg.StubText
	if stubText == "" {
		stubText = pruneguard.DefaultStubText
	}
	if strings.TrimSpace(stubText) == "" {
		return nil, errors.New("wire: the stub text is blank; providers reject blank tool results")
	}
	if cfg.StubTokens <= 0 {
		cfg.StubTokens = tok.Tokens(mustString(stubText)) + 8
	}
	n := len(b.Messages)
	if !b.hasSystemPrompt() {
		// No tombstone line may go where there is no system prompt to
		// carry it (see setTombstones).
		cfg.NoTombstones = true
	}
	g := &Guarded{
		src: b, ctx: pruneguard.NewContext(cfg), tok: tok, stubText: stubText,
		ids: make([]pruneguard.MessageID, n), index: make(map[pruneguard.MessageID]int, n),
		stubCache: map[int]stubbed{}, arrays: toolArraysOf(b),
		editState: editState{
			removed: make([]bool, n), stubbed: make([]bool, n),
			dropped: map[string]bool{}, compressed: map[string]json.RawMessage{}, tombstones: map[string]string{},
		},
	}
	for i := range b.Messages {
		g.ids[i] = ID(i)
		g.index[g.ids[i]] = i
	}
	g.inputV = b.Validate()

	if err := g.registerTools(opts); err != nil {
		return nil, err
	}

	pr := pairBody(b)
	g.unpaired = pr.unpaired
	for i := range b.Messages {
		m := &b.Messages[i]
		cm := pruneguard.Message{
			ID: g.ids[i], Role: coreRole(b.Dialect, m), Tokens: tok.Tokens(m.Raw),
		}
		for k, c := range m.Calls {
			if pr.drop[[2]int{i, k}] {
				continue
			}
			cm.Calls = append(cm.Calls, pruneguard.Call{ID: callID(i, k), Tool: c.Name, Args: c.Args})
		}
		cm.Answers = pr.answers[i]
		cm.Class = g.classOf(m, pr.answers[i], opts.Unannotated)
		if err := g.ctx.Append(cm); err != nil {
			return nil, fmt.Errorf("wire: %s: %s[%d]: %w", b.Dialect, b.key, i, err)
		}
	}
	for _, group := range coupleGroups(b) {
		ids := make([]pruneguard.MessageID, len(group))
		for k, i := range group {
			ids[k] = g.ids[i]
		}
		if err := g.ctx.Couple(ids...); err != nil {
			return nil, fmt.Errorf("wire: %s: couple: %w", b.Dialect, err)
		}
	}
	for _, i := range pinned(b, pr.stored) {
		if err := g.ctx.Pin(g.ids[i]); err != nil {
			return nil, fmt.Errorf("wire: %s: pin: %w", b.Dialect, err)
		}
	}
	return g, nil
}

func callID(i, k int) pruneguard.CallID {
	return pruneguard.CallID(strconv.Itoa(i) + "." + strconv.Itoa(k))
}

func coreRole(d Dialect, m *Message) pruneguard.Role {
	switch {
	case m.Role == "system" || m.Role == "developer":
		return pruneguard.RoleSystem
	case m.Type == "reasoning":
		return pruneguard.RoleReasoning
	case len(m.Results) > 0:
		return pruneguard.RoleTool
	case m.Role == "assistant" || m.Role == "model":
		return pruneguard.RoleAssistant
	case m.Role == "user":
		return pruneguard.RoleUser
	case m.Role != "":
		return pruneguard.Role(m.Role)
	}
	return pruneguard.Role(m.Type)
}

func (g *Guarded) registerTools(opts Options) error {
	byName := map[string]ManifestTool{}
	if opts.Manifest != nil {
		for _, t := range opts.Manifest.Tools {
			byName[t.Name] = t
		}
	}
	// Tools the provider runs: their results are irreducible unless
	// annotated, whatever opts.Unannotated says.
	server := map[string]bool{}
	for i := range g.src.Messages {
		for _, p := range g.src.Messages[i].Parts {
			if (p.Kind == PartServerCall || p.Kind == PartServerResult) && p.Name != "" {
				server[p.Name] = true
			}
		}
	}
	g.serverClass = map[string]pruneguard.Class{}
	for name := range server {
		if mt, ok := byName[name]; ok && mt.Annotations != nil {
			g.serverClass[name] = pruneguard.Tool{Name: name, Annotations: *mt.Annotations}.OutputClass()
		}
	}
	seen := map[string]bool{}
	register := func(name string, schema json.RawMessage, ann pruneguard.Annotations, annotated bool) error {
		if seen[name] {
			return nil
		}
		seen[name] = true
		if mt, ok := byName[name]; ok {
			if mt.Annotations != nil {
				ann, annotated = *mt.Annotations, true
			}
			if schema == nil && len(mt.InputSchema) > 0 {
				schema = mt.InputSchema
			}
		}
		if len(schema) > 0 && !json.Valid(schema) {
			schema = nil
		}
		t := pruneguard.Tool{Name: name, Schema: schema, Annotations: ann}
		switch {
		case server[name] && annotated:
			g.serverClass[name] = t.OutputClass()
		case server[name]:
			t.Output = pruneguard.Irreducible
		case !annotated && opts.Unannotated == UnannotatedRegenerable:
			t.Output = pruneguard.Reconstructible
		}
		if err := g.ctx.RegisterTool(t); err != nil {
			return fmt.Errorf("wire: %s: tool %q: %w", g.src.Dialect, name, err)
		}
		return nil
	}
	for _, t := range g.src.Tools() {
		if err := register(t.Name, t.Schema, t.Annotations, t.Annotated); err != nil {
			return err
		}
	}
	// Tools known only from calls: registered without a schema, so the
	// unannotated assumption covers their results too.
	for i := range g.src.Messages {
		for _, c := range g.src.Messages[i].Calls {
			if c.Name == "" {
				continue
			}
			if err := register(c.Name, nil, pruneguard.Annotations{}, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// classOf returns the class the Context must give message m, when the
// body says more than the Context can see; answers are the calls its
// results answer. It only ever makes a message stricter than the
// Context's own derivation, never laxer:
//
//   - a compaction block or item, the only record of the history it
//     summarises, is irreducible;
//   - a message carrying the results of tools the provider runs
//     (Anthropic server and MCP tool results beside their call, Gemini
//     code execution results, Responses server items, which carry their
//     own outcome) takes the class of those results: irreducible unless
//     the body or a manifest annotates the tool, whatever opts.Unannotated
//     says (web search is open-world); when annotated reproducible, the
//     message takes that class only if it holds no text of its own;
//   - a message with results that pair with no call in the body (the
//     call was lost, or was never there) takes the class of an
//     unannotated tool, or of the tool the result names: the Context
//     cannot see which tool ran, so opts.Unannotated decides.
//
// Other messages get ClassUnset: the Context derives their class.
func (g *Guarded) classOf(m *Message, answers []pruneguard.CallID, un Unannotated) pruneguard.Class {
	if m.Type == "compaction" {
		return pruneguard.Irreducible
	}
	k, server, prose := pruneguard.ClassUnset, false, false
	for _, p := range m.Parts {
		switch {
		case p.Type == "compaction":
			return pruneguard.Irreducible
		case p.Kind == PartServerResult, p.Kind == PartServerCall && g.src.Dialect == OpenAIResponses:
			c, ok := g.serverClass[p.Name]
			if !ok {
				c = pruneguard.Irreducible
			}
			k, server = max(k, c), true
		case p.Kind == PartText || p.Kind == PartReasoning:
			prose = prose || strings.TrimSpace(p.Text) != ""
		}
	}
	if server && (k == pruneguard.Irreducible || !prose) {
		return k
	}
	if len(m.Results) <= len(answers) {
		return pruneguard.ClassUnset
	}
	// Results without a call: the class of their tool when the result
	// names one the Context knows, of an unannotated tool otherwise; with
	// the classes of the calls the other results answer.
	k = pruneguard.Reconstructible
	unknown := pruneguard.Tool{}
	if un == UnannotatedRegenerable {
		unknown.Output = pruneguard.Reconstructible
	}
	for _, p := range m.Parts {
		if p.Kind != PartResult {
			continue
		}
		t := unknown
		if ts, ok := g.ctx.Tool(p.Name); ok && p.Name != "" {
			t = ts.Tool
		}
		k = max(k, t.OutputClass())
	}
	for _, c := range answers {
		if i, ok := callerOf(c); ok && i < len(g.src.Messages) {
			for _, call := range g.src.Messages[i].Calls {
				if ts, ok := g.ctx.Tool(call.Name); ok {
					k = max(k, ts.Tool.OutputClass())
				}
			}
		}
	}
	return k
}

// Context returns the pruneguard.Context built from the body.
func (g *Guarded) Context() *pruneguard.Context { return g.ctx }

// Index returns the index, in the body as read, of the message with id.
func (g *Guarded) Index(id pruneguard.MessageID) (int, bool) {
	i, ok := g.index[id]
	return i, ok
}

// Unpaired lists the calls and results the body's adjacency rules leave
// without a partner, in body order.
func (g *Guarded) Unpaired() []Unpaired { return slices.Clone(g.unpaired) }

// InputViolations returns the violations of the body as read.
func (g *Guarded) InputViolations() []Violation { return slices.Clone(g.inputV) }

// StubText is the placeholder stubbed results carry.
func (g *Guarded) StubText() string { return g.stubText }

// Body returns the body with every applied decision carried out: evicted
// messages removed, stubbed results replaced by the stub text, withdrawn
// schemas removed from the tools array (compressed ones replaced) and
// tombstone lines added to the system prompt. The body read is not
// changed.
func (g *Guarded) Body() *Body {
	return g.render(g.removed, g.stubbed, g.schemaNow())
}

// schemaEdits is a state of the tools array and the tombstone lines.
type schemaEdits struct {
	dropped    map[string]bool
	compressed map[string]json.RawMessage
	tombs      []string // tombstone lines, in order
}

// schemaNow is the schema state of the applied decisions.
func (g *Guarded) schemaNow() *schemaEdits {
	se := &schemaEdits{dropped: g.dropped, compressed: g.compressed}
	for _, t := range g.tombOrder {
		if s, ok := g.tombstones[t]; ok {
			se.tombs = append(se.tombs, s)
		}
	}
	return se
}

// schemaWith is the schema state once decision d is applied too, leaving
// out d's edits of the tools in skip (their schemas stay as they are).
func (g *Guarded) schemaWith(d *pruneguard.Decision, skip map[string]bool) *schemaEdits {
	se := &schemaEdits{dropped: maps.Clone(g.dropped), compressed: maps.Clone(g.compressed)}
	for _, t := range d.DropSchemas {
		if !skip[t] {
			se.dropped[t] = true
		}
	}
	for _, cs := range d.Compress {
		if !skip[cs.Tool] {
			se.compressed[cs.Tool] = cs.Schema
		}
	}
	tombs := maps.Clone(g.tombstones)
	order := slices.Clone(g.tombOrder)
	for _, t := range d.Tombstones {
		if skip[t.Tool] {
			continue
		}
		if _, ok := tombs[t.Tool]; !ok {
			order = append(order, t.Tool)
		}
		tombs[t.Tool] = t.Text
	}
	for _, t := range d.Retire {
		delete(tombs, t)
	}
	for _, t := range order {
		if s, ok := tombs[t]; ok {
			se.tombs = append(se.tombs, s)
		}
	}
	return se
}

// render builds a body from the source with the given messages removed
// and stubbed and, when se is not nil, the schema edits and tombstones
// of se.
func (g *Guarded) render(removed, stubbed []bool, se *schemaEdits) *Body {
	nb := *g.src
	nb.fields = nil
	nb.Messages = make([]Message, 0, len(g.src.Messages))
	changed := false
	for i := range g.src.Messages {
		switch {
		case removed[i]:
			changed = true
		case stubbed[i]:
			changed = true
			m, _ := g.stubMsg(i)
			nb.Messages = append(nb.Messages, m)
		default:
			nb.Messages = append(nb.Messages, g.src.Messages[i])
		}
	}
	if changed {
		nb.dirty = true
	}
	if se != nil {
		nb.editTools(se.dropped, se.compressed)
		nb.setTombstones(se.tombs)
	}
	return &nb
}

// stubMsg returns message i with its results stubbed, or the message as
// read and false when they cannot be.
func (g *Guarded) stubMsg(i int) (Message, bool) {
	if s, ok := g.stubCache[i]; ok {
		return s.m, s.ok
	}
	s := stubbed{m: g.src.Messages[i]}
	if raw, err := stubMessage(g.src.Dialect, s.m.Raw, g.stubText); err == nil {
		if nm, err := parseMessage(g.src.Dialect, raw, false); err == nil {
			s = stubbed{m: nm, ok: true}
		}
	}
	g.stubCache[i] = s
	return s.m, s.ok
}

// Tokens counts the tokens of a body with t (nil means [ApproxTokens]):
// each message, plus the rest of the body (system prompt, tools and
// settings) with an empty message array.
func Tokens(b *Body, t Tokenizer) int {
	if b == nil {
		return 0
	}
	if t == nil {
		t = ApproxTokens
	}
	n := 0
	for i := range b.Messages {
		n += t.Tokens(b.Messages[i].Raw)
	}
	return n + Overhead(b, t)
}

// Overhead counts the tokens of a body outside its message array.
func Overhead(b *Body, t Tokenizer) int {
	if t == nil {
		t = ApproxTokens
	}
	if b == nil || b.top == nil {
		return 0
	}
	return t.Tokens(b.top.with(b.topEdits([]byte("[]"))))
}

// Apply carries out a decision of [Guarded.Prune] (or of the
// [Guarded.Context]'s own Prune) on the Context and, if that succeeds, on
// the body. A decision Guarded.Prune returned last was screened already;
// any other is screened first, and one the screen would not pass whole
// is refused with a [*ScreenError] (errors.Is [ErrScreen]), changing
// nothing. Errors of the Context's Apply (a stale or foreign decision)
// are returned as they are.
func (g *Guarded) Apply(d *pruneguard.Decision) error {
	if d != nil && d != g.vouched {
		if _, refused, _, all := g.screen(d); !all {
			return &ScreenError{Refusals: refused}
		}
	}
	if err := g.ctx.Apply(d); err != nil {
		return err
	}
	g.vouched = nil
	g.record(d)
	return nil
}

// record carries an applied decision out on the body's edit state.
func (g *Guarded) record(d *pruneguard.Decision) {
	for _, id := range d.Evict {
		if i, ok := g.index[id]; ok {
			g.removed[i] = true
		}
	}
	for _, id := range d.Stub {
		if i, ok := g.index[id]; ok {
			g.stubbed[i] = true
		}
	}
	for _, t := range d.DropSchemas {
		g.dropped[t] = true
	}
	for _, cs := range d.Compress {
		g.compressed[cs.Tool] = cs.Schema
	}
	for _, t := range d.Tombstones {
		if _, ok := g.tombstones[t.Tool]; !ok {
			g.tombOrder = append(g.tombOrder, t.Tool)
		}
		g.tombstones[t.Tool] = t.Text
	}
	for _, t := range d.Retire {
		delete(g.tombstones, t)
	}
}

// NewViolations returns the violations of after that before does not
// have: compared by rule and message, as multisets, with message and
// content indexes in the wording ("messages.3", "messages[3]") ignored
// since removals shift them.
func NewViolations(before, after []Violation) []Violation {
	count := map[string]int{}
	for _, v := range before {
		count[violationKey(v)]++
	}
	var out []Violation
	for _, v := range after {
		k := violationKey(v)
		if count[k] > 0 {
			count[k]--
			continue
		}
		out = append(out, v)
	}
	return out
}

var indexInWording = regexp.MustCompile(`(messages|content)([.\[])\d+`)

func violationKey(v Violation) string {
	return v.Rule + "\x00" + indexInWording.ReplaceAllString(v.Message, "$1${2}N")
}

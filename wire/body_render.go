package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// RenderOptions configure [Render]. The zero value renders the Context
// alone: no other top-level field, default tombstone lines, no pointer
// lines.
type RenderOptions struct {
	// Fields are top-level fields written as given: model, max_tokens,
	// temperature, tool_choice and the like. A field Render writes from
	// the Context (the history; the tools declaration when the Context
	// holds resident tools; the system prompt when it holds system
	// messages and the dialect keeps the prompt outside the history) may
	// not be given too. A system prompt given here in Anthropic,
	// Responses ("instructions"), Gemini or Bedrock is kept, and
	// tombstone and pointer lines are added to it.
	Fields map[string]json.RawMessage
	// Tombstones give the text of the tombstone lines, as decisions
	// return them ([pruneguard.Decision].Tombstones). A tool the Context
	// reports tombstoned without a text here gets the text decisions give
	// ([pruneguard.TombstoneText]).
	Tombstones []pruneguard.Tombstone
	// Spilled lists evicted messages whose content was spilled, as
	// decisions return them ([pruneguard.Decision].Pointers): every
	// distinct pointer gets one line in the system prompt, so that the
	// model can read the content back.
	Spilled []pruneguard.SpillNote
	// PointerText makes the text that stands for spilled content: the
	// line of an evicted spilled message, and the content of a stubbed
	// result that carries a pointer. Nil means [spill.PointerText].
	PointerText func(pruneguard.Pointer) string
}

// ErrProviderRule is matched (with errors.Is) by every [*RuleError].
var ErrProviderRule = errors.New("wire: the body breaks a provider rule")

// RuleError reports a request body that a provider would reject: the
// rules it breaks, as [Validate] finds them. It matches
// [ErrProviderRule]. The zero value names no rule.
type RuleError struct {
	Dialect    Dialect
	Violations []RuleViolation
}

// Error names the first rule broken and how many others there are.
func (e *RuleError) Error() string {
	if len(e.Violations) == 0 {
		return ErrProviderRule.Error()
	}
	msg := fmt.Sprintf("wire: %s body breaks a provider rule: %s", e.Dialect, flatLine(e.Violations[0].String()))
	if n := len(e.Violations) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	return msg
}

// Is reports target == ErrProviderRule.
func (e *RuleError) Is(target error) bool { return target == ErrProviderRule }

// Rules returns the rule codes broken, in order, once each.
func (e *RuleError) Rules() []string {
	var out []string
	for _, v := range e.Violations {
		if !slices.Contains(out, v.Rule) {
			out = append(out, v.Rule)
		}
	}
	return out
}

func flatLine(s string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s)
}

// Render writes the request body of dialect d for the history a Context
// holds, as a runtime built it with events: each [pruneguard.Message]'s
// Content is its text, its Calls are tool calls (with JSON Args) and its
// Answers name the calls it carries results for.
//
// Per dialect, roles and tool traffic take the provider's shape:
//
//   - OpenAI Chat: system, user and assistant messages; an assistant
//     message carries its calls as tool_calls; a result becomes one tool
//     message per call it answers.
//   - OpenAI Responses: message items with the role; each call a
//     function_call item, each result a function_call_output item.
//   - Anthropic: system messages go to the top-level system prompt; calls
//     are tool_use blocks of the assistant turn, results tool_result
//     blocks of the next user turn. Consecutive messages of one role are
//     merged into one turn, tool results first.
//   - Gemini: system messages go to systemInstruction; calls are
//     functionCall parts of a model turn, results functionResponse parts
//     ({"result": text}) of the next user turn, merged as in Anthropic.
//   - Bedrock: system messages go to the system list; calls are toolUse
//     blocks, results toolResult blocks; consecutive messages of one role
//     are merged, so roles alternate.
//
// A result answering several calls carries its text in the first and a
// line naming that call in the others. Call ids are the Context's
// [pruneguard.CallID]s. Messages of role [pruneguard.RoleReasoning] are
// not written, since providers take reasoning back only with a signature
// only the provider's own JSON carries, and neither is a message with
// nothing to say in the dialects that reject empty messages (Anthropic,
// Gemini, Bedrock). A summary a compaction put in the place of the run
// it replaced (role [pruneguard.RoleSummary]) is written as the
// dialect's summary message (see the package documentation,
// "Summaries"); a spilled message listed in Spilled whose pointer's key
// a summary's text holds gets no pointer line: the summary carries it.
// Any other role is written as a user message.
//
// A stubbed result carries the Context's stub text, or the pointer text
// when the result was spilled. The tools declaration lists the tools the
// Context registered whose schema is resident (a compressed schema in
// place of the full one), sorted by name; with none, the field is left
// out rather than written empty. Tombstone lines, then one line per
// spilled pointer, go into the system prompt: Anthropic system,
// Responses instructions, Gemini systemInstruction, Bedrock system, or
// the first Chat system or developer message, which is created when there
// is none.
//
// The body is checked with [Validate] before it is returned: one that
// breaks a provider rule (other than calls still waiting for their
// results at the end) is not returned, and the error is a [*RuleError].
// Top-level keys are written in sorted order.
func Render(d Dialect, c *pruneguard.Context, opts RenderOptions) ([]byte, error) {
	p := d.provider()
	if p == nil {
		return nil, fmt.Errorf("wire: render: unknown dialect %q", string(d))
	}
	key := p.historyKey
	if c == nil {
		return nil, errors.New("wire: render: nil Context")
	}
	// One snapshot says which messages are there and which are stubbed;
	// a message pruned since is left out.
	snap := c.Snapshot()
	msgs := make([]pruneguard.Message, 0, len(snap))
	stubbed := make([]bool, 0, len(snap))
	for _, e := range snap {
		if m, ok := c.Message(e.ID); ok {
			msgs = append(msgs, m)
			stubbed = append(stubbed, e.Stubbed)
		}
	}
	ptext := opts.PointerText
	if ptext == nil {
		ptext = spill.PointerText
	}
	tool := map[pruneguard.CallID]string{}
	for _, m := range msgs {
		for _, call := range m.Calls {
			tool[call.ID] = call.Tool
		}
	}
	var pieces []rpiece
	var summaries []string
	for i, m := range msgs {
		if m.Role == pruneguard.RoleSummary {
			summaries = append(summaries, string(m.Content))
		}
		text := string(m.Content)
		if stubbed[i] && !m.Pointer.IsZero() {
			text = ptext(m.Pointer)
		}
		pieces = append(pieces, synthMessage(p, m, text, tool)...)
	}

	top := topFields{vals: map[string]json.RawMessage{}}
	for k, v := range opts.Fields {
		top.set(k, v)
	}
	if _, ok := top.get(key); ok {
		return nil, fmt.Errorf("wire: render: field %q is written from the Context", key)
	}
	// The system prompt of dialects that keep it outside the history.
	var system []string
	pieces = slices.DeleteFunc(pieces, func(r rpiece) bool {
		if r.system {
			system = append(system, r.text)
		}
		return r.system
	})
	if len(system) > 0 {
		sk := p.promptKey(top.vals)
		if _, ok := top.get(sk); ok {
			return nil, fmt.Errorf("wire: render: field %q is written from the Context's system messages", sk)
		}
		top.set(sk, p.systemPrompt(system))
	}
	tools := c.Tools()
	if k, v, ok := declareResident(p, tools); ok {
		if _, given := top.get(k); given {
			return nil, fmt.Errorf("wire: render: field %q is written from the Context's tools", k)
		}
		top.set(k, v)
	}

	lines := append(tombstoneLines(tools, opts.Tombstones), spillLines(carriedElsewhere(opts.Spilled, summaries), ptext)...)
	pieces = mergeSynthTurns(p, pieces)
	pieces = placeLines(p, &top, pieces, lines)
	raws := make([]json.RawMessage, len(pieces))
	for i := range pieces {
		raws[i] = pieces[i].json(p)
	}
	top.set(key, joinArray(raws))
	sort.Strings(top.keys)
	body := top.bytes()

	vs, err := Validate(body, d)
	if err != nil {
		return nil, fmt.Errorf("wire: render: %w", err)
	}
	if vs = dropPending(vs); len(vs) > 0 {
		return nil, &RuleError{Dialect: d, Violations: vs}
	}
	return body, nil
}

// carriedElsewhere returns the notes whose pointer no summary carries:
// a summary that replaced spilled messages carries their pointer's key
// in its text, so they need no line of their own.
func carriedElsewhere(notes []pruneguard.SpillNote, summaries []string) []pruneguard.SpillNote {
	if len(summaries) == 0 {
		return notes
	}
	return slices.DeleteFunc(slices.Clone(notes), func(n pruneguard.SpillNote) bool {
		return slices.ContainsFunc(summaries, func(s string) bool { return strings.Contains(s, n.Pointer.Key) })
	})
}

// dropPending drops the violations that only say the body ends on
// calls still waiting for their results.
func dropPending(vs []RuleViolation) []RuleViolation {
	return slices.DeleteFunc(vs, func(v RuleViolation) bool { return strings.HasSuffix(v.Rule, "/pending-calls") })
}

// historyKeyOf is the top-level key of a dialect's history, or "" for a
// dialect the package does not know.
func historyKeyOf(d Dialect) string {
	key, _ := d.messagesKey()
	return key
}

// rpiece is one provider message of a body being rendered.
type rpiece struct {
	role string
	// raw is the message as it is written: a message the runtime gave as
	// provider JSON, a synthesized Chat or Responses message, or a
	// synthesized turn until it is merged with another.
	raw json.RawMessage
	// results and blocks are the content of a synthesized turn of a
	// turn-based dialect: tool results (written first), then the rest.
	// Consecutive synthesized turns of one role are merged.
	results, blocks []json.RawMessage
	synth           bool
	// sum is set on a summary message, with what it is written as: it
	// joins the user message before it where the provider's table says
	// so (see joinSummaries).
	sum *facts
	// system marks a system message of a dialect whose system prompt is a
	// top-level field; text is its text.
	system bool
	text   string
}

// json returns the rpiece as provider pv writes it.
func (p *rpiece) json(pv *provider) json.RawMessage {
	if p.raw != nil || !p.synth || !pv.turns {
		return p.raw
	}
	content := append(slices.Clone(p.results), p.blocks...)
	return jk.marshal(map[string]any{"role": p.role, pv.turnKey: joinArray(content)})
}

// isSystemMessage reports a Chat or Responses system or developer message.
func (p *rpiece) isSystemMessage() bool { return p.role == "system" || p.role == "developer" }

// synthMessage writes one message of a Context as provider p writes it.
// A message may give several pieces (a Chat result answering several
// calls) or none (a reasoning message; an empty one in a provider whose
// turns may not be empty).
func synthMessage(p *provider, m pruneguard.Message, text string, tool map[pruneguard.CallID]string) []rpiece {
	switch m.Role {
	case pruneguard.RoleReasoning:
		return nil
	case pruneguard.RoleSummary:
		return []rpiece{summaryPiece(p, text)}
	}
	role := "user"
	switch {
	case m.Role == pruneguard.RoleSystem:
		role = "system"
	case m.Role == pruneguard.RoleAssistant || len(m.Calls) > 0:
		role = "assistant"
	}
	// Results carry the text; a message that both answers and calls
	// (which no provider writes) gets its calls in a turn of their own.
	var out []rpiece
	if len(m.Answers) > 0 {
		out = append(out, synthResults(p, m, text, tool)...)
		text = ""
		role = "assistant"
		if len(m.Calls) == 0 {
			return out
		}
	}
	if role == "system" && p.systemPrompt != nil {
		if strings.TrimSpace(text) == "" {
			return out
		}
		return append(out, rpiece{role: role, system: true, text: text, synth: true})
	}
	calls := clientCalls(m.Calls)
	if !p.turns {
		return append(out, p.writeEntries(role, text, calls)...)
	}
	t := rpiece{role: role, synth: true}
	if role == "assistant" {
		t.role = p.modelRole
	}
	if strings.TrimSpace(text) != "" {
		t.blocks = append(t.blocks, p.textBlock(text))
	}
	for _, c := range calls {
		t.blocks = append(t.blocks, p.callBlock(c))
	}
	if len(t.blocks) > 0 {
		t.raw = t.json(p)
		out = append(out, t)
	}
	return out
}

// summaryPiece writes a summary message as provider p writes it: a user
// turn of one text block, merged with the user turn next to it as any
// turn is in a provider with turns, or the provider's summary message.
func summaryPiece(p *provider, text string) rpiece {
	if !p.turns {
		return rpiece{role: "user", synth: true, raw: p.summary(text)}
	}
	t := rpiece{role: "user", synth: true, blocks: []json.RawMessage{p.textBlock(text)}}
	t.raw = t.json(p)
	return t
}

// synthResults writes the results a message carries: its text goes with
// the first call it answers, a line naming that call with the others.
// Each is an entry of its own, or, in a provider with turns, a block of
// one user turn.
func synthResults(p *provider, m pruneguard.Message, text string, tool map[pruneguard.CallID]string) []rpiece {
	var out []rpiece
	turn := rpiece{role: "user", synth: true}
	for i, id := range m.Answers {
		t := text
		if i > 0 {
			t = "[see the result of call " + string(m.Answers[0]) + "]"
		}
		r := p.writeResult(id, t, tool[id])
		if p.turns {
			turn.results = append(turn.results, r)
		} else {
			out = append(out, rpiece{role: "tool", synth: true, raw: r})
		}
	}
	if len(turn.results) > 0 {
		turn.raw = turn.json(p)
		out = append(out, turn)
	}
	return out
}

// mergeSynthTurns merges consecutive synthesized turns of one role in the
// turn-based dialects, tool results first. Messages given as provider
// JSON are left as they are.
func mergeSynthTurns(p *provider, ps []rpiece) []rpiece {
	if !p.turns {
		return ps
	}
	out := ps[:0:0]
	for _, p := range ps {
		if k := len(out) - 1; k >= 0 && p.synth && out[k].synth && out[k].role == p.role && !p.system && !out[k].system {
			out[k].results = append(slices.Clone(out[k].results), p.results...)
			out[k].blocks = append(slices.Clone(out[k].blocks), p.blocks...)
			out[k].raw = nil // written from the merged blocks
			continue
		}
		out = append(out, p)
	}
	return out
}

// declareResident writes the tools declaration of the resident registered
// tools, sorted by name, in the provider's first tools list: the key it
// goes under and its value. ok is false when no tool is resident.
func declareResident(p *provider, tools []pruneguard.ToolState) (key string, val json.RawMessage, ok bool) {
	var decls []json.RawMessage
	for _, ts := range tools {
		if !ts.Registered || !ts.Resident {
			continue
		}
		schema := ts.Tool.Schema
		if len(ts.Compressed) > 0 {
			schema = ts.Compressed
		}
		if _, isObj := asObject(schema); !isObj {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		decls = append(decls, p.declare(ts.Tool.Name, schema))
	}
	if len(decls) == 0 {
		return "", nil, false
	}
	l := p.toolLists[0]
	switch {
	case l.inner != "":
		return l.key, jk.marshal(map[string]any{l.inner: joinArray(decls)}), true
	case len(l.groups) > 0:
		return l.key, jk.marshal([]any{map[string]any{l.groups[0]: joinArray(decls)}}), true
	}
	return l.key, joinArray(decls), true
}

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
	// reports tombstoned without a text here gets a line of Render's own.
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
// Gemini, Bedrock). Any other role is written as a user message.
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
	key := historyKeyOf(d)
	if key == "" {
		return nil, fmt.Errorf("wire: render: unknown dialect %q", string(d))
	}
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
	for i, m := range msgs {
		text := string(m.Content)
		if stubbed[i] && !m.Pointer.IsZero() {
			text = ptext(m.Pointer)
		}
		pieces = append(pieces, synthMessage(d, m, text, tool)...)
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
	pieces = slices.DeleteFunc(pieces, func(p rpiece) bool {
		if p.system {
			system = append(system, p.text)
		}
		return p.system
	})
	if len(system) > 0 {
		sk := promptKey(d, &top)
		if _, ok := top.get(sk); ok {
			return nil, fmt.Errorf("wire: render: field %q is written from the Context's system messages", sk)
		}
		top.set(sk, promptValue(d, system))
	}
	tools := c.Tools()
	if k, v, ok := declareResident(d, tools); ok {
		if _, given := top.get(k); given {
			return nil, fmt.Errorf("wire: render: field %q is written from the Context's tools", k)
		}
		top.set(k, v)
	}

	var lines []string
	given := map[string]string{}
	for _, t := range opts.Tombstones {
		given[t.Tool] = t.Text
	}
	for _, ts := range tools {
		if !ts.Tombstoned {
			continue
		}
		line := given[ts.Tool.Name]
		if strings.TrimSpace(line) == "" {
			line = renderTombstone(ts)
		}
		lines = append(lines, line)
	}
	lines = append(lines, spillLines(opts.Spilled, ptext)...)

	pieces = mergeSynthTurns(d, pieces)
	pieces = placePromptLines(d, &top, pieces, lines)
	raws := make([]json.RawMessage, len(pieces))
	for i := range pieces {
		raws[i] = pieces[i].json(d)
	}
	top.set(key, jk.join(raws))
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

// dropPending drops the violations that only say the body ends on
// calls still waiting for their results.
func dropPending(vs []RuleViolation) []RuleViolation {
	return slices.DeleteFunc(vs, func(v RuleViolation) bool { return strings.HasSuffix(v.Rule, "/pending-calls") })
}

// historyKeyOf is the top-level key of a dialect's history.
func historyKeyOf(d Dialect) string {
	switch d {
	case OpenAIChat, Anthropic, Bedrock:
		return "messages"
	case OpenAIResponses:
		return "input"
	case Gemini:
		return "contents"
	}
	return ""
}

// turnDialect reports the dialects whose history is turns of content
// blocks, where consecutive messages of one role make one turn.
func turnDialect(d Dialect) bool { return d == Anthropic || d == Gemini || d == Bedrock }

// renderTombstone is the line for a tombstoned tool whose text the caller
// did not give.
func renderTombstone(ts pruneguard.ToolState) string {
	if ts.Tool.Mutating() {
		return fmt.Sprintf("[pruneguard] tool %q is still available but its schema was withdrawn; it changes state: ask for its schema before calling it.", ts.Tool.Name)
	}
	return fmt.Sprintf("[pruneguard] tool %q is still available but its schema was withdrawn; ask for its schema before calling it.", ts.Tool.Name)
}

// spillLines returns one line per distinct pointer, in order.
func spillLines(notes []pruneguard.SpillNote, text func(pruneguard.Pointer) string) []string {
	var seen []pruneguard.Pointer
	var out []string
	for _, n := range notes {
		if n.Pointer.IsZero() || slices.Contains(seen, n.Pointer) {
			continue
		}
		seen = append(seen, n.Pointer)
		out = append(out, text(n.Pointer))
	}
	return out
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
	// system marks a system message of a dialect whose system prompt is a
	// top-level field; text is its text.
	system bool
	text   string
}

// json returns the rpiece as written.
func (p *rpiece) json(d Dialect) json.RawMessage {
	if p.raw != nil || !p.synth || !turnDialect(d) {
		return p.raw
	}
	content := append(slices.Clone(p.results), p.blocks...)
	key := "content"
	if d == Gemini {
		key = "parts"
	}
	return jk.marshal(map[string]any{"role": p.role, key: jk.join(content)})
}

// isSystemMessage reports a Chat or Responses system or developer message.
func (p *rpiece) isSystemMessage() bool { return p.role == "system" || p.role == "developer" }

// synthMessage writes one message of a Context in dialect d. A message may
// give several pieces (a Chat result answering several calls) or none (a
// reasoning message; an empty one in a dialect that rejects it).
func synthMessage(d Dialect, m pruneguard.Message, text string, tool map[pruneguard.CallID]string) []rpiece {
	if m.Role == pruneguard.RoleReasoning {
		return nil
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
		out = append(out, synthResults(d, m, text, tool)...)
		text = ""
		role = "assistant"
		if len(m.Calls) == 0 {
			return out
		}
	}
	if role == "system" && turnDialect(d) {
		if strings.TrimSpace(text) == "" {
			return out
		}
		return append(out, rpiece{role: role, system: true, text: text, synth: true})
	}
	switch d {
	case OpenAIChat:
		msg := map[string]any{"role": role, "content": text}
		if len(m.Calls) > 0 {
			calls := make([]any, len(m.Calls))
			for i, c := range m.Calls {
				calls[i] = map[string]any{"id": c.ID, "type": "function",
					"function": map[string]any{"name": c.Tool, "arguments": jk.argString(c.Args)}}
			}
			msg["tool_calls"] = calls
			if text == "" {
				delete(msg, "content") // optional beside tool_calls
			}
		}
		out = append(out, rpiece{role: role, raw: jk.marshal(msg), synth: true})
	case OpenAIResponses:
		if text != "" || len(m.Calls) == 0 {
			out = append(out, rpiece{role: role, synth: true,
				raw: jk.marshal(map[string]any{"type": "message", "role": role, "content": text})})
		}
		for _, c := range m.Calls {
			out = append(out, rpiece{role: "assistant", synth: true, raw: jk.marshal(map[string]any{
				"type": "function_call", "call_id": c.ID, "name": c.Tool, "arguments": jk.argString(c.Args)})})
		}
	case Anthropic, Bedrock, Gemini:
		p := rpiece{role: role, synth: true}
		if d == Gemini && role == "assistant" {
			p.role = "model"
		}
		if strings.TrimSpace(text) != "" {
			p.blocks = append(p.blocks, synthText(d, text))
		}
		for _, c := range m.Calls {
			p.blocks = append(p.blocks, synthCall(d, c))
		}
		if len(p.blocks) > 0 {
			p.raw = p.json(d)
			out = append(out, p)
		}
	}
	return out
}

// synthText is a text block of a turn-based dialect.
func synthText(d Dialect, text string) json.RawMessage {
	if d == Anthropic {
		return jk.marshal(map[string]any{"type": "text", "text": text})
	}
	return jk.marshal(map[string]any{"text": text})
}

// synthCall is a tool call block of a turn-based dialect.
func synthCall(d Dialect, c pruneguard.Call) json.RawMessage {
	switch d {
	case Anthropic:
		return jk.marshal(map[string]any{"type": "tool_use", "id": c.ID, "name": c.Tool, "input": jk.object(c.Args)})
	case Gemini:
		return jk.marshal(map[string]any{"functionCall": map[string]any{"id": c.ID, "name": c.Tool, "args": jk.object(c.Args)}})
	}
	return jk.marshal(map[string]any{"toolUse": map[string]any{"toolUseId": c.ID, "name": c.Tool, "input": jk.object(c.Args)}})
}

// synthResults writes the results a message carries: its text goes with
// the first call it answers, a line naming that call with the others.
func synthResults(d Dialect, m pruneguard.Message, text string, tool map[pruneguard.CallID]string) []rpiece {
	var out []rpiece
	turn := rpiece{role: "user", synth: true}
	for i, id := range m.Answers {
		t := text
		if i > 0 {
			t = "[see the result of call " + string(m.Answers[0]) + "]"
		}
		switch d {
		case OpenAIChat:
			out = append(out, rpiece{role: "tool", synth: true,
				raw: jk.marshal(map[string]any{"role": "tool", "tool_call_id": id, "content": t})})
		case OpenAIResponses:
			out = append(out, rpiece{role: "tool", synth: true,
				raw: jk.marshal(map[string]any{"type": "function_call_output", "call_id": id, "output": t})})
		case Anthropic:
			blk := map[string]any{"type": "tool_result", "tool_use_id": id}
			if strings.TrimSpace(t) != "" {
				blk["content"] = t
			}
			turn.results = append(turn.results, jk.marshal(blk))
		case Gemini:
			turn.results = append(turn.results, jk.marshal(map[string]any{"functionResponse": map[string]any{
				"id": id, "name": tool[id], "response": map[string]any{"result": t}}}))
		case Bedrock:
			content := []any{map[string]any{"text": t}}
			if strings.TrimSpace(t) == "" {
				content = []any{map[string]any{"json": map[string]any{}}}
			}
			turn.results = append(turn.results, jk.marshal(map[string]any{"toolResult": map[string]any{
				"toolUseId": id, "content": content}}))
		}
	}
	if len(turn.results) > 0 {
		turn.raw = turn.json(d)
		out = append(out, turn)
	}
	return out
}

// mergeSynthTurns merges consecutive synthesized turns of one role in the
// turn-based dialects, tool results first. Messages given as provider
// JSON are left as they are.
func mergeSynthTurns(d Dialect, ps []rpiece) []rpiece {
	if !turnDialect(d) {
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

// promptKey is the top-level key of the system prompt, in the dialects
// that keep it outside the history ("" for Chat).
func promptKey(d Dialect, top *topFields) string {
	switch d {
	case Anthropic, Bedrock:
		return "system"
	case OpenAIResponses:
		return "instructions"
	case Gemini:
		if _, ok := top.get("system_instruction"); ok {
			return "system_instruction"
		}
		return "systemInstruction"
	}
	return ""
}

// promptValue writes system texts as the dialect's system prompt.
func promptValue(d Dialect, texts []string) json.RawMessage {
	switch d {
	case Anthropic:
		blocks := make([]json.RawMessage, len(texts))
		for i, t := range texts {
			blocks[i] = synthText(Anthropic, t)
		}
		return jk.join(blocks)
	case Bedrock:
		blocks := make([]json.RawMessage, len(texts))
		for i, t := range texts {
			blocks[i] = synthText(Bedrock, t)
		}
		return jk.join(blocks)
	case Gemini:
		parts := make([]json.RawMessage, len(texts))
		for i, t := range texts {
			parts[i] = synthText(Gemini, t)
		}
		return jk.marshal(map[string]any{"parts": jk.join(parts)})
	}
	return jk.quote(strings.Join(texts, "\n\n"))
}

// placePromptLines writes tombstone and pointer lines into the system prompt:
// appended to Anthropic system (a string or a block list), Responses
// instructions, a Gemini systemInstruction (a text part) or a Bedrock
// system list (a text block), each created when absent; in Chat,
// appended to the first system or developer message, or in a system
// message put first when there is none.
func placePromptLines(d Dialect, top *topFields, ps []rpiece, lines []string) []rpiece {
	if len(lines) == 0 {
		return ps
	}
	text := strings.Join(lines, "\n")
	if d == OpenAIChat {
		for i := range ps {
			if ps[i].isSystemMessage() {
				if raw, ok := chatAppendText(ps[i].raw, text); ok {
					ps[i].raw = raw
					return ps
				}
			}
		}
		sys := rpiece{role: "system", synth: true, raw: jk.marshal(map[string]any{"role": "system", "content": text})}
		return append([]rpiece{sys}, ps...)
	}
	key := promptKey(d, top)
	cur, _ := top.get(key)
	switch d {
	case Anthropic:
		if s, ok := jk.str(cur); ok {
			top.set(key, jk.quote(s+"\n\n"+text))
		} else if blocks, ok := jk.arr(cur); ok {
			top.set(key, jk.join(append(blocks, synthText(Anthropic, text))))
		} else {
			top.set(key, jk.quote(text))
		}
	case OpenAIResponses:
		if s, ok := jk.str(cur); ok && s != "" {
			text = s + "\n\n" + text
		}
		top.set(key, jk.quote(text))
	case Bedrock:
		blocks, _ := jk.arr(cur)
		top.set(key, jk.join(append(blocks, synthText(Bedrock, text))))
	case Gemini:
		si, ok := jk.obj(cur)
		if !ok {
			si = map[string]json.RawMessage{}
		}
		parts, _ := jk.arr(si["parts"])
		si["parts"] = jk.join(append(parts, synthText(Gemini, text)))
		top.set(key, jk.marshal(si))
	}
	return ps
}

// chatAppendText appends text to a Chat message's content.
func chatAppendText(raw json.RawMessage, text string) (json.RawMessage, bool) {
	obj, ok := jk.obj(raw)
	if !ok {
		return nil, false
	}
	c := obj["content"]
	if s, ok := jk.str(c); ok {
		if s != "" {
			text = s + "\n\n" + text
		}
		obj["content"] = jk.quote(text)
	} else if parts, ok := jk.arr(c); ok {
		obj["content"] = jk.join(append(parts, jk.marshal(map[string]any{"type": "text", "text": text})))
	} else {
		obj["content"] = jk.quote(text)
	}
	return jk.marshal(obj), true
}

// declareResident writes the tools declaration of the resident registered
// tools, sorted by name: the key it goes under and its value. ok is false
// when no tool is resident.
func declareResident(d Dialect, tools []pruneguard.ToolState) (key string, val json.RawMessage, ok bool) {
	var decls []json.RawMessage
	for _, ts := range tools {
		if !ts.Registered || !ts.Resident {
			continue
		}
		schema := ts.Tool.Schema
		if len(ts.Compressed) > 0 {
			schema = ts.Compressed
		}
		if _, isObj := jk.obj(schema); !isObj {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		name := ts.Tool.Name
		switch d {
		case OpenAIChat:
			decls = append(decls, jk.marshal(map[string]any{"type": "function",
				"function": map[string]any{"name": name, "parameters": schema}}))
		case OpenAIResponses:
			decls = append(decls, jk.marshal(map[string]any{"type": "function", "name": name,
				"parameters": schema, "strict": false}))
		case Anthropic:
			decls = append(decls, jk.marshal(map[string]any{"name": name, "input_schema": schema}))
		case Gemini:
			decls = append(decls, jk.marshal(map[string]any{"name": name, "parametersJsonSchema": schema}))
		case Bedrock:
			decls = append(decls, jk.marshal(map[string]any{"toolSpec": map[string]any{
				"name": name, "inputSchema": map[string]any{"json": schema}}}))
		}
	}
	if len(decls) == 0 {
		return "", nil, false
	}
	switch d {
	case Gemini:
		return "tools", jk.marshal([]any{map[string]any{"functionDeclarations": jk.join(decls)}}), true
	case Bedrock:
		return "toolConfig", jk.marshal(map[string]any{"tools": jk.join(decls)}), true
	}
	return "tools", jk.join(decls), true
}

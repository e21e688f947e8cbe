package wire

import (
	"encoding/json"

	"github.com/pruneguard/pruneguard"
)

// chatProvider is the table of OpenAI Chat Completions.
var chatProvider = provider{
	// how it reads
	dialect:    OpenAIChat,
	historyKey: "messages",
	entry:      "message",
	readEntry:  (*reader).readChat,

	// how calls pair, and what goes in one unit
	track:       trackChat,
	userMessage: userRole,

	// its server: what it holds, where requests go
	paths: []string{"/chat/completions"},

	// its rules
	emptyRule:    RuleChatEmptyMessages,
	emptyWording: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
	validate:     func(_ *Body, ms []*facts, sc scope, v violations) violations { validateChat(ms, sc, &v); return v },
	toolFields:   func(b *Body, ts *toolState, v violations) violations { chatToolFields(b, ts, &v); return v },

	// how the rule screen checks an edit
	window:       windowToolBlocks,
	cleanWindows: true,

	// what a stub replaces
	stub: stubChat,

	// where its tools live
	toolLists: []toolList{{key: "tools"}, {key: "functions"}},
	toolDecl:  chatToolDecl,

	// where its system prompt lives
	promptInHistory: true,
	hasPrompt:       noTopPrompt,
	addPromptText:   chatAddText,

	// how it writes messages
	modelRole:    "assistant",
	writeEntries: chatEntries,
	writeResult:  chatResult,
	declare:      chatDeclare,
	eventKind:    chatEventKind,
	callType:     "tool_call",
	resultType:   "tool",

	// how it writes a summary
	summary: chatSummary,
}

// ---- reading ------------------------------------------------------------------

// readChat reads a Chat message: its content, the reasoning some
// servers add, its tool calls (and a legacy function_call) and the
// results of a tool or function message, in that order.
func (r *reader) readChat(f *facts, obj jobj) error {
	if err := r.requireRole(f, obj); err != nil {
		return err
	}
	var err error
	if f.name, err = r.optString(obj, "name"); err != nil {
		return errAt(here, "%v", err)
	}
	if err := r.chatContent(f, obj.get("content")); err != nil {
		return err
	}
	r.chatReasoning(f, obj)
	if err := r.chatToolCalls(f, obj.get("tool_calls")); err != nil {
		return err
	}
	if fc := obj.get("function_call"); !isNull(fc) && f.role == "assistant" {
		if err := r.chatFunctionCall(f, fc); err != nil {
			return err
		}
	}
	switch f.role {
	case "function":
		f.add(fpart{kind: PartResult, typ: "function", name: f.name})
	case "tool":
		return r.chatResults(f, obj)
	}
	return nil
}

// chatContent reads the content of a Chat message: a string or an array
// of content parts, of which those of type text (or with text and no
// type) are text.
func (r *reader) chatContent(f *facts, content []byte) error {
	return r.textContent(f, content, "text", func(typ string, part jobj) (string, bool) {
		return "text", typ == "text" || (typ == "" && part.has("text"))
	})
}

// chatReasoning reads the reasoning fields OpenAI-compatible servers add
// to an assistant message.
func (r *reader) chatReasoning(f *facts, obj jobj) {
	for _, k := range []string{"reasoning_content", "reasoning", "thinking"} {
		raw := obj.get(k)
		if isNull(raw) {
			continue
		}
		raw = trimSpace(raw)
		if kindOf(raw) == '"' && len(raw) == 2 {
			continue
		}
		var t []byte
		if kindOf(raw) == '"' {
			t = raw
		}
		f.add(textPart(PartReasoning, k, t, false))
	}
}

// chatToolCalls reads the tool_calls of a Chat message (function or
// custom tools).
func (r *reader) chatToolCalls(f *facts, tc []byte) error {
	if isNull(tc) {
		return nil
	}
	calls, ok := r.v.array(tc)
	if !ok {
		return errAt(field("tool_calls"), "tool_calls is %s, not an array", kindName(tc))
	}
	for k := 0; k < calls.len(); k++ {
		p := elem("tool_calls", k)
		cr := calls.at(k)
		c, ok := r.v.object(cr)
		if !ok {
			return errAt(p, "tool call is %s, not an object", kindName(cr))
		}
		id, err := r.optString(c, "id")
		if err != nil {
			return errAt(p, "%v", err)
		}
		if id == "" {
			return errAt(p, "tool call without id")
		}
		call := fpart{kind: PartCall, typ: "tool_call", id: id}
		fn := c.get("function")
		if isNull(fn) {
			fn = c.get("custom")
		}
		if !isNull(fn) {
			fo, ok := r.v.object(fn)
			if !ok {
				return errAt(p.then(".function"), "function is %s, not an object", kindName(fn))
			}
			if call.name, err = r.optString(fo, "name"); err != nil {
				return errAt(p.then(".function"), "%v", err)
			}
			if a := fo.get("arguments"); a != nil {
				call.val = a
			} else {
				call.val = fo.get("input")
			}
		}
		f.add(call)
	}
	return nil
}

// chatFunctionCall reads a legacy function_call: one call, without an id,
// answered by the role "function" message right after it.
func (r *reader) chatFunctionCall(f *facts, fc []byte) error {
	fo, ok := r.v.object(fc)
	if !ok {
		return errAt(field("function_call"), "function_call is %s, not an object", kindName(fc))
	}
	name, err := r.optString(fo, "name")
	if err != nil {
		return errAt(field("function_call"), "%v", err)
	}
	if name == "" {
		return errAt(field("function_call"), "function_call without name")
	}
	f.add(fpart{kind: PartCall, typ: "function_call", name: name, val: fo.get("arguments")})
	return nil
}

// chatResults reads the call ids a tool message answers: its
// tool_call_id, or SWE-agent's tool_call_ids list.
func (r *reader) chatResults(f *facts, obj jobj) error {
	id, err := r.optString(obj, "tool_call_id")
	if err != nil {
		return errAt(field("tool_call_id"), "%v", err)
	}
	n := 0
	if id != "" {
		f.add(fpart{kind: PartResult, typ: "tool", id: id, name: f.name})
		n++
	} else if raw := obj.get("tool_call_ids"); !isNull(raw) {
		list, ok := r.v.array(raw)
		if !ok {
			return errAt(field("tool_call_ids"), "tool_call_ids is %s, not an array", kindName(raw))
		}
		for k := 0; k < list.len(); k++ {
			e := list.at(k)
			if kindOf(e) != '"' || len(trimSpace(e)) == 2 {
				return errAt(elem("tool_call_ids", k), "tool call id is not a non-empty string")
			}
		}
		for k := 0; k < list.len(); k++ {
			f.add(fpart{kind: PartResult, typ: "tool", id: r.str(trimSpace(list.at(k))), name: f.name})
			n++
		}
	}
	if n == 0 {
		return errAt(here, "tool message without tool_call_id")
	}
	return nil
}

// ---- pairing ------------------------------------------------------------------

// trackChat pairs the tool (or legacy function) messages right after an
// assistant message with tool calls with those calls; any other message
// ends the block, and its calls can no longer be answered.
func trackChat(t *tracker, f *facts, keys []int32, s *step) {
	if t.inBlock && (f.role == "tool" || (f.role == "function" && openLegacy(t.block))) {
		for _, p := range f.parts {
			if p.kind == PartResult {
				k, _ := answer(t.block, p.id)
				s.answers = append(s.answers, k)
			}
		}
		return
	}
	if t.inBlock {
		s.closed = openKeys(t.block)
		t.inBlock = false
	}
	if f.role == "assistant" && f.ncalls > 0 {
		t.block, t.inBlock = appendCalls(t.block[:0], f, keys), true
		return
	}
	for range f.nresults {
		s.answers = append(s.answers, -1)
	}
}

// openLegacy reports an unanswered legacy function_call (the call
// without an id) among cs.
func openLegacy(cs []tcall) bool {
	for _, c := range cs {
		if c.id == "" && !c.done {
			return true
		}
	}
	return false
}

// ---- stubs ---------------------------------------------------------------------

// stubChat replaces the content of a tool or function message.
func stubChat(obj map[string]json.RawMessage, _ string, textJSON json.RawMessage) error {
	obj["content"] = textJSON
	return nil
}

// ---- tools ---------------------------------------------------------------------

// chatToolDecl finds the declaration of a tools or functions entry: a
// function tool's "function" object, a custom tool's "custom" object
// (which has no input schema), or a legacy functions entry itself.
func chatToolDecl(entry map[string]json.RawMessage) (string, map[string]json.RawMessage, string) {
	inner := ""
	switch {
	case entry["function"] != nil:
		inner = "function"
	case entry["custom"] != nil:
		custom, _ := asObject(entry["custom"])
		return "custom", custom, ""
	}
	decl := entry
	if inner != "" {
		decl, _ = asObject(entry[inner])
	}
	return inner, decl, parametersKey(decl)
}

// parametersKey is the key of an OpenAI declaration's schema:
// "parameters", or "input_schema" in a declaration that gives only that.
func parametersKey(decl map[string]json.RawMessage) string {
	if _, ok := decl["parameters"]; !ok {
		if _, ok := decl["input_schema"]; ok {
			return "input_schema"
		}
	}
	return "parameters"
}

// ---- system prompt -------------------------------------------------------------

// chatAddText appends text to the content of a Chat system message, or
// makes a system message of it when there is none.
func chatAddText(cur json.RawMessage, text string) (json.RawMessage, bool) {
	if cur == nil {
		return jk.marshal(map[string]any{"role": "system", "content": text}), true
	}
	obj, ok := asObject(cur)
	if !ok {
		return nil, false
	}
	switch c := obj["content"]; kindOf(c) {
	case '"':
		s, _ := asString(c)
		obj["content"] = mustString(afterText(s, text))
	case '[':
		parts, _ := asArray(c)
		obj["content"] = joinArray(append(parts, jk.marshal(map[string]any{"type": "text", "text": text})))
	default:
		obj["content"] = mustString(text)
	}
	return jk.marshal(obj), true
}

// ---- writing -------------------------------------------------------------------

// chatEntries writes a message as a Chat message, its calls as
// tool_calls (content is optional beside them).
func chatEntries(role, text string, calls []pruneguard.Call) []rpiece {
	msg := map[string]any{"role": role, "content": text}
	if len(calls) > 0 {
		tc := make([]any, len(calls))
		for i, c := range calls {
			tc[i] = map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Tool, "arguments": jk.argString(c.Args)}}
		}
		msg["tool_calls"] = tc
		if text == "" {
			delete(msg, "content")
		}
	}
	return []rpiece{{role: role, raw: jk.marshal(msg), synth: true}}
}

// chatSummary writes a summary as a user message with its text as
// content.
func chatSummary(text string) json.RawMessage {
	return jk.marshal(map[string]any{"role": "user", "content": text})
}

// chatResult writes a result as a tool message.
func chatResult(id pruneguard.CallID, text, _ string) json.RawMessage {
	return jk.marshal(map[string]any{"role": "tool", "tool_call_id": id, "content": text})
}

// chatDeclare writes a function tool's declaration.
func chatDeclare(name string, schema json.RawMessage) json.RawMessage {
	return jk.marshal(map[string]any{"type": "function", "function": map[string]any{"name": name, "parameters": schema}})
}

// chatEventKind makes a message carrying results a tool message.
func chatEventKind(m pruneguard.Message, role string) (string, string) {
	if role == "user" && len(m.Answers) > 0 {
		return "tool", ""
	}
	return role, ""
}

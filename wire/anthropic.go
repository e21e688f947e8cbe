package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// anthropicProvider is the table of Anthropic Messages.
var anthropicProvider = provider{
	// how it reads
	dialect:    Anthropic,
	historyKey: "messages",
	entry:      "message",
	readEntry:  (*reader).readAnthropic,
	readTop:    readAnthropicTop,

	// how calls pair, and what goes in one unit
	track:       trackAnthropic,
	finish:      finishAnthropic,
	userMessage: userRole,
	coupled:     func(prev, f *facts) bool { return coupledTurns(prev.role, f.role) },

	// its server: what it holds, where requests go
	pausedTurns: true,
	paths:       []string{"/messages"},

	// its rules
	emptyRule:    RuleAnthropicEmptyMessages,
	emptyWording: "messages: at least one message is required",
	validate: func(b *Body, ms []*facts, sc scope, v violations) violations {
		validateAnthropic(b, ms, sc, &v)
		return v
	},
	toolFields: func(b *Body, ts *toolState, v violations) violations { anthropicToolFields(b, ts, &v); return v },
	toolBlocks: anthropicToolBlocks,
	toolRefs:   anthropicToolRefs,

	// how the rule screen checks an edit
	window:      windowTurns,
	screenWhole: wholeAnthropic,

	// what a stub replaces
	stub: stubAnthropic,

	// where its tools live
	toolLists: []toolList{{key: "tools"}},
	toolDecl:  anthropicToolDecl,

	// where its system prompt lives
	promptKey:     promptAt("system"),
	hasPrompt:     alwaysPrompt,
	addPromptText: anthropicAddText,
	systemPrompt:  func(texts []string) json.RawMessage { return textBlocks(texts, anthropicText) },

	// how it writes messages
	turns:       true,
	turnKey:     "content",
	modelRole:   "assistant",
	textBlock:   anthropicText,
	callBlock:   anthropicCall,
	writeResult: anthropicResult,
	declare:     anthropicDeclare,
	callType:    "tool_use",
	resultType:  "tool_result",

	// how it writes a summary
	summary: anthropicSummary,

	// what its results say
	results: anthropicResults,
}

// ---- reading ------------------------------------------------------------------

// readAnthropic reads an Anthropic message: its content, a string or an
// array of blocks (text, tool use and results, thinking, server tool use
// and results, tool references).
func (r *reader) readAnthropic(f *facts, obj jobj) error {
	if err := r.requireRole(f, obj); err != nil {
		return err
	}
	content := obj.get("content")
	switch kindOf(content) {
	case 0, 'n':
		f.empty = true
		return nil
	case '"':
		s := trimSpace(content)
		f.empty = len(s) == 2
		if !f.empty {
			f.add(textPart(PartText, "text", s, false))
		}
		return nil
	case '[':
	default:
		return errAt(field("content"), "content is %s, not a string or an array", kindName(content))
	}
	blocks, _ := r.v.array(content)
	f.empty = blocks.len() == 0
	return r.eachObject(blocks, "content", "content block", func(p at, blk jobj) error {
		typ, err := r.optString(blk, "type")
		if err != nil {
			return errAt(p, "%v", err)
		}
		if typ == "" {
			return errAt(p, "content block without type")
		}
		switch {
		case typ == "text":
			t, err := textVal(blk, "text")
			if err != nil {
				return errAt(p, "%v", err)
			}
			f.add(textPart(PartText, typ, t, false))
		case typ == "tool_use":
			id, name, err := r.idAndName(blk, "id")
			if err != nil {
				return errAt(p, "%v", err)
			}
			if id == "" {
				return errAt(p, "tool_use without id")
			}
			f.add(fpart{kind: PartCall, typ: typ, id: id, name: name, val: blk.get("input")})
		case typ == "tool_result":
			id, err := r.optString(blk, "tool_use_id")
			if err != nil {
				return errAt(p, "%v", err)
			}
			if id == "" {
				return errAt(p, "tool_result without tool_use_id")
			}
			res := fpart{kind: PartResult, typ: typ, id: id}
			if isTrue(blk.get("is_error")) {
				res.failed, res.val = true, blk.get("content")
			}
			f.add(res)
			f.refs = r.toolReferences(f.refs, blk.get("content"))
		case typ == "thinking" || typ == "redacted_thinking":
			sig := trimSpace(blk.get("signature"))
			text := trimSpace(blk.get("thinking"))
			if kindOf(text) != '"' {
				text = nil
			}
			signed := (kindOf(sig) == '"' && len(sig) > 2) || typ == "redacted_thinking"
			f.add(textPart(PartReasoning, typ, text, signed))
		case typ == "server_tool_use" || typ == "mcp_tool_use":
			id, name, err := r.idAndName(blk, "id")
			if err != nil {
				return errAt(p, "%v", err)
			}
			if id == "" {
				return errAt(p, "%s without id", typ)
			}
			f.add(fpart{kind: PartServerCall, typ: typ, id: id, name: name, val: blk.get("input")})
		case isAnthropicServerResult(typ):
			id, err := r.optString(blk, "tool_use_id")
			if err != nil {
				return errAt(p, "%v", err)
			}
			if id == "" {
				return errAt(p, "%q without tool_use_id", typ)
			}
			res := fpart{kind: PartServerResult, typ: typ, id: id, name: serverName(f, id)}
			if isTrue(blk.get("is_error")) || strings.HasSuffix(r.objStr(blk.get("content"), "type"), "_error") {
				res.failed, res.val = true, blk.get("content")
			}
			f.add(res)
			f.refs = r.toolReferences(f.refs, blk.get("content"))
		case typ == "tool_reference":
			if n := r.strOf(blk.get("tool_name")); n != "" {
				f.refs = append(f.refs, n)
			}
			f.add(fpart{kind: PartOther, typ: typ})
		default:
			f.add(fpart{kind: PartOther, typ: typ})
		}
		return nil
	})
}

// toolReferences appends the tools named by the tool_reference blocks of
// a result's content: an array of blocks (a client tool_result), or an
// object holding a tool_references array (a tool search result).
func (r *reader) toolReferences(names []string, content []byte) []string {
	if !bytes.Contains(content, []byte(`"tool_reference"`)) {
		return names // one fast scan instead of a decode, for most results
	}
	blocks, ok := r.v.array(content)
	if !ok {
		obj, ok := r.v.object(content)
		if !ok {
			return names
		}
		if blocks, ok = r.v.array(obj.get("tool_references")); !ok {
			return names
		}
	}
	for k := 0; k < blocks.len(); k++ {
		raw := blocks.at(k)
		if kindOf(raw) != '{' || !bytes.Contains(raw, []byte(`"tool_reference"`)) {
			continue
		}
		blk, ok := r.v.object(raw)
		if !ok || r.strOf(blk.get("type")) != "tool_reference" {
			continue
		}
		if n := r.strOf(blk.get("tool_name")); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// serverName returns the tool name of the server call with the given id
// among the parts read so far.
func serverName(f *facts, id string) string {
	for _, p := range f.parts {
		if p.kind == PartServerCall && p.id == id {
			return p.name
		}
	}
	return ""
}

// isAnthropicServerResult reports an Anthropic server tool result type.
func isAnthropicServerResult(typ string) bool {
	return typ != "tool_result" && strings.HasSuffix(typ, "_tool_result")
}

// readAnthropicTop reads the type of the thinking setting, which the
// thinking rules depend on.
func readAnthropicTop(b *Body) error {
	raw, ok := b.top.fields["thinking"]
	if !ok || isNull(raw) {
		return nil
	}
	obj, ok := asObject(raw)
	if !ok {
		return fmt.Errorf("thinking is %s, not an object", kindName(raw))
	}
	t, err := optString(obj, "type")
	if err != nil {
		return fmt.Errorf("thinking.%v", err)
	}
	b.thinking = t
	return nil
}

// ---- pairing ------------------------------------------------------------------

// trackAnthropic pairs the tool_result blocks of the user turn right
// after an assistant turn with that turn's tool_use blocks, merging
// consecutive messages of one role into a turn.
func trackAnthropic(t *tracker, f *facts, keys []int32, s *step) {
	if f.role != t.role {
		// A new turn. The user turn after an assistant turn ends: the
		// assistant turn's calls can no longer be answered.
		if t.answering || (t.role == "assistant" && f.role != "user") {
			s.closed = openKeys(t.turnCalls)
		}
		t.answering = f.role == "user" && t.role == "assistant"
		if !t.answering {
			t.turnCalls = t.turnCalls[:0]
		}
		t.role = f.role
	}
	for _, p := range f.parts {
		if p.kind != PartResult {
			continue
		}
		k := int32(-1)
		if t.answering {
			k, _ = answer(t.turnCalls, p.id)
		}
		s.answers = append(s.answers, k)
	}
	if f.role == "assistant" {
		t.turnCalls = appendCalls(t.turnCalls, f, keys)
	}
}

// finishAnthropic closes the calls of the last assistant turn when the
// user turn after it ended the history without answering them all; the
// calls of a last assistant turn are the trailing batch.
func finishAnthropic(t *tracker) (closed []int32, report func(key int32) bool) {
	if !t.answering {
		return nil, reportAll
	}
	return openKeys(t.turnCalls), reportAll
}

// ---- stubs ---------------------------------------------------------------------

// stubAnthropic replaces the content of each tool_result block of a
// message. tool_reference blocks name tools that must stay loaded: they
// stay, after the placeholder.
func stubAnthropic(obj map[string]json.RawMessage, text string, textJSON json.RawMessage) error {
	return stubBlocks(obj, "content", func(blk map[string]json.RawMessage) (bool, error) {
		if t, _ := optString(blk, "type"); t != "tool_result" {
			return false, nil
		}
		refs := referenceBlocks(blk["content"])
		if len(refs) == 0 {
			blk["content"] = textJSON
			return true, nil
		}
		tb, err := json.Marshal(map[string]string{"type": "text", "text": text})
		if err != nil {
			return false, err
		}
		blk["content"] = joinArray(append([]json.RawMessage{tb}, refs...))
		return true, nil
	})
}

// referenceBlocks returns the tool_reference blocks of a tool_result's
// content array.
func referenceBlocks(content json.RawMessage) []json.RawMessage {
	items, _ := asArray(content)
	var out []json.RawMessage
	for _, it := range items {
		if blk, ok := asObject(it); ok && str(blk["type"]) == "tool_reference" {
			out = append(out, it)
		}
	}
	return out
}

// ---- tools ---------------------------------------------------------------------

// anthropicToolDecl finds the declaration of a tools entry: the entry.
func anthropicToolDecl(entry map[string]json.RawMessage) (string, map[string]json.RawMessage, string) {
	return "", entry, "input_schema"
}

// ---- system prompt -------------------------------------------------------------

// anthropicAddText appends text to the system prompt: to a string, or
// as a text block to a block list.
func anthropicAddText(cur json.RawMessage, text string) (json.RawMessage, bool) {
	switch kindOf(cur) {
	case '"':
		s, _ := asString(cur)
		return mustString(afterText(s, text)), true
	case '[':
		items, _ := asArray(cur)
		return joinArray(append(items, anthropicText(text))), true
	}
	return mustString(text), true
}

// anthropicText is a text block.
func anthropicText(text string) json.RawMessage {
	return jk.marshal(map[string]any{"type": "text", "text": text})
}

// ---- writing -------------------------------------------------------------------

// anthropicSummary writes a summary as a user message of one text
// block. The API merges consecutive user messages: after a user message,
// the summary's text comes after that message's blocks, its tool_result
// blocks still first as the API wants. A run of whole units ends before
// an assistant turn, so no turn of tool results follows a summary (one
// that would, text before its tool_result blocks, is refused by the
// screen).
func anthropicSummary(text string) json.RawMessage {
	return jk.marshal(map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}})
}

// anthropicResults gives the content of the tool_result blocks and of
// the server tool results of a message.
func anthropicResults(obj map[string]json.RawMessage, add func(json.RawMessage)) {
	resultBlocks(obj, "content", "content", func(blk map[string]json.RawMessage) (map[string]json.RawMessage, bool) {
		typ := str(blk["type"])
		return blk, typ == "tool_result" || isAnthropicServerResult(typ)
	}, add)
}

// anthropicCall writes a call as a tool_use block.
func anthropicCall(c pruneguard.Call) json.RawMessage {
	return jk.marshal(map[string]any{"type": "tool_use", "id": c.ID, "name": c.Tool, "input": jk.object(c.Args)})
}

// anthropicResult writes a result as a tool_result block, without
// content when its text is blank.
func anthropicResult(id pruneguard.CallID, text, _ string) json.RawMessage {
	blk := map[string]any{"type": "tool_result", "tool_use_id": id}
	if strings.TrimSpace(text) != "" {
		blk["content"] = text
	}
	return jk.marshal(blk)
}

// anthropicDeclare writes a tool's declaration.
func anthropicDeclare(name string, schema json.RawMessage) json.RawMessage {
	return jk.marshal(map[string]any{"name": name, "input_schema": schema})
}

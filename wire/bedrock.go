package wire

import (
	"encoding/json"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// bedrockProvider is the table of AWS Bedrock Converse.
var bedrockProvider = provider{
	// how it reads
	dialect:    Bedrock,
	historyKey: "messages",
	entry:      "message",
	readEntry:  (*reader).readBedrock,
	readTop:    readBedrockTop,

	// how calls pair, and what goes in one unit
	track:       trackBedrock,
	userMessage: userRole,
	coupled:     func(prev, f *facts) bool { return coupledTurns(prev.role, f.role) },

	// its server: what it holds, where requests go
	paths: []string{"/converse", "/converse-stream"},

	// its rules
	emptyRule:    RuleBedrockEmptyMessages,
	emptyWording: "messages: the conversation is empty; it must start with a user message.",
	validate: func(b *Body, ms []*facts, sc scope, v violations) violations {
		validateBedrock(b, ms, sc, &v)
		return v
	},
	toolFields: func(b *Body, ts *toolState, v violations) violations { bedrockToolFields(b, ts, &v); return v },

	// how the rule screen checks an edit
	screenWhole: wholeBedrock,

	// what a stub replaces
	stub: stubBedrock,

	// where its tools live
	toolLists:    []toolList{{key: "toolConfig", inner: "tools"}},
	toolDecl:     bedrockToolDecl,
	schemaInJSON: true,

	// where its system prompt lives
	promptKey:     promptAt("system"),
	hasPrompt:     bedrockHasPrompt,
	addPromptText: bedrockAddText,
	systemPrompt:  func(texts []string) json.RawMessage { return textBlocks(texts, plainText) },

	// how it writes messages
	turns:       true,
	turnKey:     "content",
	modelRole:   "assistant",
	textBlock:   plainText,
	callBlock:   bedrockCall,
	writeResult: bedrockResult,
	declare:     bedrockDeclare,
	callType:    "toolUse",
	resultType:  "toolResult",

	// how it writes a summary
	summary:      bedrockSummary,
	summaryJoins: true,

	// what its results say
	results: bedrockResults,
}

// ---- reading ------------------------------------------------------------------

// readBedrock reads a Bedrock Converse message: its role and its content
// blocks (tool use and results, reasoning, text).
func (r *reader) readBedrock(f *facts, obj jobj) error {
	if err := r.requireRole(f, obj); err != nil {
		return err
	}
	return r.eachBlock(f, obj, "content", "content block", func(p at, blk jobj) error {
		switch {
		case !isNull(blk.get("toolUse")):
			tu, err := r.objectAt(blk, "toolUse", p)
			if err != nil {
				return err
			}
			id, name, err := r.idAndName(tu, "toolUseId")
			if err != nil {
				return errAt(p.then(".toolUse"), "%v", err)
			}
			if id == "" {
				return errAt(p, "toolUse without toolUseId")
			}
			f.add(fpart{kind: PartCall, typ: "toolUse", id: id, name: name, val: tu.get("input")})
		case !isNull(blk.get("toolResult")):
			tr, err := r.objectAt(blk, "toolResult", p)
			if err != nil {
				return err
			}
			id, err := r.optString(tr, "toolUseId")
			if err != nil {
				return errAt(p.then(".toolResult"), "%v", err)
			}
			if id == "" {
				return errAt(p, "toolResult without toolUseId")
			}
			res := fpart{kind: PartResult, typ: "toolResult", id: id}
			if r.strOf(tr.get("status")) == "error" {
				res.failed, res.val = true, tr.get("content")
			}
			f.add(res)
		case !isNull(blk.get("reasoningContent")):
			rc, _ := r.v.object(blk.get("reasoningContent"))
			var signed bool
			var text []byte
			if rc.ok() {
				signed = !isNull(rc.get("redactedContent"))
				if rt, ok := r.v.object(rc.get("reasoningText")); ok {
					sig := trimSpace(rt.get("signature"))
					signed = signed || (kindOf(sig) == '"' && len(sig) > 2)
					if t := trimSpace(rt.get("text")); kindOf(t) == '"' {
						text = t
					}
				}
			}
			f.add(textPart(PartReasoning, "reasoningContent", text, signed))
		case blk.has("text"):
			t, err := textVal(blk, "text")
			if err != nil {
				return errAt(p, "%v", err)
			}
			f.add(textPart(PartText, "text", t, false))
		default:
			f.add(fpart{kind: PartOther, typ: r.firstKey(blk)})
		}
		return nil
	})
}

// readBedrockTop reads whether the request declares a toolConfig, which
// tool blocks require.
func readBedrockTop(b *Body) error {
	raw, ok := b.top.fields["toolConfig"]
	b.hasToolConfig = ok && !isNull(raw)
	return nil
}

// ---- pairing -------------------------------------------------------------------

// trackBedrock pairs the toolResult blocks of a user message with the
// toolUse blocks of the message right before it, by id.
func trackBedrock(t *tracker, f *facts, keys []int32, s *step) {
	t.adjacent(f, keys, s, false, false)
}

// ---- stubs ---------------------------------------------------------------------

// stubBedrock makes the content of each toolResult block [{"text": text}].
func stubBedrock(obj map[string]json.RawMessage, text string, _ json.RawMessage) error {
	content, err := json.Marshal([]map[string]string{{"text": text}})
	if err != nil {
		return err
	}
	return stubBlocks(obj, "content", func(blk map[string]json.RawMessage) (bool, error) {
		tr, ok := asObject(blk["toolResult"])
		if !ok {
			return false, nil
		}
		tr["content"] = content
		b, err := json.Marshal(tr)
		if err != nil {
			return false, err
		}
		blk["toolResult"] = b
		return true, nil
	})
}

// ---- tools ---------------------------------------------------------------------

// bedrockToolDecl finds the declaration of a toolConfig.tools entry: its
// toolSpec.
func bedrockToolDecl(entry map[string]json.RawMessage) (string, map[string]json.RawMessage, string) {
	spec, ok := asObject(entry["toolSpec"])
	if !ok {
		return "", nil, ""
	}
	return "toolSpec", spec, "inputSchema"
}

// ---- system prompt -------------------------------------------------------------

// bedrockHasPrompt reports a system list that is not empty.
func bedrockHasPrompt(field func(string) json.RawMessage) bool {
	items, _ := asArray(field("system"))
	return len(items) > 0
}

// bedrockAddText appends text as a text block of the system list.
func bedrockAddText(cur json.RawMessage, text string) (json.RawMessage, bool) {
	blocks, _ := asArray(cur)
	return joinArray(append(blocks, plainText(text))), true
}

// ---- writing -------------------------------------------------------------------

// bedrockSummary writes a summary as a user message of one text block.
// Bedrock merges nothing and wants roles to alternate, and a run of
// whole units starts with an assistant message after a user message: the
// summary's text then joins that user message, as a text block after its
// own (after its toolResult blocks, which Claude models want first; the
// models that take no text beside a toolResult, B5, are not told apart).
// A summary with no message before it, in the place of the first
// message, stands as the first user message.
func bedrockSummary(text string) json.RawMessage {
	return jk.marshal(map[string]any{"role": "user", "content": []any{plainText(text)}})
}

// bedrockResults gives the content of the toolResult blocks of a message.
func bedrockResults(obj map[string]json.RawMessage, add func(json.RawMessage)) {
	resultBlocks(obj, "content", "content", func(blk map[string]json.RawMessage) (map[string]json.RawMessage, bool) {
		return asObject(blk["toolResult"])
	}, add)
}

// bedrockCall writes a call as a toolUse block.
func bedrockCall(c pruneguard.Call) json.RawMessage {
	return jk.marshal(map[string]any{"toolUse": map[string]any{"toolUseId": c.ID, "name": c.Tool, "input": jk.object(c.Args)}})
}

// bedrockResult writes a result as a toolResult block: its text as a
// text block, or, blank, an empty JSON block (text blocks may not be
// blank).
func bedrockResult(id pruneguard.CallID, text, _ string) json.RawMessage {
	content := []any{map[string]any{"text": text}}
	if strings.TrimSpace(text) == "" {
		content = []any{map[string]any{"json": map[string]any{}}}
	}
	return jk.marshal(map[string]any{"toolResult": map[string]any{"toolUseId": id, "content": content}})
}

// bedrockDeclare writes a tool's toolSpec.
func bedrockDeclare(name string, schema json.RawMessage) json.RawMessage {
	return jk.marshal(map[string]any{"toolSpec": map[string]any{"name": name, "inputSchema": map[string]any{"json": schema}}})
}

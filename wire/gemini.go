package wire

import (
	"encoding/json"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// geminiProvider is the table of Google Gemini generateContent.
var geminiProvider = provider{
	// how it reads
	dialect:    Gemini,
	historyKey: "contents",
	entry:      "content",
	readEntry:  (*reader).readGemini,

	// how calls pair, and what goes in one unit
	track:       trackGemini,
	userMessage: func(role, _ string) bool { return isGeminiUserRole(role) },
	coupled:     func(prev, f *facts) bool { return coupledTurns(geminiSide(prev), geminiSide(f)) },

	// its server: what it holds, where requests go
	paths: []string{":generateContent", ":streamGenerateContent"},

	// its rules
	emptyRule:    RuleGeminiEmptyContents,
	emptyWording: "GenerateContentRequest.contents: contents is not specified",
	validate:     func(_ *Body, ms []*facts, sc scope, v violations) violations { validateGemini(ms, sc, &v); return v },
	toolFields:   func(b *Body, ts *toolState, v violations) violations { geminiToolFields(b, ts, &v); return v },

	// how the rule screen checks an edit
	screenWhole: wholeGemini,

	// what a stub replaces
	stub: stubGemini,

	// where its tools live
	toolLists: []toolList{{key: "tools", groups: []string{"functionDeclarations", "function_declarations"}}},
	toolDecl:  geminiToolDecl,

	// where its system prompt lives
	promptKey:     geminiPromptKey,
	hasPrompt:     geminiHasPrompt,
	addPromptText: geminiAddText,
	systemPrompt:  geminiSystemPrompt,

	// how it writes messages
	turns:       true,
	turnKey:     "parts",
	modelRole:   "model",
	textBlock:   plainText,
	callBlock:   geminiCall,
	writeResult: geminiResult,
	declare:     geminiDeclare,
	callType:    "functionCall",
	resultType:  "functionResponse",

	// how it writes a summary
	summary: geminiSummary,

	// what its results say
	results: geminiResults,
}

// ---- reading ------------------------------------------------------------------

// readGemini reads a Gemini content turn: its role (user when absent)
// and its parts (function calls and responses, code execution, text and
// thought text).
func (r *reader) readGemini(f *facts, obj jobj) error {
	var err error
	if f.role, err = r.optString(obj, "role"); err != nil {
		return errAt(here, "%v", err)
	}
	if f.role == "" {
		f.role = "user" // the API's default for a content without role
	}
	return r.eachBlock(f, obj, "parts", "part", func(p at, part jobj) error {
		sig := !isNull(part.get("thoughtSignature")) || !isNull(part.get("thought_signature"))
		switch {
		case !isNull(part.get("functionCall")):
			fc, err := r.objectAt(part, "functionCall", p)
			if err != nil {
				return err
			}
			id, name, err := r.idAndName(fc, "id")
			if err != nil {
				return errAt(p.then(".functionCall"), "%v", err)
			}
			if name == "" {
				return errAt(p, "functionCall without name")
			}
			f.add(fpart{kind: PartCall, typ: "functionCall", id: id, name: name, signed: sig, val: fc.get("args")})
		case !isNull(part.get("functionResponse")):
			fr, err := r.objectAt(part, "functionResponse", p)
			if err != nil {
				return err
			}
			id, name, err := r.idAndName(fr, "id")
			if err != nil {
				return errAt(p.then(".functionResponse"), "%v", err)
			}
			if name == "" && id == "" {
				return errAt(p, "functionResponse without name or id")
			}
			res := fpart{kind: PartResult, typ: "functionResponse", id: id, name: name}
			if resp, ok := r.v.object(fr.get("response")); ok && !isNull(resp.get("error")) {
				res.failed, res.val = true, resp.get("error")
			}
			f.add(res)
		case !isNull(part.get("executableCode")):
			// Code the model runs with the code execution tool.
			f.add(fpart{kind: PartServerCall, typ: "executableCode", id: r.objStr(part.get("executableCode"), "id"), name: "code_execution", signed: sig, val: part.get("executableCode")})
		case !isNull(part.get("codeExecutionResult")):
			f.add(fpart{kind: PartServerResult, typ: "codeExecutionResult", id: r.objStr(part.get("codeExecutionResult"), "id"), name: "code_execution", signed: sig})
		case part.has("text"):
			t, err := textVal(part, "text")
			if err != nil {
				return errAt(p, "%v", err)
			}
			if thought := strings.TrimSpace(string(part.get("thought"))); thought == "true" {
				f.add(textPart(PartReasoning, "thought", t, sig))
			} else {
				f.add(textPart(PartText, "text", t, sig))
			}
		default:
			f.add(fpart{kind: PartOther, typ: r.firstKey(part, "thoughtSignature", "thought_signature", "thought"), signed: sig})
		}
		return nil
	})
}

// ---- pairing -------------------------------------------------------------------

// trackGemini pairs the functionResponse parts of a turn with the
// functionCall parts of the turn right before it, whatever its role: by
// id when both sides carry ids, by position otherwise.
func trackGemini(t *tracker, f *facts, keys []int32, s *step) {
	t.adjacent(f, keys, s, true, true)
}

// geminiSide folds a Gemini role into "user" or "assistant": function
// and tool turns are the user's side.
func geminiSide(f *facts) string {
	if isGeminiUserRole(f.role) {
		return "user"
	}
	return "assistant"
}

// isGeminiUserRole reports a role Gemini counts as the user side.
func isGeminiUserRole(r string) bool { return r == "user" || r == "function" || r == "tool" }

// ---- stubs ---------------------------------------------------------------------

// stubGemini makes the response of each functionResponse part
// {"result": text}; its multimodal parts go with the content.
func stubGemini(obj map[string]json.RawMessage, text string, _ json.RawMessage) error {
	resp, err := json.Marshal(map[string]string{"result": text})
	if err != nil {
		return err
	}
	return stubBlocks(obj, "parts", func(p map[string]json.RawMessage) (bool, error) {
		fr, ok := asObject(p["functionResponse"])
		if !ok {
			return false, nil
		}
		fr["response"] = resp
		delete(fr, "parts")
		b, err := json.Marshal(fr)
		if err != nil {
			return false, err
		}
		p["functionResponse"] = b
		return true, nil
	})
}

// ---- tools ---------------------------------------------------------------------

// geminiToolDecl finds the declaration of a functionDeclarations entry:
// the entry, whose schema is parametersJsonSchema or parameters.
func geminiToolDecl(entry map[string]json.RawMessage) (string, map[string]json.RawMessage, string) {
	if _, ok := entry["parametersJsonSchema"]; ok {
		return "", entry, "parametersJsonSchema"
	}
	return "", entry, "parameters"
}

// ---- system prompt -------------------------------------------------------------

// geminiPromptKey is systemInstruction, or system_instruction in a
// request that spells it so.
func geminiPromptKey(fields map[string]json.RawMessage) string {
	if _, ok := fields["system_instruction"]; ok {
		return "system_instruction"
	}
	return "systemInstruction"
}

// geminiHasPrompt reports a systemInstruction object.
func geminiHasPrompt(field func(string) json.RawMessage) bool {
	return kindOf(field("systemInstruction")) == '{' || kindOf(field("system_instruction")) == '{'
}

// geminiAddText appends text as a part of the systemInstruction.
func geminiAddText(cur json.RawMessage, text string) (json.RawMessage, bool) {
	si, ok := asObject(cur)
	if !ok {
		si = map[string]json.RawMessage{}
	}
	parts, _ := asArray(si["parts"])
	si["parts"] = joinArray(append(parts, plainText(text)))
	return jk.marshal(si), true
}

// geminiSystemPrompt writes system texts as a systemInstruction.
func geminiSystemPrompt(texts []string) json.RawMessage {
	return jk.marshal(map[string]any{"parts": textBlocks(texts, plainText)})
}

// ---- writing -------------------------------------------------------------------

// geminiSummary writes a summary as a user turn of one text part. A
// functionCall turn may follow it, as it may follow any user turn.
func geminiSummary(text string) json.RawMessage {
	return jk.marshal(map[string]any{"role": "user", "parts": []any{plainText(text)}})
}

// geminiResults gives the response of each functionResponse part and the
// output of each codeExecutionResult part of a content turn.
func geminiResults(obj map[string]json.RawMessage, add func(json.RawMessage)) {
	items, _ := asArray(obj["parts"])
	for _, it := range items {
		part, ok := asObject(it)
		if !ok {
			continue
		}
		if fr, ok := asObject(part["functionResponse"]); ok {
			if c, ok := fr["response"]; ok {
				add(c)
			}
		}
		if cr, ok := asObject(part["codeExecutionResult"]); ok {
			if c, ok := cr["output"]; ok {
				add(c)
			}
		}
	}
}

// geminiCall writes a call as a functionCall part.
func geminiCall(c pruneguard.Call) json.RawMessage {
	return jk.marshal(map[string]any{"functionCall": map[string]any{"id": c.ID, "name": c.Tool, "args": jk.object(c.Args)}})
}

// geminiResult writes a result as a functionResponse part whose response
// is {"result": text}.
func geminiResult(id pruneguard.CallID, text, tool string) json.RawMessage {
	return jk.marshal(map[string]any{"functionResponse": map[string]any{
		"id": id, "name": tool, "response": map[string]any{"result": text}}})
}

// geminiDeclare writes a function declaration.
func geminiDeclare(name string, schema json.RawMessage) json.RawMessage {
	return jk.marshal(map[string]any{"name": name, "parametersJsonSchema": schema})
}

package wire

import (
	"bytes"
	"strings"
)

// ---- OpenAI Chat ----------------------------------------------------------

func (r *reader) chat(f *facts, obj jobj) error {
	if err := r.requireRole(f, obj); err != nil {
		return err
	}
	var err error
	if f.name, err = r.optString(obj, "name"); err != nil {
		return errAt(here, "%v", err)
	}
	content := obj.get("content")
	switch kindOf(content) {
	case 0, 'n':
		f.empty = true
	case '"':
		s := trimSpace(content)
		f.empty = len(s) == 2
		if !f.empty {
			f.add(textPart(PartText, "text", s, false))
		}
	case '[':
		parts, _ := r.v.array(content)
		f.empty = parts.len() == 0
		err = r.eachObject(parts, "content", "content part", func(p at, part jobj) error {
			typ, err := r.optString(part, "type")
			if err != nil {
				return errAt(p, "%v", err)
			}
			if typ == "text" || (typ == "" && part.has("text")) {
				t, err := textVal(part, "text")
				if err != nil {
					return errAt(p, "%v", err)
				}
				f.add(textPart(PartText, "text", t, false))
				return nil
			}
			f.add(fpart{kind: PartOther, typ: typ})
			return nil
		})
		if err != nil {
			return err
		}
	default:
		return errAt(field("content"), "content is %s, not a string or an array", kindName(content))
	}
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
	if tc := obj.get("tool_calls"); !isNull(tc) {
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
	}
	if fc := obj.get("function_call"); !isNull(fc) && f.role == "assistant" {
		// Legacy function calling: one call, without an id, answered by
		// the role "function" message right after it.
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
	}
	if f.role == "function" {
		f.add(fpart{kind: PartResult, typ: "function", name: f.name})
	}
	if f.role == "tool" {
		id, err := r.optString(obj, "tool_call_id")
		if err != nil {
			return errAt(field("tool_call_id"), "%v", err)
		}
		n := 0
		if id != "" {
			f.add(fpart{kind: PartResult, typ: "tool", id: id, name: f.name})
			n++
		} else if raw := obj.get("tool_call_ids"); !isNull(raw) {
			// SWE-agent variant: a list of the ids answered.
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
	}
	return nil
}

// ---- OpenAI Responses -----------------------------------------------------

// responsesCalls maps each client-executed call item type to the output
// item type that answers it. The call's id is its call_id, except for an
// MCP approval request, answered by its id.
var responsesCalls = map[string]string{
	"function_call":        "function_call_output",
	"custom_tool_call":     "custom_tool_call_output",
	"computer_call":        "computer_call_output",
	"local_shell_call":     "local_shell_call_output",
	"shell_call":           "shell_call_output",
	"apply_patch_call":     "apply_patch_call_output",
	"tool_search_call":     "tool_search_output",
	"mcp_approval_request": "mcp_approval_response",
}

// responsesOutputs maps each output item type to the call item type it
// answers and the key of the answered id: call_id, except for a local
// shell output (id, the call's call_id) and an MCP approval response
// (approval_request_id).
var responsesOutputs = map[string][2]string{
	"function_call_output":    {"function_call", "call_id"},
	"custom_tool_call_output": {"custom_tool_call", "call_id"},
	"computer_call_output":    {"computer_call", "call_id"},
	"local_shell_call_output": {"local_shell_call", "id"},
	"shell_call_output":       {"shell_call", "call_id"},
	"apply_patch_call_output": {"apply_patch_call", "call_id"},
	"tool_search_output":      {"tool_search_call", "call_id"},
	"mcp_approval_response":   {"mcp_approval_request", "approval_request_id"},
}

// Items run by the provider itself, each carrying its own outcome. A
// tool search call or output belongs here unless its execution is
// "client".
var responsesServerTypes = map[string]bool{
	"web_search_call": true, "file_search_call": true, "code_interpreter_call": true,
	"image_generation_call": true, "mcp_call": true, "mcp_list_tools": true,
}

// responsesServerTool names the tool a server item ran: the MCP tool's
// name for an MCP call, the server label for an MCP tool listing, the
// hosted tool's type otherwise ("web_search", "code_interpreter", ...).
func (r *reader) responsesServerTool(typ string, obj jobj) string {
	switch typ {
	case "mcp_call":
		return r.strOf(obj.get("name"))
	case "mcp_list_tools":
		return r.strOf(obj.get("server_label"))
	}
	return r.intern1(strings.TrimSuffix(strings.TrimSuffix(typ, "_output"), "_call"))
}

func (r *reader) responsesItem(f *facts, obj jobj) error {
	var err error
	if f.typ, err = r.optString(obj, "type"); err != nil {
		return errAt(here, "%v", err)
	}
	if f.role, err = r.optString(obj, "role"); err != nil {
		return errAt(here, "%v", err)
	}
	if f.id, err = r.optString(obj, "id"); err != nil {
		return errAt(here, "%v", err)
	}
	if f.typ == "" {
		switch {
		case f.role != "":
			f.typ = "message"
		case f.id != "":
			f.typ = "item_reference" // the type of a reference is optional
		default:
			return errAt(here, "item without type, role or id")
		}
	}
	switch {
	case f.typ == "message":
		if f.role == "" {
			return errAt(here, "message item without role")
		}
		return r.responsesContent(f, obj.get("content"))
	case clientExecuted(r, f.typ, obj) && responsesCalls[f.typ] != "":
		key := "call_id"
		if f.typ == "mcp_approval_request" {
			key = "id"
		}
		id, err := r.optString(obj, key)
		if err != nil {
			return errAt(here, "%v", err)
		}
		if id == "" {
			return errAt(here, "%s without %s", f.typ, key)
		}
		call := fpart{kind: PartCall, typ: f.typ, id: id}
		if call.name, err = r.optString(obj, "name"); err != nil {
			return errAt(here, "%v", err)
		}
		switch {
		case obj.has("arguments"):
			call.val = obj.get("arguments")
		case obj.has("input"):
			call.val = obj.get("input")
		case obj.has("operation"):
			call.val = obj.get("operation")
		default:
			call.val = obj.get("action")
		}
		f.add(call)
	case clientExecuted(r, f.typ, obj) && responsesOutputs[f.typ][0] != "":
		key := responsesOutputs[f.typ][1]
		id, err := r.optString(obj, key)
		if err != nil {
			return errAt(here, "%v", err)
		}
		if id == "" {
			return errAt(here, "%s without %s", f.typ, key)
		}
		if key == "id" {
			f.id = "" // a local shell output's id is the call's call_id
		}
		f.add(fpart{kind: PartResult, typ: f.typ, id: id})
	case f.typ == "reasoning":
		enc := trimSpace(obj.get("encrypted_content"))
		signed := !isNull(enc) && !(kindOf(enc) == '"' && len(enc) == 2)
		f.add(fpart{kind: PartReasoning, typ: f.typ, id: f.id, signed: signed, blank: true})
	case f.typ == "item_reference":
		f.id = "" // the id of the item referred to, not of a new item
		f.add(fpart{kind: PartOther, typ: f.typ})
	case responsesServerTypes[f.typ] || f.typ == "tool_search_call" || f.typ == "tool_search_output":
		call := fpart{kind: PartServerCall, typ: f.typ, id: f.id, name: r.responsesServerTool(f.typ, obj)}
		if f.typ == "mcp_call" && !isNull(obj.get("error")) {
			call.failed, call.val = true, obj.get("error")
		}
		f.add(call)
	default:
		f.add(fpart{kind: PartOther, typ: f.typ, id: f.id})
	}
	return nil
}

// clientExecuted reports whether a Responses item is executed by the
// client: every item but a tool search item whose execution is not
// "client" (tool search runs on the server by default).
func clientExecuted(r *reader, typ string, obj jobj) bool {
	if typ != "tool_search_call" && typ != "tool_search_output" {
		return true
	}
	return r.strOf(obj.get("execution")) == "client"
}

func (r *reader) responsesContent(f *facts, content []byte) error {
	switch kindOf(content) {
	case 0, 'n':
		f.empty = true
	case '"':
		s := trimSpace(content)
		f.empty = len(s) == 2
		if !f.empty {
			f.add(textPart(PartText, "input_text", s, false))
		}
	case '[':
		parts, _ := r.v.array(content)
		f.empty = parts.len() == 0
		return r.eachObject(parts, "content", "content part", func(p at, part jobj) error {
			typ, err := r.optString(part, "type")
			if err != nil {
				return errAt(p, "%v", err)
			}
			switch typ {
			case "input_text", "output_text", "text", "summary_text", "reasoning_text":
				t, err := textVal(part, "text")
				if err != nil {
					return errAt(p, "%v", err)
				}
				f.add(textPart(PartText, typ, t, false))
			default:
				f.add(fpart{kind: PartOther, typ: typ})
			}
			return nil
		})
	default:
		return errAt(field("content"), "content is %s, not a string or an array", kindName(content))
	}
	return nil
}

// ---- Anthropic ------------------------------------------------------------

func (r *reader) anthropic(f *facts, obj jobj) error {
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
			f.add(fpart{kind: PartServerCall, typ: typ, id: id, name: name})
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

// ---- Gemini ---------------------------------------------------------------

func (r *reader) gemini(f *facts, obj jobj) error {
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
			f.add(fpart{kind: PartServerCall, typ: "executableCode", id: r.objStr(part.get("executableCode"), "id"), name: "code_execution", signed: sig})
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

// objStr returns the string member key of raw when raw is an object, ""
// otherwise.
func (r *reader) objStr(raw []byte, key string) string {
	obj, ok := r.v.object(raw)
	if !ok {
		return ""
	}
	return r.strOf(obj.get(key))
}

// ---- Bedrock Converse -----------------------------------------------------

func (r *reader) bedrock(f *facts, obj jobj) error {
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

// isTrue reports a JSON true, space around it allowed.
func isTrue(raw []byte) bool { return string(trimSpace(raw)) == "true" }

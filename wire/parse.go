package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ---- OpenAI Chat ----------------------------------------------------------

func parseChat(m *Message, obj map[string]json.RawMessage) error {
	if err := requireRole(m, obj); err != nil {
		return err
	}
	var err error
	if m.Name, err = optString(obj, "name"); err != nil {
		return errAt("", "%v", err)
	}
	content := obj["content"]
	switch kindOf(content) {
	case 0, 'n':
		m.Empty = true
	case '"':
		s, _ := asString(content)
		m.Empty = s == ""
		if s != "" {
			m.add(Part{Kind: PartText, Type: "text", Text: s})
		}
	case '[':
		parts, _ := asArray(content)
		m.Empty = len(parts) == 0
		err = eachObject(parts, "content", "content part", func(path string, p map[string]json.RawMessage) error {
			typ, err := optString(p, "type")
			if err != nil {
				return errAt(path, "%v", err)
			}
			if typ == "text" || (typ == "" && p["text"] != nil) {
				t, err := optString(p, "text")
				if err != nil {
					return errAt(path, "%v", err)
				}
				m.add(Part{Kind: PartText, Type: "text", Text: t})
				return nil
			}
			m.add(Part{Kind: PartOther, Type: typ})
			return nil
		})
		if err != nil {
			return err
		}
	default:
		return errAt(".content", "content is %s, not a string or an array", kindName(content))
	}
	for _, k := range []string{"reasoning_content", "reasoning", "thinking"} {
		raw, ok := obj[k]
		if !ok || isNull(raw) {
			continue
		}
		if s, ok := asString(raw); ok && s == "" {
			continue
		}
		t, _ := asString(raw)
		m.add(Part{Kind: PartReasoning, Type: k, Text: t})
	}
	if tc, ok := obj["tool_calls"]; ok && !isNull(tc) {
		calls, ok := asArray(tc)
		if !ok {
			return errAt(".tool_calls", "tool_calls is %s, not an array", kindName(tc))
		}
		for k, cr := range calls {
			path := fmt.Sprintf(".tool_calls[%d]", k)
			c, ok := asObject(cr)
			if !ok {
				return errAt(path, "tool call is %s, not an object", kindName(cr))
			}
			id, err := optString(c, "id")
			if err != nil {
				return errAt(path, "%v", err)
			}
			if id == "" {
				return errAt(path, "tool call without id")
			}
			call := Call{ID: id}
			fn := c["function"]
			if isNull(fn) {
				fn = c["custom"]
			}
			if !isNull(fn) {
				f, ok := asObject(fn)
				if !ok {
					return errAt(path+".function", "function is %s, not an object", kindName(fn))
				}
				if call.Name, err = optString(f, "name"); err != nil {
					return errAt(path+".function", "%v", err)
				}
				if a, ok := f["arguments"]; ok {
					call.Args = argsJSON(a)
				} else {
					call.Args = argsJSON(f["input"])
				}
			}
			m.Calls = append(m.Calls, call)
			m.add(Part{Kind: PartCall, Type: "tool_call", ID: id, Name: call.Name})
		}
	}
	if fc, ok := obj["function_call"]; ok && !isNull(fc) && m.Role == "assistant" {
		// Legacy function calling: one call, without an id, answered by
		// the role "function" message right after it.
		f, ok := asObject(fc)
		if !ok {
			return errAt(".function_call", "function_call is %s, not an object", kindName(fc))
		}
		name, err := optString(f, "name")
		if err != nil {
			return errAt(".function_call", "%v", err)
		}
		if name == "" {
			return errAt(".function_call", "function_call without name")
		}
		m.Calls = append(m.Calls, Call{Name: name, Args: argsJSON(f["arguments"])})
		m.add(Part{Kind: PartCall, Type: "function_call", Name: name})
	}
	if m.Role == "function" {
		m.add(Part{Kind: PartResult, Type: "function", Name: m.Name})
	}
	if m.Role == "tool" {
		id, err := optString(obj, "tool_call_id")
		if err != nil {
			return errAt(".tool_call_id", "%v", err)
		}
		var ids []string
		if id != "" {
			ids = append(ids, id)
		} else if raw, ok := obj["tool_call_ids"]; ok && !isNull(raw) {
			// SWE-agent variant: a list of the ids answered.
			list, ok := asArray(raw)
			if !ok {
				return errAt(".tool_call_ids", "tool_call_ids is %s, not an array", kindName(raw))
			}
			for k, r := range list {
				s, ok := asString(r)
				if !ok || s == "" {
					return errAt(fmt.Sprintf(".tool_call_ids[%d]", k), "tool call id is not a non-empty string")
				}
				ids = append(ids, s)
			}
		}
		if len(ids) == 0 {
			return errAt("", "tool message without tool_call_id")
		}
		for _, id := range ids {
			m.add(Part{Kind: PartResult, Type: "tool", ID: id, Name: m.Name})
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
func responsesServerTool(typ string, obj map[string]json.RawMessage) string {
	switch typ {
	case "mcp_call":
		return str(obj["name"])
	case "mcp_list_tools":
		return str(obj["server_label"])
	}
	return strings.TrimSuffix(strings.TrimSuffix(typ, "_output"), "_call")
}

func parseResponsesItem(m *Message, obj map[string]json.RawMessage) error {
	var err error
	if m.Type, err = optString(obj, "type"); err != nil {
		return errAt("", "%v", err)
	}
	if m.Role, err = optString(obj, "role"); err != nil {
		return errAt("", "%v", err)
	}
	if m.ID, err = optString(obj, "id"); err != nil {
		return errAt("", "%v", err)
	}
	if m.Type == "" {
		switch {
		case m.Role != "":
			m.Type = "message"
		case m.ID != "":
			m.Type = "item_reference" // the type of a reference is optional
		default:
			return errAt("", "item without type, role or id")
		}
	}
	switch {
	case m.Type == "message":
		if m.Role == "" {
			return errAt("", "message item without role")
		}
		return parseResponsesContent(m, obj["content"])
	case clientExecuted(m.Type, obj) && responsesCalls[m.Type] != "":
		key := "call_id"
		if m.Type == "mcp_approval_request" {
			key = "id"
		}
		id, err := optString(obj, key)
		if err != nil {
			return errAt("", "%v", err)
		}
		if id == "" {
			return errAt("", "%s without %s", m.Type, key)
		}
		call := Call{ID: id}
		if call.Name, err = optString(obj, "name"); err != nil {
			return errAt("", "%v", err)
		}
		switch {
		case obj["arguments"] != nil:
			call.Args = argsJSON(obj["arguments"])
		case obj["input"] != nil:
			call.Args = argsJSON(obj["input"])
		case obj["operation"] != nil:
			call.Args = argsJSON(obj["operation"])
		default:
			call.Args = argsJSON(obj["action"])
		}
		m.Calls = append(m.Calls, call)
		m.add(Part{Kind: PartCall, Type: m.Type, ID: id, Name: call.Name})
	case clientExecuted(m.Type, obj) && responsesOutputs[m.Type][0] != "":
		key := responsesOutputs[m.Type][1]
		id, err := optString(obj, key)
		if err != nil {
			return errAt("", "%v", err)
		}
		if id == "" {
			return errAt("", "%s without %s", m.Type, key)
		}
		if key == "id" {
			m.ID = "" // a local shell output's id is the call's call_id
		}
		m.add(Part{Kind: PartResult, Type: m.Type, ID: id})
	case m.Type == "reasoning":
		enc := obj["encrypted_content"]
		signed := !isNull(enc)
		if s, ok := asString(enc); ok && s == "" {
			signed = false
		}
		m.add(Part{Kind: PartReasoning, Type: m.Type, ID: m.ID, Signed: signed})
	case m.Type == "item_reference":
		m.ID = "" // the id of the item referred to, not of a new item
		m.add(Part{Kind: PartOther, Type: m.Type})
	case responsesServerTypes[m.Type] || m.Type == "tool_search_call" || m.Type == "tool_search_output":
		m.add(Part{Kind: PartServerCall, Type: m.Type, ID: m.ID, Name: responsesServerTool(m.Type, obj)})
	default:
		m.add(Part{Kind: PartOther, Type: m.Type, ID: m.ID})
	}
	return nil
}

// clientExecuted reports whether a Responses item is executed by the
// client: every item but a tool search item whose execution is not
// "client" (tool search runs on the server by default).
func clientExecuted(typ string, obj map[string]json.RawMessage) bool {
	if typ != "tool_search_call" && typ != "tool_search_output" {
		return true
	}
	return str(obj["execution"]) == "client"
}

func parseResponsesContent(m *Message, content json.RawMessage) error {
	switch kindOf(content) {
	case 0, 'n':
		m.Empty = true
	case '"':
		s, _ := asString(content)
		m.Empty = s == ""
		if s != "" {
			m.add(Part{Kind: PartText, Type: "input_text", Text: s})
		}
	case '[':
		parts, _ := asArray(content)
		m.Empty = len(parts) == 0
		return eachObject(parts, "content", "content part", func(path string, p map[string]json.RawMessage) error {
			typ, err := optString(p, "type")
			if err != nil {
				return errAt(path, "%v", err)
			}
			switch typ {
			case "input_text", "output_text", "text", "summary_text", "reasoning_text":
				t, err := optString(p, "text")
				if err != nil {
					return errAt(path, "%v", err)
				}
				m.add(Part{Kind: PartText, Type: typ, Text: t})
			default:
				m.add(Part{Kind: PartOther, Type: typ})
			}
			return nil
		})
	default:
		return errAt(".content", "content is %s, not a string or an array", kindName(content))
	}
	return nil
}

// ---- Anthropic ------------------------------------------------------------

func isAnthropicServerResult(typ string) bool {
	return typ != "tool_result" && strings.HasSuffix(typ, "_tool_result")
}

func parseAnthropic(m *Message, obj map[string]json.RawMessage) error {
	if err := requireRole(m, obj); err != nil {
		return err
	}
	content := obj["content"]
	switch kindOf(content) {
	case 0, 'n':
		m.Empty = true
		return nil
	case '"':
		s, _ := asString(content)
		m.Empty = s == ""
		if s != "" {
			m.add(Part{Kind: PartText, Type: "text", Text: s})
		}
		return nil
	case '[':
	default:
		return errAt(".content", "content is %s, not a string or an array", kindName(content))
	}
	blocks, _ := asArray(content)
	m.Empty = len(blocks) == 0
	return eachObject(blocks, "content", "content block", func(path string, blk map[string]json.RawMessage) error {
		typ, err := optString(blk, "type")
		if err != nil {
			return errAt(path, "%v", err)
		}
		if typ == "" {
			return errAt(path, "content block without type")
		}
		switch {
		case typ == "text":
			t, err := optString(blk, "text")
			if err != nil {
				return errAt(path, "%v", err)
			}
			m.add(Part{Kind: PartText, Type: typ, Text: t})
		case typ == "tool_use":
			id, name, err := idAndName(blk, "id")
			if err != nil {
				return errAt(path, "%v", err)
			}
			if id == "" {
				return errAt(path, "tool_use without id")
			}
			m.Calls = append(m.Calls, Call{ID: id, Name: name, Args: argsJSON(blk["input"])})
			m.add(Part{Kind: PartCall, Type: typ, ID: id, Name: name})
		case typ == "tool_result":
			id, err := optString(blk, "tool_use_id")
			if err != nil {
				return errAt(path, "%v", err)
			}
			if id == "" {
				return errAt(path, "tool_result without tool_use_id")
			}
			m.add(Part{Kind: PartResult, Type: typ, ID: id})
			m.References = append(m.References, toolReferences(blk["content"])...)
		case typ == "thinking" || typ == "redacted_thinking":
			sig, _ := optString(blk, "signature")
			text, _ := optString(blk, "thinking")
			m.add(Part{Kind: PartReasoning, Type: typ, Text: text, Signed: sig != "" || typ == "redacted_thinking"})
		case typ == "server_tool_use" || typ == "mcp_tool_use":
			id, name, err := idAndName(blk, "id")
			if err != nil {
				return errAt(path, "%v", err)
			}
			if id == "" {
				return errAt(path, "%s without id", typ)
			}
			m.add(Part{Kind: PartServerCall, Type: typ, ID: id, Name: name})
		case isAnthropicServerResult(typ):
			id, err := optString(blk, "tool_use_id")
			if err != nil {
				return errAt(path, "%v", err)
			}
			if id == "" {
				return errAt(path, "%q without tool_use_id", typ)
			}
			m.add(Part{Kind: PartServerResult, Type: typ, ID: id, Name: serverName(m, id)})
			m.References = append(m.References, toolReferences(blk["content"])...)
		case typ == "tool_reference":
			if n := str(blk["tool_name"]); n != "" {
				m.References = append(m.References, n)
			}
			m.add(Part{Kind: PartOther, Type: typ})
		default:
			m.add(Part{Kind: PartOther, Type: typ})
		}
		return nil
	})
}

// toolReferences returns the tools named by the tool_reference blocks of
// a result's content: an array of blocks (a client tool_result), or an
// object holding a tool_references array (a tool search result).
func toolReferences(content json.RawMessage) []string {
	if !bytes.Contains(content, []byte(`"tool_reference"`)) {
		return nil // one fast scan instead of a decode, for most results
	}
	blocks, ok := asArray(content)
	if !ok {
		obj, ok := asObject(content)
		if !ok {
			return nil
		}
		blocks, _ = asArray(obj["tool_references"])
	}
	var names []string
	for _, raw := range blocks {
		if kindOf(raw) != '{' || !bytes.Contains(raw, []byte(`"tool_reference"`)) {
			continue
		}
		blk, ok := asObject(raw)
		if !ok || str(blk["type"]) != "tool_reference" {
			continue
		}
		if n := str(blk["tool_name"]); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// serverName returns the tool name of the server call with the given id
// among the parts read so far.
func serverName(m *Message, id string) string {
	for _, p := range m.Parts {
		if p.Kind == PartServerCall && p.ID == id {
			return p.Name
		}
	}
	return ""
}

func idAndName(obj map[string]json.RawMessage, idKey string) (id, name string, err error) {
	if id, err = optString(obj, idKey); err != nil {
		return "", "", err
	}
	name, err = optString(obj, "name")
	return id, name, err
}

// ---- Gemini ---------------------------------------------------------------

func parseGemini(m *Message, obj map[string]json.RawMessage) error {
	var err error
	if m.Role, err = optString(obj, "role"); err != nil {
		return errAt("", "%v", err)
	}
	if m.Role == "" {
		m.Role = "user" // the API's default for a content without role
	}
	return eachBlock(m, obj, "parts", "part", func(path string, p map[string]json.RawMessage) error {
		sig := !isNull(p["thoughtSignature"]) || !isNull(p["thought_signature"])
		switch {
		case !isNull(p["functionCall"]):
			fc, err := objectAt(p, "functionCall", path)
			if err != nil {
				return err
			}
			id, name, err := idAndName(fc, "id")
			if err != nil {
				return errAt(path+".functionCall", "%v", err)
			}
			if name == "" {
				return errAt(path, "functionCall without name")
			}
			m.Calls = append(m.Calls, Call{ID: id, Name: name, Args: argsJSON(fc["args"]), Signed: sig})
			m.add(Part{Kind: PartCall, Type: "functionCall", ID: id, Name: name, Signed: sig})
		case !isNull(p["functionResponse"]):
			fr, err := objectAt(p, "functionResponse", path)
			if err != nil {
				return err
			}
			id, name, err := idAndName(fr, "id")
			if err != nil {
				return errAt(path+".functionResponse", "%v", err)
			}
			if name == "" && id == "" {
				return errAt(path, "functionResponse without name or id")
			}
			m.add(Part{Kind: PartResult, Type: "functionResponse", ID: id, Name: name})
		case !isNull(p["executableCode"]):
			// Code the model runs with the code execution tool.
			m.add(Part{Kind: PartServerCall, Type: "executableCode", ID: str(objField(p["executableCode"], "id")), Name: "code_execution", Signed: sig})
		case !isNull(p["codeExecutionResult"]):
			m.add(Part{Kind: PartServerResult, Type: "codeExecutionResult", ID: str(objField(p["codeExecutionResult"], "id")), Name: "code_execution", Signed: sig})
		case p["text"] != nil:
			t, err := optString(p, "text")
			if err != nil {
				return errAt(path, "%v", err)
			}
			if thought := strings.TrimSpace(string(p["thought"])); thought == "true" {
				m.add(Part{Kind: PartReasoning, Type: "thought", Text: t, Signed: sig})
			} else {
				m.add(Part{Kind: PartText, Type: "text", Text: t, Signed: sig})
			}
		default:
			typ := firstKey(p, "thoughtSignature", "thought_signature", "thought")
			m.add(Part{Kind: PartOther, Type: typ, Signed: sig})
		}
		return nil
	})
}

// ---- Bedrock Converse -----------------------------------------------------

func parseBedrock(m *Message, obj map[string]json.RawMessage) error {
	if err := requireRole(m, obj); err != nil {
		return err
	}
	return eachBlock(m, obj, "content", "content block", func(path string, blk map[string]json.RawMessage) error {
		switch {
		case !isNull(blk["toolUse"]):
			tu, err := objectAt(blk, "toolUse", path)
			if err != nil {
				return err
			}
			id, name, err := idAndName(tu, "toolUseId")
			if err != nil {
				return errAt(path+".toolUse", "%v", err)
			}
			if id == "" {
				return errAt(path, "toolUse without toolUseId")
			}
			m.Calls = append(m.Calls, Call{ID: id, Name: name, Args: argsJSON(tu["input"])})
			m.add(Part{Kind: PartCall, Type: "toolUse", ID: id, Name: name})
		case !isNull(blk["toolResult"]):
			tr, err := objectAt(blk, "toolResult", path)
			if err != nil {
				return err
			}
			id, err := optString(tr, "toolUseId")
			if err != nil {
				return errAt(path+".toolResult", "%v", err)
			}
			if id == "" {
				return errAt(path, "toolResult without toolUseId")
			}
			m.add(Part{Kind: PartResult, Type: "toolResult", ID: id})
		case !isNull(blk["reasoningContent"]):
			rc, _ := asObject(blk["reasoningContent"])
			signed := !isNull(rc["redactedContent"])
			text := ""
			if rt, ok := asObject(rc["reasoningText"]); ok {
				sig, _ := optString(rt, "signature")
				text, _ = optString(rt, "text")
				signed = signed || sig != ""
			}
			m.add(Part{Kind: PartReasoning, Type: "reasoningContent", Text: text, Signed: signed})
		case blk["text"] != nil:
			t, err := optString(blk, "text")
			if err != nil {
				return errAt(path, "%v", err)
			}
			m.add(Part{Kind: PartText, Type: "text", Text: t})
		default:
			typ := firstKey(blk)
			m.add(Part{Kind: PartOther, Type: typ})
		}
		return nil
	})
}

// requireRole reads the message's role, which must be a non-empty string.
func requireRole(m *Message, obj map[string]json.RawMessage) error {
	var err error
	if m.Role, err = optString(obj, "role"); err != nil {
		return errAt("", "%v", err)
	}
	if m.Role == "" {
		return errAt("", "message without role")
	}
	return nil
}

// eachObject calls fn on each element of items, the array under key, with
// its path (".key[k]"), in order, and stops at the first error. An element
// that is not an object is an error naming it as what ("content block").
func eachObject(items []json.RawMessage, key, what string, fn func(path string, obj map[string]json.RawMessage) error) error {
	for k, raw := range items {
		path := fmt.Sprintf(".%s[%d]", key, k)
		obj, ok := asObject(raw)
		if !ok {
			return errAt(path, "%s is %s, not an object", what, kindName(raw))
		}
		if err := fn(path, obj); err != nil {
			return err
		}
	}
	return nil
}

// eachBlock is eachObject over the array obj[key] of a Gemini or Bedrock
// message, which may only be an array or missing (null); it sets m.Empty.
func eachBlock(m *Message, obj map[string]json.RawMessage, key, what string, fn func(path string, blk map[string]json.RawMessage) error) error {
	raw := obj[key]
	if isNull(raw) {
		m.Empty = true
		return nil
	}
	items, ok := asArray(raw)
	if !ok {
		return errAt("."+key, "%s is %s, not an array", key, kindName(raw))
	}
	m.Empty = len(items) == 0
	return eachObject(items, key, what, fn)
}

// objectAt returns the object obj[key]; anything else is an error at
// path.key.
func objectAt(obj map[string]json.RawMessage, key, path string) (map[string]json.RawMessage, error) {
	o, ok := asObject(obj[key])
	if !ok {
		return nil, errAt(path+"."+key, "%s is %s, not an object", key, kindName(obj[key]))
	}
	return o, nil
}

// firstKey returns the alphabetically first key of obj not in skip, or
// "other"; used to name parts that are recognised only by their key.
func firstKey(obj map[string]json.RawMessage, skip ...string) string {
	best := ""
outer:
	for k := range obj {
		for _, s := range skip {
			if k == s {
				continue outer
			}
		}
		if best == "" || k < best {
			best = k
		}
	}
	if best == "" {
		return "other"
	}
	return best
}

// objField returns raw[key] when raw is an object, nil otherwise.
func objField(raw json.RawMessage, key string) json.RawMessage {
	obj, ok := asObject(raw)
	if !ok {
		return nil
	}
	return obj[key]
}

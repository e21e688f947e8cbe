package wire

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// responsesProvider is the table of OpenAI Responses.
var responsesProvider = provider{
	// how it reads
	dialect:       OpenAIResponses,
	historyKey:    "input",
	entry:         "item",
	stringHistory: true,
	readEntry:     (*reader).readResponsesItem,
	readTop:       readResponsesTop,

	// how calls pair, and what goes in one unit
	track:       trackResponses,
	finish:      finishResponses,
	userMessage: responsesUser,
	coupled:     coupledItems,

	// its server: what it holds, where requests go
	serverHeld: true,
	itemIDs:    true,
	paths:      []string{"/responses"},

	// its rules
	emptyRule:    RuleResponsesEmptyInput,
	emptyWording: "input: the input array is empty; at least one item is required.",
	validate: func(b *Body, ms []*facts, sc scope, v violations) violations {
		validateResponses(b, ms, sc, &v)
		return v
	},
	toolFields: func(b *Body, ts *toolState, v violations) violations { responsesToolFields(b, ts, &v); return v },

	// how the rule screen checks an edit
	screenWhole: wholeResponses,
	pairKeys:    responsesKeys,

	// what a stub replaces
	stub: stubResponses,

	// where its tools live
	toolLists: []toolList{{key: "tools"}},
	toolDecl:  responsesToolDecl,

	// where its system prompt lives
	promptKey:     promptAt("instructions"),
	hasPrompt:     alwaysPrompt,
	addPromptText: responsesAddText,

	// how it writes messages
	modelRole:    "assistant",
	writeEntries: responsesEntries,
	writeResult:  responsesResult,
	declare:      responsesDeclare,
	eventKind:    responsesEventKind,
	callType:     "function_call",
	resultType:   "function_call_output",

	// how it writes a summary
	summary: responsesSummary,

	// what its results say
	results: responsesResults,
}

// ---- reading ------------------------------------------------------------------

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

// responsesServerArgs names the member of a server item that holds what
// the model asked of the tool, the call's arguments for its signature
// (an item type not listed has none).
var responsesServerArgs = map[string]string{
	"web_search_call": "action", "file_search_call": "queries", "code_interpreter_call": "code",
	"mcp_call": "arguments", "tool_search_call": "arguments",
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

// readResponsesItem reads a Responses input item: a message, a call item
// or the output answering one, a reasoning item, an item reference or an
// item the provider ran itself.
func (r *reader) readResponsesItem(f *facts, obj jobj) error {
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
		call := fpart{kind: PartServerCall, typ: f.typ, id: f.id, name: r.responsesServerTool(f.typ, obj), val: obj.get(responsesServerArgs[f.typ])}
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

// responsesContent reads the content of a message item: a string or an
// array of content parts, of which the input, output, summary and
// reasoning texts are text.
func (r *reader) responsesContent(f *facts, content []byte) error {
	return r.textContent(f, content, "input_text", func(typ string, _ jobj) (string, bool) {
		switch typ {
		case "input_text", "output_text", "text", "summary_text", "reasoning_text":
			return typ, true
		}
		return "", false
	})
}

// readResponsesTop reads whether the input must keep what the server
// holds: with "store": false reasoning must carry its content, and with
// previous_response_id, a conversation or an item reference calls may be
// stored on the server.
func readResponsesTop(b *Body) error {
	f := b.top.fields
	b.storeFalse = strings.TrimSpace(string(f["store"])) == "false"
	b.onServer = !isNull(f["previous_response_id"]) || !isNull(f["conversation"])
	b.continues = b.onServer
	for i := range b.facts {
		b.continues = b.continues || b.facts[i].typ == "item_reference"
	}
	return nil
}

// ---- pairing ------------------------------------------------------------------

// trackResponses pairs each output item with the first unanswered call
// item of its kind and id, anywhere before it.
func trackResponses(t *tracker, f *facts, keys []int32, s *step) {
	s.stored = f.typ == "item_reference"
	for _, c := range callsOf(f, keys) {
		c.msg = t.n
		k := [2]string{c.typ, c.id}
		t.queue[k] = append(t.queue[k], len(t.calls))
		t.calls = append(t.calls, c)
	}
	for _, p := range f.parts {
		if p.kind != PartResult {
			continue
		}
		k := [2]string{responsesOutputs[p.typ][0], p.id}
		q := t.queue[k]
		if len(q) == 0 {
			if t.continues {
				s.stored = true
			}
			s.answers = append(s.answers, -1)
			continue
		}
		if len(q) == 1 {
			delete(t.queue, k)
		} else {
			t.queue[k] = q[1:]
		}
		t.calls[q[0]].done = true
		s.answers = append(s.answers, t.calls[q[0]].key)
	}
	if f.nresults > 0 || isUserMessage(f) {
		t.barrier = t.n
	}
}

// finishResponses closes the calls left unanswered before the last
// output or user message; those after it are the trailing batch. An MCP
// approval request among them may stay unanswered and is not reported.
func finishResponses(t *tracker) (closed []int32, report func(key int32) bool) {
	approval := map[int32]bool{}
	for _, c := range t.calls {
		if c.done || c.msg > t.barrier {
			continue
		}
		closed = append(closed, c.key)
		if c.typ == "mcp_approval_request" {
			approval[c.key] = true
		}
	}
	return closed, func(k int32) bool { return !approval[k] }
}

// coupledItems keeps consecutive call items in one unit, and a reasoning
// item with the item after it.
func coupledItems(prev, f *facts) bool {
	return (prev.ncalls > 0 && f.ncalls > 0) || prev.typ == "reasoning"
}

// isUserMessage reports a message item of the user.
func isUserMessage(m *facts) bool { return responsesUser(m.role, m.typ) }

// responsesUser reports a message item of the user, by its role and type.
func responsesUser(role, typ string) bool { return typ == "message" && role == "user" }

// ---- stubs ---------------------------------------------------------------------

// stubResponses replaces the output of an output item (see
// stubResponsesOutput).
func stubResponses(obj map[string]json.RawMessage, text string, textJSON json.RawMessage) error {
	out, err := stubResponsesOutput(str(obj["type"]), obj["output"], text, textJSON)
	if err != nil {
		return err
	}
	obj["output"] = out
	return nil
}

// stubResponsesOutput returns the output of a Responses output item of
// type typ, whose output was out, replaced by text (textJSON encoded):
// a string where the API takes one; an array of one input_text part
// where the output was an array of content parts; for a shell call
// output, one chunk with the text as stdout and the first chunk's
// outcome. A computer call's screenshot, a client tool search's tool
// list and an approval response cannot be stubbed.
func stubResponsesOutput(typ string, out json.RawMessage, text string, textJSON json.RawMessage) (json.RawMessage, error) {
	switch typ {
	case "function_call_output", "custom_tool_call_output":
		if kindOf(out) == '[' {
			return json.Marshal([]map[string]string{{"type": "input_text", "text": text}})
		}
		return textJSON, nil
	case "local_shell_call_output", "apply_patch_call_output":
		return textJSON, nil
	case "shell_call_output":
		outcome := json.RawMessage(`{"type":"exit","exit_code":0}`)
		if chunks, ok := asArray(out); ok && len(chunks) > 0 {
			if c, ok := asObject(chunks[0]); ok && kindOf(c["outcome"]) == '{' {
				outcome = c["outcome"]
			}
		}
		return json.Marshal([]map[string]json.RawMessage{{"stdout": textJSON, "stderr": json.RawMessage(`""`), "outcome": outcome}})
	}
	return nil, fmt.Errorf("%s: %w", typ, ErrUnstubbable)
}

// ---- tools ---------------------------------------------------------------------

// responsesToolDecl finds the declaration of a tools entry: the entry.
func responsesToolDecl(entry map[string]json.RawMessage) (string, map[string]json.RawMessage, string) {
	return "", entry, parametersKey(entry)
}

// ---- system prompt -------------------------------------------------------------

// responsesAddText appends text to the instructions.
func responsesAddText(cur json.RawMessage, text string) (json.RawMessage, bool) {
	s, _ := asString(cur)
	return mustString(afterText(s, text)), true
}

// ---- writing -------------------------------------------------------------------

// responsesEntries writes a message as a message item (when it has text
// or no calls) and its calls as function_call items.
func responsesEntries(role, text string, calls []pruneguard.Call) []rpiece {
	var out []rpiece
	if text != "" || len(calls) == 0 {
		out = append(out, rpiece{role: role, synth: true,
			raw: jk.marshal(map[string]any{"type": "message", "role": role, "content": text})})
	}
	for _, c := range calls {
		out = append(out, rpiece{role: "assistant", synth: true, raw: jk.marshal(map[string]any{
			"type": "function_call", "call_id": c.ID, "name": c.Tool, "arguments": jk.argString(c.Args)})})
	}
	return out
}

// responsesSummary writes a summary as a message item of the user, its
// text as one input_text part.
func responsesSummary(text string) json.RawMessage {
	return jk.marshal(map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": text}}})
}

// responsesResults gives the content of an output item: its output, and
// the error an MCP call reports.
func responsesResults(obj map[string]json.RawMessage, add func(json.RawMessage)) {
	for _, k := range []string{"output", "error"} {
		if c, ok := obj[k]; ok && !isNull(c) {
			add(c)
		}
	}
}

// responsesResult writes a result as a function_call_output item.
func responsesResult(id pruneguard.CallID, text, _ string) json.RawMessage {
	return jk.marshal(map[string]any{"type": "function_call_output", "call_id": id, "output": text})
}

// responsesDeclare writes a function tool's declaration.
func responsesDeclare(name string, schema json.RawMessage) json.RawMessage {
	return jk.marshal(map[string]any{"type": "function", "name": name, "parameters": schema, "strict": false})
}

// responsesEventKind gives a message its item type: a message, a
// reasoning item, or a call or output item (which has no role).
func responsesEventKind(m pruneguard.Message, role string) (string, string) {
	switch {
	case m.Role == pruneguard.RoleReasoning:
		return role, "reasoning"
	case len(m.Calls) > 0 || len(m.Answers) > 0:
		return "", "function_call"
	}
	return role, "message"
}

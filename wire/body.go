package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// PartKind classifies one content part (block) of a message.
//
// The zero PartKind is PartOther.
type PartKind int

// The kinds of content parts the package tells apart.
const (
	// PartOther is any part the package does not model (images, documents,
	// cache points, ...). It is kept but carries no structural meaning.
	PartOther PartKind = iota
	// PartText is a plain text part.
	PartText
	// PartCall is a client tool call (tool_use, tool_calls entry,
	// function_call item, functionCall part, toolUse block).
	PartCall
	// PartResult is a client tool result answering a call.
	PartResult
	// PartReasoning is reasoning or thinking content.
	PartReasoning
	// PartServerCall is a tool call the provider runs itself (Anthropic
	// server_tool_use, Responses web_search_call and similar).
	PartServerCall
	// PartServerResult is the result of a server-side tool call.
	PartServerResult
)

// Part is the structural summary of one content part, in content order.
//
// The zero Part is an empty part of no kind; [Read] returns them filled
// in.
type Part struct {
	// Kind is the classification of the part.
	Kind PartKind
	// Type is the wire name of the part, such as "tool_use", "text",
	// "functionCall" or "toolResult".
	Type string
	// ID is the call id for calls and server calls, and the id of the
	// answered call for results. It may be empty for Gemini parts and for
	// OpenAI Chat legacy function calls and function results, which have
	// none.
	ID string
	// Name is the tool name of calls and server calls, and of results
	// when the wire format carries it (server results take the name of
	// their server call; Gemini code execution parts are "code_execution";
	// Responses server items name their hosted tool by type, such as
	// "web_search", or their MCP tool).
	Name string
	// Text is the text of text and reasoning parts (Anthropic thinking,
	// Gemini thought text) when present.
	Text string
	// Signed reports a reasoning signature or encrypted reasoning content on
	// the part (Anthropic thinking signature, Gemini thoughtSignature,
	// Responses encrypted_content, Bedrock reasoning signature).
	Signed bool
}

// Call is a client tool call emitted by a message.
//
// The zero Call names no call; [Read] returns them filled in.
type Call struct {
	// ID is the call id (tool_call id, tool_use id, call_id, toolUseId, an
	// MCP approval request's id). It is empty for Gemini calls sent without
	// an id and for OpenAI Chat legacy function_call messages.
	ID string
	// Name is the tool name.
	Name string
	// Args is the call's arguments as JSON. Chat and Responses send
	// arguments as a JSON string; when it holds valid JSON it is unwrapped.
	Args json.RawMessage
	// Signed reports a thought signature on the call part (Gemini).
	Signed bool
}

// Message is one entry of the conversation: a message for Chat, Anthropic
// and Bedrock, an input item for Responses, a content turn for Gemini.
//
// The zero Message is empty; [Read] returns them filled in.
type Message struct {
	// Raw is the message exactly as it appears in the body.
	Raw json.RawMessage
	// Role is the message role ("user", "assistant", "tool", "model", ...).
	// It is empty for Responses items that are not messages.
	Role string
	// Type is the Responses item type ("message", "function_call",
	// "function_call_output", "reasoning", ...); empty in other dialects.
	Type string
	// ID is the Responses item id, if any.
	ID string
	// Name is the chat message name field (tool and legacy function
	// messages), if any.
	Name string
	// Parts lists the content parts in order.
	Parts []Part
	// Calls lists the client tool calls this message emits, in order.
	Calls []Call
	// Results lists the call ids answered by the tool results this message
	// carries, in order (Gemini responses without an id give "").
	Results []string
	// Reasoning reports reasoning or thinking content in the message.
	Reasoning bool
	// ServerToolUse reports provider-run tool calls or results in the
	// message (Anthropic server_tool_use and *_tool_result, Responses
	// web_search_call and similar). They pair within the same turn and need
	// no client result.
	ServerToolUse bool
	// Texts lists the text parts in order.
	Texts []string
	// References lists the tools named by tool_reference blocks (left in
	// the history by Anthropic tool search, inside a tool search result or
	// a tool_result), in order. The API rejects a request whose history
	// references a tool its tools array does not declare.
	References []string
	// Empty reports missing, null, "" or [] content.
	Empty bool
	// IsError reports a result that says its call failed: an Anthropic
	// tool_result (or server tool result) with is_error true, or a server
	// tool result whose content is an error; a Bedrock toolResult with
	// status "error"; a Gemini functionResponse whose response has an
	// "error" key (the API's convention for a failed call); a Responses
	// mcp_call item with an error. OpenAI Chat and the Responses outputs
	// of client calls carry no such marker.
	IsError bool
}

// Body is a parsed provider request body. Reading its fields and calling
// Marshal or Validate from several goroutines is safe; Remove and Stub
// change it and must not run alongside anything else. A Body keeps slices
// of the bytes it was read from, as Message.Raw: they must not change
// while the Body is in use.
//
// The zero Body holds no request and is not usable; make one with
// [Read].
type Body struct {
	// Dialect is the wire dialect the body was read as.
	Dialect Dialect
	// Messages is the conversation, in order. Edit it only through Remove
	// and Stub so that Marshal knows what changed.
	Messages []Message

	top         *topLevel
	key         string  // "messages", "input" or "contents"
	facts       []facts // what the package knows of each message, in step with Messages
	dirty       bool
	fields      map[string]json.RawMessage // top-level fields replaced or added
	inputString bool                       // responses: input was a plain string

	// Top-level facts the validator needs.
	thinking      string // anthropic: thinking.type
	hasToolConfig bool   // bedrock
	storeFalse    bool   // responses
	continues     bool   // responses: previous_response_id, conversation or an item_reference
	onServer      bool   // responses: previous_response_id or conversation: the server holds the conversation
}

// Read parses a request body of dialect d. An empty d means Detect is
// used. A Responses input given as a plain string reads as one user
// message whose Raw is that JSON string. The error names what is wrong
// and where, on one line, for example
// "wire: anthropic: messages[3].content[1]: tool_result without tool_use_id".
// Bytes that are not UTF-8, or a leading byte order mark, are refused
// with an error wrapping a [*TextError], as providers refuse them; any
// number the JSON grammar allows is accepted and kept as written.
//
// The body is read in one pass, and each Message.Raw is a slice of body,
// not a copy: body must not change while the Body is in use.
func Read(body []byte, d Dialect) (*Body, error) {
	b, err := readBody(body, d)
	if err != nil {
		return nil, err
	}
	b.Messages = make([]Message, len(b.facts))
	for i := range b.facts {
		b.Messages[i] = b.facts[i].message()
	}
	return b, nil
}

// readBody is Read without the Messages: the facts only.
func readBody(body []byte, d Dialect) (*Body, error) {
	var top *topLevel
	if d == "" {
		t, err := readTop(body)
		if err != nil {
			return nil, fmt.Errorf("wire: detect: %w", err)
		}
		if d, err = detect(t); err != nil {
			return nil, err
		}
		top = t
	}
	p := d.provider()
	if p == nil {
		return nil, fmt.Errorf("wire: unknown dialect %q", string(d))
	}
	key := p.historyKey
	if top == nil {
		t, err := readTop(body)
		if err != nil {
			return nil, fmt.Errorf("wire: %s: %w", d, err)
		}
		top = t
	}
	b := &Body{Dialect: d, top: top, key: key}
	raw, ok := top.fields[key]
	if !ok || isNull(raw) {
		return nil, fmt.Errorf("wire: %s: body has no %q", d, key)
	}
	r := newReader(d)
	if p.stringHistory && kindOf(raw) == '"' {
		b.inputString = true
		f, _ := r.message(raw, 0, true)
		b.facts = []facts{f}
	} else {
		elems, ok := top.elems[key]
		if !ok || kindOf(raw) != '[' {
			return nil, fmt.Errorf("wire: %s: %s is %s, not an array", d, key, kindName(raw))
		}
		b.facts = make([]facts, len(elems))
		for i, e := range elems {
			f, err := r.message(body[e.start:e.end:e.end], e.ws, false)
			if err != nil {
				return nil, fmt.Errorf("wire: %s: %s[%d]%s", d, key, i, err)
			}
			b.facts[i] = f
		}
	}
	if err := b.readTopFacts(); err != nil {
		return nil, fmt.Errorf("wire: %s: %v", d, err)
	}
	return b, nil
}

// pathErr builds an error whose text continues a path such as "messages[3]".
// The text starts with ".field" or ": what".
type pathErr struct{ path, msg string }

func (e *pathErr) Error() string {
	if e.path == "" {
		return ": " + e.msg
	}
	return e.path + ": " + e.msg
}

// oneLine escapes line breaks, which a value quoted from the body may
// hold, so that an error stays on one line.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\n\r") {
		return s
	}
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s)
}

// parseMessage reads one message of dialect d.
func parseMessage(d Dialect, raw json.RawMessage) (facts, error) {
	return newReader(d).message(raw, len(raw)-compactLen(raw), false)
}

// provider returns the table of the body's dialect.
func (b *Body) provider() *provider { return b.Dialect.provider() }

// readTopFacts reads the top-level facts the provider's rules need.
func (b *Body) readTopFacts() error {
	if read := b.Dialect.provider().readTop; read != nil {
		return read(b)
	}
	return nil
}

// Marshal writes the body back. When nothing was edited the original
// bytes are returned unchanged; otherwise only the message array and the
// top-level fields an edit touched (the tools array and system prompt of a
// [Guarded.Body]) are rewritten, and every other field is kept as it was.
func (b *Body) Marshal() ([]byte, error) {
	if b == nil || b.top == nil {
		return nil, errors.New("wire: marshal of a body that was not read")
	}
	if !b.dirty && len(b.fields) == 0 {
		return append([]byte(nil), b.top.src...), nil
	}
	var msgs []byte
	if b.dirty {
		msgs = b.messagesJSON()
	}
	return b.top.with(b.topEdits(msgs)), nil
}

// topEdits returns the top-level values to write in place of those read:
// the fields replaced or added and, when msgs is not nil, the message
// array as msgs.
func (b *Body) topEdits(msgs []byte) map[string][]byte {
	edits := make(map[string][]byte, len(b.fields)+1)
	for k, v := range b.fields {
		edits[k] = v
	}
	if msgs != nil {
		edits[b.key] = msgs
	}
	return edits
}

// messagesJSON encodes the current message array, or the plain string a
// Responses input was given as while its one message stays (once removed,
// the input is written as an empty array).
func (b *Body) messagesJSON() []byte {
	if b.inputString && len(b.facts) == 1 {
		return b.facts[0].raw
	}
	n := 2
	for i := range b.facts {
		n += len(b.facts[i].raw) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i := range b.facts {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, b.facts[i].raw...)
	}
	return append(out, ']')
}

// materialised reports whether Messages was made from the facts.
func (b *Body) materialised() bool { return len(b.Messages) == len(b.facts) }

// Remove deletes whole messages (items, turns) by index. Indexes refer to
// the current Messages and may come in any order; duplicates are ignored.
// Nothing is removed when an index is out of range.
func (b *Body) Remove(indexes []int) error {
	if len(indexes) == 0 {
		return nil
	}
	drop := make(map[int]bool, len(indexes))
	for _, i := range indexes {
		if i < 0 || i >= len(b.facts) {
			return fmt.Errorf("wire: remove: index %d out of range [0,%d)", i, len(b.facts))
		}
		drop[i] = true
	}
	mat := b.materialised()
	kept := b.facts[:0:0]
	var msgs []Message
	for i := range b.facts {
		if drop[i] {
			continue
		}
		kept = append(kept, b.facts[i])
		if mat {
			msgs = append(msgs, b.Messages[i])
		}
	}
	b.facts = kept
	if mat {
		b.Messages = msgs
		if b.Messages == nil {
			b.Messages = []Message{}
		}
	}
	b.dirty = true
	return nil
}

// Stub replaces the content of every tool result carried by message index
// with the placeholder text, keeping the result's envelope: its block or
// item, its ids, its name, its error flag or status, its cache control,
// and the call. What is replaced, per dialect:
//
//   - OpenAI Chat: the content of a tool or legacy function message
//     becomes the text.
//   - OpenAI Responses: the output of a function, custom tool, local
//     shell or apply patch call output becomes the text (an output given
//     as an array of content parts becomes one input_text part); a shell
//     call output becomes one chunk with the text as stdout, empty stderr
//     and the first chunk's outcome. A computer call output (a
//     screenshot), a client tool search output (a tool list) and an MCP
//     approval response carry nothing text can replace: Stub refuses them
//     with an error matching [ErrUnstubbable].
//   - Anthropic: the content of each tool_result block becomes the text
//     (images and documents in it go); tool_reference blocks in it stay,
//     after the text, since they name tools that must stay loaded.
//   - Gemini: each functionResponse's response becomes {"result": text}
//     and its multimodal parts go.
//   - Bedrock: each toolResult's content becomes [{"text": text}].
//
// text must not be blank, since providers reject empty results.
func (b *Body) Stub(index int, text string) error {
	if index < 0 || index >= len(b.facts) {
		return fmt.Errorf("wire: stub: index %d out of range [0,%d)", index, len(b.facts))
	}
	if strings.TrimSpace(text) == "" {
		return errors.New("wire: stub: placeholder text is blank")
	}
	f := &b.facts[index]
	if f.nresults == 0 {
		return fmt.Errorf("wire: stub: %s[%d] carries no tool result", b.key, index)
	}
	raw, err := stubMessage(b.Dialect, f.raw, text)
	if err != nil {
		return fmt.Errorf("wire: stub: %s[%d]: %w", b.key, index, err)
	}
	nf, err := parseMessage(b.Dialect, raw)
	if err != nil {
		return fmt.Errorf("wire: stub: %s[%d]%v", b.key, index, err)
	}
	mat := b.materialised()
	*f = nf
	if mat {
		b.Messages[index] = nf.message()
	}
	b.dirty = true
	return nil
}

// sortViolations orders violations by index, then rule.
func sortViolations(v []RuleViolation) {
	sort.SliceStable(v, func(i, j int) bool {
		if v[i].Index != v[j].Index {
			return v[i].Index < v[j].Index
		}
		return v[i].Rule < v[j].Rule
	})
}

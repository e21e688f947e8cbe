package einoguard

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
)

// ApproxTokens estimates a message's tokens as a quarter of its bytes,
// rounded up: the text content, the reasoning content, the text of
// multimodal parts, and the name and arguments of each tool call. It is
// the estimate eino's reduction middleware makes, extended to reasoning
// and multimodal text. A nil message counts zero.
func ApproxTokens(m *schema.Message) int {
	if m == nil {
		return 0
	}
	n := len(m.Content) + len(m.ReasoningContent)
	for _, p := range m.MultiContent {
		n += len(p.Text)
	}
	for _, p := range m.UserInputMultiContent {
		n += len(p.Text)
	}
	for _, p := range m.AssistantGenMultiContent {
		n += len(p.Text)
	}
	for _, tc := range m.ToolCalls {
		n += len(tc.Function.Name) + len(tc.Function.Arguments)
	}
	return (n + 3) / 4
}

// Role maps an eino role to the guard's. The four roles eino defines map
// to their namesakes; any other string passes through unchanged.
func Role(r schema.RoleType) pruneguard.Role {
	switch r {
	case schema.System:
		return pruneguard.RoleSystem
	case schema.User:
		return pruneguard.RoleUser
	case schema.Assistant:
		return pruneguard.RoleAssistant
	case schema.Tool:
		return pruneguard.RoleTool
	}
	return pruneguard.Role(r)
}

// Event describes an eino message as the guard's event, under the given
// id and token count. An assistant message's ToolCalls become its Calls
// (eino's call ids, tool names and JSON arguments); a tool message answers
// its ToolCallID; reasoning content stays with the assistant message that
// carries it, so it is kept or pruned with that message's calls, as
// providers that sign reasoning require; system messages are pinned. The
// content is not copied, the guard sees only its token count, except the
// prose of an assistant message that makes calls (its content and the
// text of its parts, when not blank): that is text the model wrote, and
// the guard classes it as text rather than as what the calls return.
//
// Calls without an id, and tool messages without a ToolCallID, are left
// as they are here; a [Session] pairs them in order.
func Event(m *schema.Message, id pruneguard.MessageID, tokens int) pruneguard.Message {
	e := pruneguard.Message{ID: id, Role: Role(m.Role), Tokens: tokens}
	switch m.Role {
	case schema.System:
		e.Pinned = true
	case schema.Tool:
		e.Answers = []pruneguard.CallID{pruneguard.CallID(m.ToolCallID)}
	}
	if len(m.ToolCalls) > 0 {
		if m.Role == schema.Assistant {
			if prose := textOf(m); prose != "" {
				e.Content = []byte(prose)
			}
		}
		e.Calls = make([]pruneguard.Call, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			e.Calls[i] = pruneguard.Call{ID: pruneguard.CallID(tc.ID), Tool: tc.Function.Name}
			if tc.Function.Arguments != "" {
				e.Calls[i].Args = json.RawMessage(tc.Function.Arguments)
			}
		}
	}
	return e
}

// textOf is the text of m: its content, then the text of each part.
func textOf(m *schema.Message) string {
	parts := []string{m.Content}
	for _, p := range m.MultiContent {
		parts = append(parts, p.Text)
	}
	for _, p := range m.UserInputMultiContent {
		parts = append(parts, p.Text)
	}
	for _, p := range m.AssistantGenMultiContent {
		parts = append(parts, p.Text)
	}
	return strings.TrimSpace(strings.Join(parts, "\n"))
}

// Stub returns a copy of a tool message whose content is replaced by
// text: the role, ToolCallID, ToolName, Name and Extra stay, so the call
// keeps its answer; multimodal parts and reasoning are dropped. m itself
// is not changed.
func Stub(m *schema.Message, text string) *schema.Message {
	c := *m
	c.Content = text
	c.MultiContent = nil
	c.UserInputMultiContent = nil
	c.AssistantGenMultiContent = nil
	c.ReasoningContent = ""
	return &c
}

// messageID names the n-th message a session took in.
func messageID(n uint64) pruneguard.MessageID {
	return pruneguard.MessageID("m" + strconv.FormatUint(n, 10))
}

// seqOf reads back the number messageID wrote.
func seqOf(id pruneguard.MessageID) (uint64, bool) {
	if len(id) < 2 || id[0] != 'm' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(id[1:]), 10, 64)
	return n, err == nil
}

package wire

import (
	"encoding/json"
	"strings"
)

// Rule codes for OpenAI Chat Completions.
const (
	// RuleChatToolCallsWithoutResponse: an assistant message with
	// tool_calls is not followed, before any other role, by a tool message
	// for each id.
	RuleChatToolCallsWithoutResponse = "openai-chat/tool-calls-without-response"
	// RuleChatOrphanToolMessage: a tool message that does not belong to a
	// block of tool messages right after an assistant tool_calls message.
	RuleChatOrphanToolMessage = "openai-chat/orphan-tool-message"
	// RuleChatUnknownToolCallID: a tool message inside a tool block answers
	// an id the assistant message did not issue.
	RuleChatUnknownToolCallID = "openai-chat/unknown-tool-call-id"
	// RuleChatFunctionWithoutName: a legacy role "function" message has no
	// name. (A function message is paired with the assistant function_call
	// right before it, but their pairing is not validated.)
	RuleChatFunctionWithoutName = "openai-chat/function-without-name"
	// RuleChatPendingCalls: the body ends on an assistant tool_calls message
	// with no tool message after it.
	RuleChatPendingCalls = "openai-chat/pending-calls"
	// RuleChatDuplicateToolResponse: two tool messages of one block answer
	// the same tool_call_id.
	RuleChatDuplicateToolResponse = "openai-chat/duplicate-tool-response"
	// RuleChatEmptyMessages: the messages array is empty.
	RuleChatEmptyMessages = "openai-chat/empty-messages"
)

// Rule codes for the tools array and the tool choice. They concern the
// request outside its history, which a prune changes when it withdraws
// schemas; their violations carry index 0 unless a message is to blame.
const (
	// RuleChatEmptyTools: the tools array, or the legacy functions array,
	// is empty.
	RuleChatEmptyTools = "openai-chat/empty-tools"
	// RuleChatToolChoiceWithoutTools: a tool_choice (or a legacy
	// function_call field) is set and no tools or functions are declared.
	RuleChatToolChoiceWithoutTools = "openai-chat/tool-choice-without-tools"
	// RuleChatUnknownToolChoice: tool_choice names a tool the tools array
	// does not declare.
	RuleChatUnknownToolChoice = "openai-chat/unknown-tool-choice"
	// RuleChatUnknownFunctionCall: the legacy function_call field names a
	// function neither functions nor tools declares.
	RuleChatUnknownFunctionCall = "openai-chat/unknown-function-call"
)

// validateChat checks the messages msgs: every tool message in the block
// right after the assistant message whose tool_calls it answers, each id
// answered once, and a name on every legacy function message.
func validateChat(msgs []*facts, sc scope, v *violations) {
	var tc toolCalls
	for i := 0; i < len(msgs); {
		m := msgs[i]
		switch {
		case m.role == "tool":
			v.add(RuleChatOrphanToolMessage, sc.off+i,
				"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
			i++
		case m.role == "function" && m.name == "":
			v.add(RuleChatFunctionWithoutName, sc.off+i,
				"Missing parameter 'name': messages with role 'function' must have a 'name'.")
			i++
		case m.role == "assistant" && hasToolCalls(m):
			tc.reset(m)
			j := i + 1
			for ; j < len(msgs) && msgs[j].role == "tool"; j++ {
				for _, p := range msgs[j].parts {
					if p.kind != PartResult {
						continue
					}
					id := p.id
					k := tc.find(id)
					if k < 0 {
						v.add(RuleChatUnknownToolCallID, sc.off+j,
							"Invalid parameter: 'tool_call_id' of '%s' not found in 'tool_calls' of previous message.", id)
						continue
					}
					if at := tc.at[k]; at >= 0 {
						v.add(RuleChatDuplicateToolResponse, sc.off+j,
							"Invalid parameter: Duplicate value for 'tool_call_id' of '%s', in messages[%d] and messages[%d].", id, sc.off+at, sc.off+j)
						continue
					}
					tc.at[k] = j
				}
			}
			if tc.missing() {
				rule := RuleChatToolCallsWithoutResponse
				if j == i+1 && j == len(msgs) && sc.atEnd {
					rule = RuleChatPendingCalls
				}
				v.add(rule, sc.off+i, "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s",
					tc.missingList())
			}
			i = j
		default:
			i++
		}
	}
}

// toolCalls holds the tool_calls of one Chat assistant message while its
// tool messages are matched to them, without allocating for the usual
// handful of calls: ids are the distinct ids in order of first
// appearance, and at the index of the message that answered each id, or -1.
type toolCalls struct {
	idBuf [8]string
	atBuf [8]int
	ids   []string
	at    []int
	byID  map[string]int // for a large batch: the index of each id in ids
}

// toolCallsIndexed is the batch size from which ids are found by a map
// rather than by a scan.
const toolCallsIndexed = 16

// reset takes the tool_calls of m, leaving out a legacy function_call.
func (tc *toolCalls) reset(m *facts) {
	tc.ids, tc.at, tc.byID = tc.idBuf[:0], tc.atBuf[:0], nil
	for i := range m.parts {
		p := &m.parts[i]
		if p.kind != PartCall || p.typ != "tool_call" {
			continue
		}
		if tc.find(p.id) >= 0 {
			continue
		}
		if tc.byID != nil {
			tc.byID[p.id] = len(tc.ids)
		}
		tc.ids = append(tc.ids, p.id)
		tc.at = append(tc.at, -1)
		if len(tc.ids) == toolCallsIndexed && tc.byID == nil {
			tc.byID = make(map[string]int, 2*toolCallsIndexed)
			for k, id := range tc.ids {
				tc.byID[id] = k
			}
		}
	}
}

// find returns the index of id in ids, or -1.
func (tc *toolCalls) find(id string) int {
	if tc.byID != nil {
		if k, ok := tc.byID[id]; ok {
			return k
		}
		return -1
	}
	for k, x := range tc.ids {
		if x == id {
			return k
		}
	}
	return -1
}

// missing reports an id that no tool message answered.
func (tc *toolCalls) missing() bool {
	for _, at := range tc.at {
		if at < 0 {
			return true
		}
	}
	return false
}

// missingList joins the ids no tool message answered, in order, without
// repeats.
func (tc *toolCalls) missingList() string {
	var miss []string
	for k, id := range tc.ids {
		if tc.at[k] < 0 {
			miss = append(miss, id)
		}
	}
	return strings.Join(miss, ", ")
}

// hasToolCalls reports tool_calls in a Chat message (a legacy
// function_call is not one).
func hasToolCalls(m *facts) bool {
	for i := range m.parts {
		if m.parts[i].kind == PartCall && m.parts[i].typ == "tool_call" {
			return true
		}
	}
	return false
}

// chatChoiceNames returns the tools a Chat tool_choice names: a function
// or custom tool, or the allowed_tools list.
func chatChoiceNames(choice json.RawMessage) []string {
	var names []string
	switch str(path(choice, "type")) {
	case "function":
		names = append(names, str(path(choice, "function", "name")))
	case "custom":
		names = append(names, str(path(choice, "custom", "name")))
	case "allowed_tools":
		items, _ := asArray(path(choice, "allowed_tools", "tools"))
		for _, it := range items {
			n := str(path(it, "function", "name"))
			if n == "" {
				n = str(path(it, "custom", "name"))
			}
			names = append(names, n)
		}
	}
	return names
}

// chatToolFields checks the tools and legacy functions arrays, and that
// tool_choice and a legacy function_call name tools declared.
func chatToolFields(b *Body, ts *toolState, v *violations) {
	for _, key := range []string{"tools", "functions"} {
		if items, ok := asArray(b.field(key)); ok && len(items) == 0 {
			v.add(RuleChatEmptyTools, 0, "Invalid '%s': empty array. Expected an array with minimum length 1, but got an empty array instead.", key)
		}
	}
	choice, fcall := b.field("tool_choice"), b.field("function_call")
	if len(ts.declared) == 0 {
		if !isNull(choice) {
			v.add(RuleChatToolChoiceWithoutTools, 0, "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
		}
		if !isNull(fcall) {
			v.add(RuleChatToolChoiceWithoutTools, 0, "Invalid value for 'function_call': 'function_call' is only allowed when 'functions' are specified.")
		}
		return
	}
	for _, n := range unknownTools(ts.declared, chatChoiceNames(choice)...) {
		v.add(RuleChatUnknownToolChoice, 0, "Invalid 'tool_choice': no tool named '%s' is declared in 'tools'.", n)
	}
	for _, n := range unknownTools(ts.declared, str(path(fcall, "name"))) {
		v.add(RuleChatUnknownFunctionCall, 0, "Invalid 'function_call': no function named '%s' is declared in 'functions'.", n)
	}
}

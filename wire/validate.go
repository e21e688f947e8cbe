package wire

import (
	"fmt"
	"strings"
)

// Violation is one structural problem a provider would reject with HTTP
// 400 (or, for the pending-calls rules, a batch of calls still waiting for
// results).
type Violation struct {
	// Rule is a stable code such as "anthropic/tool-use-without-result".
	Rule string
	// Index is the index of the offending message, item or content turn;
	// 0 for an empty history.
	Index int
	// Message is the provider's own error wording with ids filled in.
	Message string
}

// String formats the violation as "rule at index: message".
func (v Violation) String() string {
	return fmt.Sprintf("%s at %d: %s", v.Rule, v.Index, v.Message)
}

// violations collects the violations a validator finds.
type violations []Violation

// add records a violation of rule at index i with the formatted wording.
func (v *violations) add(rule string, i int, format string, args ...any) {
	*v = append(*v, Violation{Rule: rule, Index: i, Message: fmt.Sprintf(format, args...)})
}

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

// Rule codes for OpenAI Responses.
const (
	// RuleResponsesCallWithoutOutput: a client call item (function_call,
	// custom_tool_call, computer_call, local_shell_call, shell_call,
	// apply_patch_call, a client tool_search_call) has no later output item
	// of its kind answering its id. An MCP approval request may stay
	// unanswered.
	RuleResponsesCallWithoutOutput = "openai-responses/call-without-output"
	// RuleResponsesOutputWithoutCall: an output item (or an MCP approval
	// response) has no earlier call item of its kind with the id it
	// answers. Not reported when previous_response_id, a conversation or
	// an item_reference is in the request: the call may be stored.
	RuleResponsesOutputWithoutCall = "openai-responses/output-without-call"
	// RuleResponsesReasoningWithoutFollower: a reasoning item is last or is
	// followed by another reasoning item or by a user message.
	RuleResponsesReasoningWithoutFollower = "openai-responses/reasoning-without-following-item"
	// RuleResponsesDuplicateItemID: two items share an id.
	RuleResponsesDuplicateItemID = "openai-responses/duplicate-item-id"
	// RuleResponsesReasoningNotPersisted: with "store": false a reasoning
	// item lacks encrypted_content, so the server cannot resolve it.
	RuleResponsesReasoningNotPersisted = "openai-responses/reasoning-not-persisted"
	// RuleResponsesPendingCalls: client call items at the end of the
	// input, after the last output item and the last user message, without
	// outputs.
	RuleResponsesPendingCalls = "openai-responses/pending-calls"
	// RuleResponsesEmptyInput: the input array is empty. The wording is
	// this package's own: no provider error for it is on record.
	RuleResponsesEmptyInput = "openai-responses/empty-input"
)

// Rule codes for Anthropic Messages. Consecutive same-role messages are
// merged into one turn before the pairing rules are checked, as the API
// does.
const (
	// RuleAnthropicToolUseWithoutResult: the turn after an assistant turn
	// with tool_use blocks does not start with a tool_result for every id.
	RuleAnthropicToolUseWithoutResult = "anthropic/tool-use-without-result"
	// RuleAnthropicUnexpectedToolResult: a tool_result answers no tool_use
	// of the previous assistant turn.
	RuleAnthropicUnexpectedToolResult = "anthropic/unexpected-tool-result"
	// RuleAnthropicDuplicateToolResult: two tool_result blocks of one turn
	// answer the same id.
	RuleAnthropicDuplicateToolResult = "anthropic/duplicate-tool-result"
	// RuleAnthropicDuplicateToolUseID: two tool_use blocks of one turn share
	// an id.
	RuleAnthropicDuplicateToolUseID = "anthropic/duplicate-tool-use-id"
	// RuleAnthropicToolResultNotInUser: a tool_result block in an assistant
	// message.
	RuleAnthropicToolResultNotInUser = "anthropic/tool-result-not-in-user"
	// RuleAnthropicEmptyContent: a message other than the final assistant
	// message has no content.
	RuleAnthropicEmptyContent = "anthropic/empty-content"
	// RuleAnthropicEmptyText: a text block (or string content) is empty or
	// whitespace only.
	RuleAnthropicEmptyText = "anthropic/empty-text"
	// RuleAnthropicFirstNotUser: the first message is not a user message.
	RuleAnthropicFirstNotUser = "anthropic/first-not-user"
	// RuleAnthropicThinkingNotFirst: an assistant turn holds thinking
	// blocks but does not start with one.
	RuleAnthropicThinkingNotFirst = "anthropic/thinking-not-first"
	// RuleAnthropicMissingThinking: thinking is enabled and the assistant
	// turn of the active tool loop (the body ends on its results) does not
	// start with a thinking block, although the body carries thinking.
	RuleAnthropicMissingThinking = "anthropic/missing-thinking"
	// RuleAnthropicThinkingWhileDisabled: thinking is not enabled and the
	// final message is an assistant message holding thinking.
	RuleAnthropicThinkingWhileDisabled = "anthropic/thinking-while-disabled"
	// RuleAnthropicServerResultWithoutUse: a server tool result block
	// without a server_tool_use before it in the same turn.
	RuleAnthropicServerResultWithoutUse = "anthropic/server-result-without-use"
	// RuleAnthropicPendingCalls: the body ends on an assistant turn with
	// tool_use blocks.
	RuleAnthropicPendingCalls = "anthropic/pending-calls"
	// RuleAnthropicEmptyMessages: the messages array is empty.
	RuleAnthropicEmptyMessages = "anthropic/empty-messages"
)

// Rule codes for Gemini.
const (
	// RuleGeminiCallTurnPosition: a functionCall turn is first or follows a
	// model turn.
	RuleGeminiCallTurnPosition = "gemini/call-turn-position"
	// RuleGeminiResponseTurnPosition: a functionResponse turn does not
	// directly follow a functionCall turn.
	RuleGeminiResponseTurnPosition = "gemini/response-turn-position"
	// RuleGeminiResponseCount: the response parts do not match the call
	// parts of the call turn in number (or in id, when both carry ids).
	RuleGeminiResponseCount = "gemini/response-count"
	// RuleGeminiCallWithoutResponse: a functionCall turn is followed by a
	// turn without functionResponse parts.
	RuleGeminiCallWithoutResponse = "gemini/call-without-response"
	// RuleGeminiMissingThoughtSignature: in the current turn (after the last
	// real user message), a functionCall step's first call part has no
	// thoughtSignature while other calls in the body carry one.
	RuleGeminiMissingThoughtSignature = "gemini/missing-thought-signature"
	// RuleGeminiFirstNotUser: the first content is a model turn.
	RuleGeminiFirstNotUser = "gemini/first-not-user"
	// RuleGeminiPendingCalls: the body ends on a functionCall turn.
	RuleGeminiPendingCalls = "gemini/pending-calls"
	// RuleGeminiEmptyContents: the contents array is empty.
	RuleGeminiEmptyContents = "gemini/empty-contents"
)

// Rule codes for Bedrock Converse. Bedrock merges nothing.
const (
	// RuleBedrockNotAlternating: two consecutive messages share a role.
	RuleBedrockNotAlternating = "bedrock/not-alternating"
	// RuleBedrockFirstNotUser: the first message is not a user message.
	RuleBedrockFirstNotUser = "bedrock/first-not-user"
	// RuleBedrockToolUseWithoutResult: the message after an assistant
	// message with toolUse blocks lacks a toolResult for some id.
	RuleBedrockToolUseWithoutResult = "bedrock/tool-use-without-result"
	// RuleBedrockTooManyResults: a message has more toolResult blocks than
	// the previous message has toolUse blocks.
	RuleBedrockTooManyResults = "bedrock/too-many-results"
	// RuleBedrockUnexpectedToolResult: a toolResult id matches no toolUse
	// of the previous message.
	RuleBedrockUnexpectedToolResult = "bedrock/unexpected-tool-result"
	// RuleBedrockMissingToolConfig: tool blocks are present but toolConfig
	// is not.
	RuleBedrockMissingToolConfig = "bedrock/missing-tool-config"
	// RuleBedrockBlankText: a text block is empty or whitespace only.
	RuleBedrockBlankText = "bedrock/blank-text"
	// RuleBedrockPendingCalls: the body ends on an assistant message with
	// toolUse blocks.
	RuleBedrockPendingCalls = "bedrock/pending-calls"
	// RuleBedrockEmptyMessages: the messages array is empty. The wording
	// is this package's own: no provider error for it is on record.
	RuleBedrockEmptyMessages = "bedrock/empty-messages"
)

// Validate reads body as dialect d (Detect when d is empty) and lists its
// violations; see Body.Validate. The error is a reading error.
func Validate(body []byte, d Dialect) ([]Violation, error) {
	b, err := Read(body, d)
	if err != nil {
		return nil, err
	}
	return b.Validate(), nil
}

// Validate lists every structural violation of the body that its provider
// would reject, ordered by index and then rule. Pending calls at the end of
// the body are reported under the "<dialect>/pending-calls" rule; callers
// that send a history ending on calls on purpose can skip those.
func (b *Body) Validate() []Violation {
	if b == nil {
		return nil
	}
	if len(b.Messages) == 0 {
		if r, ok := emptyHistory[b.Dialect]; ok {
			return []Violation{{Rule: r[0], Index: 0, Message: r[1]}}
		}
	}
	var v []Violation
	switch b.Dialect {
	case OpenAIChat:
		v = validateChat(b)
	case OpenAIResponses:
		v = validateResponses(b)
	case Anthropic:
		v = validateAnthropic(b)
	case Gemini:
		v = validateGemini(b)
	case Bedrock:
		v = validateBedrock(b)
	}
	v = append(v, validateTools(b)...)
	sortViolations(v)
	return v
}

// emptyHistory gives each dialect's rule and wording for an empty
// message array: every provider needs at least one message to answer.
var emptyHistory = map[Dialect][2]string{
	OpenAIChat:      {RuleChatEmptyMessages, "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead."},
	OpenAIResponses: {RuleResponsesEmptyInput, "input: the input array is empty; at least one item is required."},
	Anthropic:       {RuleAnthropicEmptyMessages, "messages: at least one message is required"},
	Gemini:          {RuleGeminiEmptyContents, "GenerateContentRequest.contents: contents is not specified"},
	Bedrock:         {RuleBedrockEmptyMessages, "messages: the conversation is empty; it must start with a user message."},
}

func callIDs(calls []Call) []string {
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.ID
	}
	return ids
}

// missingIDs returns the ids not in have, in order, without repeats.
func missingIDs(ids []string, have map[string]bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, id := range ids {
		if !have[id] && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// ---- OpenAI Chat ----------------------------------------------------------

func validateChat(b *Body) []Violation {
	var v violations
	msgs := b.Messages
	for i := 0; i < len(msgs); {
		m := &msgs[i]
		switch {
		case m.Role == "tool":
			v.add(RuleChatOrphanToolMessage, i,
				"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
			i++
		case m.Role == "function" && m.Name == "":
			v.add(RuleChatFunctionWithoutName, i,
				"Missing parameter 'name': messages with role 'function' must have a 'name'.")
			i++
		case m.Role == "assistant" && len(toolCallIDs(m)) > 0:
			ids := toolCallIDs(m)
			issued := make(map[string]bool, len(ids))
			for _, id := range ids {
				issued[id] = true
			}
			answered := map[string]bool{}
			answeredAt := map[string]int{}
			j := i + 1
			for ; j < len(msgs) && msgs[j].Role == "tool"; j++ {
				for _, id := range msgs[j].Results {
					if !issued[id] {
						v.add(RuleChatUnknownToolCallID, j,
							"Invalid parameter: 'tool_call_id' of '%s' not found in 'tool_calls' of previous message.", id)
						continue
					}
					if answered[id] {
						v.add(RuleChatDuplicateToolResponse, j,
							"Invalid parameter: Duplicate value for 'tool_call_id' of '%s', in messages[%d] and messages[%d].", id, answeredAt[id], j)
						continue
					}
					answered[id] = true
					answeredAt[id] = j
				}
			}
			if miss := missingIDs(ids, answered); len(miss) > 0 {
				rule := RuleChatToolCallsWithoutResponse
				if j == i+1 && j == len(msgs) {
					rule = RuleChatPendingCalls
				}
				v.add(rule, i, "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s",
					strings.Join(miss, ", "))
			}
			i = j
		default:
			i++
		}
	}
	return v
}

// toolCallIDs returns the ids of a Chat message's tool_calls, leaving out
// a legacy function_call, which has none and which the API does not pair.
func toolCallIDs(m *Message) []string {
	var ids []string
	for _, p := range m.Parts {
		if p.Kind == PartCall && p.Type == "tool_call" {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// ---- OpenAI Responses -----------------------------------------------------

func isUserMessage(m *Message) bool {
	return m.Type == "message" && m.Role == "user"
}

func validateResponses(b *Body) []Violation {
	var v violations
	items := b.Messages
	barrier := responsesBarrier(items)
	type open struct {
		index int
		typ   string
		id    string
	}
	var order []open
	pending := map[[2]string][]int{} // (call type, id) -> positions in order, unanswered
	answered := map[int]bool{}       // positions in order that got an output
	seenIDs := map[string]bool{}
	for i := range items {
		m := &items[i]
		if m.ID != "" {
			if seenIDs[m.ID] {
				v.add(RuleResponsesDuplicateItemID, i, "Duplicate item found with id %s.", m.ID)
			}
			seenIDs[m.ID] = true
		}
		for _, c := range m.Calls {
			k := [2]string{m.Type, c.ID}
			pending[k] = append(pending[k], len(order))
			order = append(order, open{i, m.Type, c.ID})
		}
		for _, p := range m.Parts {
			if p.Kind != PartResult {
				continue
			}
			out := responsesOutputs[p.Type]
			k := [2]string{out[0], p.ID}
			q := pending[k]
			if len(q) == 0 {
				// With previous_response_id (or a conversation) the call
				// may be stored on the server.
				if !b.continues {
					v.add(RuleResponsesOutputWithoutCall, i, "No tool call found for %s with %s %s.", strings.ReplaceAll(p.Type, "_", " "), out[1], p.ID)
				}
				continue
			}
			answered[q[0]] = true
			pending[k] = q[1:]
		}
		if m.Type == "reasoning" {
			next := i + 1
			if next >= len(items) || items[next].Type == "reasoning" || isUserMessage(&items[next]) {
				v.add(RuleResponsesReasoningWithoutFollower, i,
					"Item '%s' of type 'reasoning' was provided without its required following item.", m.ID)
			}
			if b.storeFalse && !signed(m) {
				v.add(RuleResponsesReasoningNotPersisted, i,
					"Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", m.ID)
			}
		}
	}
	for k, o := range order {
		if answered[k] || o.typ == "mcp_approval_request" {
			continue // the user may leave an approval request unanswered
		}
		rule := RuleResponsesCallWithoutOutput
		if o.index > barrier {
			rule = RuleResponsesPendingCalls
		}
		v.add(rule, o.index, "No tool output found for %s %s.", strings.ReplaceAll(o.typ, "_", " "), o.id)
	}
	return v
}

// responsesBarrier returns the index of the last item that closes the
// model's turn, an output or a user message; calls after it are pending.
func responsesBarrier(items []Message) int {
	barrier := -1
	for i := range items {
		if len(items[i].Results) > 0 || isUserMessage(&items[i]) {
			barrier = i
		}
	}
	return barrier
}

// signed reports a signed reasoning part in m.
func signed(m *Message) bool {
	for _, p := range m.Parts {
		if p.Kind == PartReasoning && p.Signed {
			return true
		}
	}
	return false
}

// ---- Anthropic ------------------------------------------------------------

// turnPart is a content part of a merged turn, with its original message.
type turnPart struct {
	msg int
	blk int
	Part
}

type turn struct {
	role  string
	first int // index of the first message of the turn
	last  int
	parts []turnPart
}

// mergeTurns merges consecutive same-role messages into turns, as the
// Anthropic API does.
func mergeTurns(msgs []Message) []turn {
	var turns []turn
	for i := range msgs {
		m := &msgs[i]
		if n := len(turns); n == 0 || turns[n-1].role != m.Role {
			turns = append(turns, turn{role: m.Role, first: i})
		}
		t := &turns[len(turns)-1]
		t.last = i
		for k, p := range m.Parts {
			t.parts = append(t.parts, turnPart{msg: i, blk: k, Part: p})
		}
	}
	return turns
}

func validateAnthropic(b *Body) []Violation {
	var v violations
	msgs := b.Messages
	for i := range msgs {
		m := &msgs[i]
		if m.Empty && !(i == len(msgs)-1 && m.Role == "assistant") {
			v.add(RuleAnthropicEmptyContent, i,
				"messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		for _, p := range m.Parts {
			if p.Kind == PartText && strings.TrimSpace(p.Text) == "" {
				v.add(RuleAnthropicEmptyText, i, "messages: text content blocks must be non-empty")
				break
			}
		}
	}
	turns := mergeTurns(msgs)
	if len(turns) > 0 && turns[0].role != "user" {
		v.add(RuleAnthropicFirstNotUser, 0, `messages: first message must use the "user" role`)
	}
	anyThinking := false
	for i := range msgs {
		anyThinking = anyThinking || msgs[i].Reasoning
	}
	for t := range turns {
		tn := &turns[t]
		switch tn.role {
		case "assistant":
			var uses []string
			useAt := -1
			seenUse := map[string]bool{}
			server := map[string]bool{}
			hasThinking := false
			for _, p := range tn.parts {
				switch p.Kind {
				case PartCall:
					if seenUse[p.ID] {
						v.add(RuleAnthropicDuplicateToolUseID, p.msg, "messages.%d.content.%d: `tool_use` ids must be unique", p.msg, p.blk)
						continue
					}
					seenUse[p.ID] = true
					uses = append(uses, p.ID)
					if useAt < 0 {
						useAt = p.msg
					}
				case PartResult:
					v.add(RuleAnthropicToolResultNotInUser, p.msg, "messages.%d: `tool_result` blocks can only be in `user` messages", p.msg)
				case PartServerCall:
					server[p.ID] = true
				case PartServerResult:
					if !server[p.ID] {
						v.add(RuleAnthropicServerResultWithoutUse, p.msg,
							"messages.%d.content.%d: unexpected `tool_use_id` found in `%s` blocks: %s. Each `%s` block must have a corresponding `server_tool_use` block before it.",
							p.msg, p.blk, p.Type, p.ID, p.Type)
					}
				case PartReasoning:
					hasThinking = true
				}
			}
			if hasThinking && tn.parts[0].Kind != PartReasoning {
				v.add(RuleAnthropicThinkingNotFirst, tn.first,
					"messages.%d: If an assistant message contains any thinking blocks, the first block must be `thinking` or `redacted_thinking`. Found `%s`.",
					tn.first, tn.parts[0].Type)
			}
			if len(uses) == 0 {
				continue
			}
			if t == len(turns)-1 {
				v.add(RuleAnthropicPendingCalls, useAt,
					"messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
					useAt, strings.Join(uses, ", "))
				continue
			}
			next := &turns[t+1]
			lead := map[string]bool{}
			if next.role == "user" {
				for _, p := range next.parts {
					if p.Kind != PartResult {
						break
					}
					lead[p.ID] = true
				}
			}
			if miss := missingIDs(uses, lead); len(miss) > 0 {
				v.add(RuleAnthropicToolUseWithoutResult, useAt,
					"messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
					useAt, strings.Join(miss, ", "))
			}
		case "user":
			issued := map[string]bool{}
			if t > 0 && turns[t-1].role == "assistant" {
				for _, p := range turns[t-1].parts {
					if p.Kind == PartCall {
						issued[p.ID] = true
					}
				}
			}
			seen := map[string]bool{}
			for _, p := range tn.parts {
				if p.Kind != PartResult {
					continue
				}
				if !issued[p.ID] {
					v.add(RuleAnthropicUnexpectedToolResult, p.msg,
						"messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
						p.msg, p.blk, p.ID)
				} else if seen[p.ID] {
					v.add(RuleAnthropicDuplicateToolResult, p.msg,
						"messages.%d.content.%d: each tool_use must have a single result. Found multiple `tool_result` blocks with id: %s", p.msg, p.blk, p.ID)
				}
				seen[p.ID] = true
			}
		}
	}
	if len(turns) == 0 {
		return v
	}
	enabled := b.thinking == "enabled" || b.thinking == "adaptive"
	last := &turns[len(turns)-1]
	if !enabled && last.role == "assistant" {
		for _, p := range last.parts {
			if p.Kind == PartReasoning {
				v.add(RuleAnthropicThinkingWhileDisabled, p.msg,
					"messages.%d.content.%d: When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`.", p.msg, p.blk)
				break
			}
		}
	}
	// Active tool loop: the body ends on a user turn that starts with tool
	// results; the assistant turn before it must start with thinking. Only
	// checked when the body carries thinking at all, since a conversation
	// begun before thinking was switched on has none to send back.
	if enabled && anyThinking && len(turns) >= 2 && last.role == "user" &&
		len(last.parts) > 0 && last.parts[0].Kind == PartResult {
		a := &turns[len(turns)-2]
		if a.role == "assistant" && len(a.parts) > 0 && a.parts[0].Kind != PartReasoning {
			v.add(RuleAnthropicMissingThinking, a.first,
				"messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks).",
				a.first, a.parts[0].Type)
		}
	}
	return v
}

// ---- Gemini ---------------------------------------------------------------

// isGeminiUserRole reports a role Gemini counts as the user side.
func isGeminiUserRole(r string) bool { return r == "user" || r == "function" || r == "tool" }

func validateGemini(b *Body) []Violation {
	var v violations
	cs := b.Messages
	signedBody := false
	lastUser := -1
	for i := range cs {
		for _, c := range cs[i].Calls {
			signedBody = signedBody || c.Signed
		}
		if isRealUser(Gemini, &cs[i]) {
			lastUser = i
		}
	}
	for i := range cs {
		c := &cs[i]
		calls, resps := len(c.Calls), len(c.Results)
		if i == 0 && !isGeminiUserRole(c.Role) && calls == 0 {
			v.add(RuleGeminiFirstNotUser, i, "Please ensure that multiturn requests alternate between user and model, starting with a user turn (first content should be with role 'user').")
		}
		if calls > 0 {
			if i == 0 || !isGeminiUserRole(cs[i-1].Role) {
				v.add(RuleGeminiCallTurnPosition, i,
					"Please ensure that function call turn comes immediately after a user turn or after a function response turn.")
			}
			if i == len(cs)-1 {
				v.add(RuleGeminiPendingCalls, i,
					"Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
			} else if len(cs[i+1].Results) == 0 {
				v.add(RuleGeminiCallWithoutResponse, i,
					"Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
			}
			if signedBody && i > lastUser {
				for k, p := range c.Parts {
					if p.Kind != PartCall {
						continue
					}
					if !p.Signed {
						v.add(RuleGeminiMissingThoughtSignature, i,
							"Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d.",
							p.Name, k+1)
					}
					break
				}
			}
		}
		if resps > 0 {
			if i == 0 || len(cs[i-1].Calls) == 0 {
				v.add(RuleGeminiResponseTurnPosition, i,
					"Please ensure that function response turn comes immediately after a function call turn.")
			} else if !geminiResponsesMatch(&cs[i-1], c) {
				v.add(RuleGeminiResponseCount, i,
					"Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
			}
		}
	}
	return v
}

// geminiResponsesMatch compares a call turn with its response turn: equal
// counts, and when both sides carry ids, the same multiset of ids.
func geminiResponsesMatch(call, resp *Message) bool {
	if len(call.Calls) != len(resp.Results) {
		return false
	}
	ids := map[string]int{}
	for _, c := range call.Calls {
		if c.ID == "" {
			return true
		}
		ids[c.ID]++
	}
	for _, id := range resp.Results {
		if id == "" {
			return true
		}
		ids[id]--
	}
	for _, n := range ids {
		if n != 0 {
			return false
		}
	}
	return true
}

// ---- Bedrock --------------------------------------------------------------

func validateBedrock(b *Body) []Violation {
	var v violations
	msgs := b.Messages
	toolAt := -1
	for i := range msgs {
		m := &msgs[i]
		if toolAt < 0 && (len(m.Calls) > 0 || len(m.Results) > 0) {
			toolAt = i
		}
		if i == 0 && m.Role != "user" {
			v.add(RuleBedrockFirstNotUser, i, "A conversation must start with a user message. Try again with a conversation that starts with a user message.")
		}
		if i > 0 && m.Role == msgs[i-1].Role {
			v.add(RuleBedrockNotAlternating, i, "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.")
		}
		for k, p := range m.Parts {
			if p.Kind == PartText && strings.TrimSpace(p.Text) == "" {
				v.add(RuleBedrockBlankText, i, "The text field in the ContentBlock object at messages.%d.content.%d is blank. Add text to the text field, and try again.", i, k)
			}
		}
		if len(m.Calls) > 0 {
			ids := callIDs(m.Calls)
			if i == len(msgs)-1 {
				v.add(RuleBedrockPendingCalls, i, "Expected toolResult blocks at messages.%d.content for the following Ids: %s", i+1, strings.Join(ids, ", "))
			} else {
				have := map[string]bool{}
				if msgs[i+1].Role == "user" {
					for _, id := range msgs[i+1].Results {
						have[id] = true
					}
				}
				if miss := missingIDs(ids, have); len(miss) > 0 {
					v.add(RuleBedrockToolUseWithoutResult, i, "Expected toolResult blocks at messages.%d.content for the following Ids: %s", i+1, strings.Join(miss, ", "))
				}
			}
		}
		if len(m.Results) > 0 {
			issued := map[string]bool{}
			n := 0
			if i > 0 && msgs[i-1].Role == "assistant" {
				n = len(msgs[i-1].Calls)
				for _, c := range msgs[i-1].Calls {
					issued[c.ID] = true
				}
			}
			if len(m.Results) > n {
				v.add(RuleBedrockTooManyResults, i, "The number of toolResult blocks at messages.%d.content exceeds the number of toolUse blocks of previous turn.", i)
			} else {
				for k, p := range m.Parts {
					if p.Kind == PartResult && !issued[p.ID] {
						v.add(RuleBedrockUnexpectedToolResult, i, "messages.%d.content.%d: toolResult block with toolUseId %s does not match a toolUse block of the previous turn.", i, k, p.ID)
					}
				}
			}
		}
	}
	if toolAt >= 0 && !b.hasToolConfig {
		v.add(RuleBedrockMissingToolConfig, toolAt, "The toolConfig field must be defined when using toolUse and toolResult content blocks.")
	}
	return v
}

package wire

import (
	"fmt"
	"strings"
)

// Violation is one structural problem a provider would reject with HTTP
// 400 (or, for the pending-calls rules, a batch of calls still waiting for
// results).
//
// The zero Violation names no rule; [Validate] returns them filled in.
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
	b, err := readBody(body, d)
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
	if b == nil || b.top == nil {
		return nil
	}
	ms := make([]*facts, len(b.facts))
	for i := range b.facts {
		ms[i] = &b.facts[i]
	}
	return validateAll(b, ms, b.toolState())
}

// validateAll lists the violations of a body with messages ms and the
// tools state ts, ordered by index and then rule.
func validateAll(b *Body, ms []*facts, ts *toolState) []Violation {
	if len(ms) == 0 {
		if r, ok := emptyHistory[b.Dialect]; ok {
			return []Violation{{Rule: r[0], Index: 0, Message: r[1]}}
		}
	}
	var v violations
	sc := scopeOf(b, ms, ts)
	validateMessages(b, ms, sc, &v)
	v = append(v, validateTools(b.Dialect, ms, ts)...)
	sortViolations(v)
	return v
}

// scope is what a validator needs to know beyond the messages it is
// given, so that it can check a window of the body as well as all of it.
type scope struct {
	off     int  // the index in the body of the first message given
	atStart bool // the first message given is the body's first
	atEnd   bool // the last message given is the body's last

	// Facts of the whole body.
	anyThinking bool // Anthropic: some message carries thinking
	signedBody  bool // Gemini: some call carries a thought signature
	lastUser    int  // Gemini: the index of the last real user content, or -1
	continues   bool // Responses: the input continues what the server holds
	barrier     int  // Responses: the index of the last output or user message, or -1
	tools       *toolState
}

// scopeOf is the scope of a whole body with messages ms.
func scopeOf(b *Body, ms []*facts, ts *toolState) scope {
	sc := scope{atStart: true, atEnd: true, lastUser: -1, barrier: -1, tools: ts, continues: b.continues}
	p := b.provider()
	for i, m := range ms {
		sc.anyThinking = sc.anyThinking || m.reasoning
		sc.signedBody = sc.signedBody || m.signedCall()
		if p.realUser(m) {
			sc.lastUser = i
		}
		if m.nresults > 0 || isUserMessage(m) {
			sc.barrier = i
		}
		sc.continues = sc.continues || m.typ == "item_reference"
	}
	return sc
}

// validateMessages adds the violations of the history rules found in ms.
func validateMessages(b *Body, ms []*facts, sc scope, v *violations) {
	switch b.Dialect {
	case OpenAIChat:
		validateChat(ms, sc, v)
	case OpenAIResponses:
		validateResponses(b, ms, sc, v)
	case Anthropic:
		validateAnthropic(b, ms, sc, v)
	case Gemini:
		validateGemini(ms, sc, v)
	case Bedrock:
		validateBedrock(b, ms, sc, v)
	}
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

// callIDs returns the ids of the calls of m, in order.
func callIDs(m *facts) []string {
	ids := make([]string, 0, m.ncalls)
	m.eachCall(func(_ int, p *fpart) { ids = append(ids, p.id) })
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

// ---- OpenAI Responses -----------------------------------------------------

func isUserMessage(m *facts) bool {
	return m.typ == "message" && m.role == "user"
}

// validateResponses checks the items ms. The pairing of calls and outputs
// and the uniqueness of ids are checked only over a whole body (the screen
// keeps them by key); over a window only the rules of each item and of
// the item after a reasoning item are.
func validateResponses(b *Body, ms []*facts, sc scope, v *violations) {
	whole := sc.atStart && sc.atEnd
	if whole {
		responsesPairing(ms, sc, v)
	}
	for i, m := range ms {
		if m.typ != "reasoning" {
			continue
		}
		next := i + 1
		if (next >= len(ms) && sc.atEnd) || (next < len(ms) && (ms[next].typ == "reasoning" || isUserMessage(ms[next]))) {
			v.add(RuleResponsesReasoningWithoutFollower, sc.off+i,
				"Item '%s' of type 'reasoning' was provided without its required following item.", m.id)
		}
		if b.storeFalse && !signedReasoning(m) {
			v.add(RuleResponsesReasoningNotPersisted, sc.off+i,
				"Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", m.id)
		}
	}
}

// responsesPairing checks that item ids are unique and that calls and
// outputs pair, over the whole input ms.
func responsesPairing(ms []*facts, sc scope, v *violations) {
	type open struct {
		index int
		typ   string
		id    string
	}
	var order []open
	pending := map[[2]string][]int{} // (call type, id) -> positions in order, unanswered
	answered := map[int]bool{}       // positions in order that got an output
	seenIDs := map[string]bool{}
	for i, m := range ms {
		if m.id != "" {
			if seenIDs[m.id] {
				v.add(RuleResponsesDuplicateItemID, sc.off+i, "Duplicate item found with id %s.", m.id)
			}
			seenIDs[m.id] = true
		}
		for _, p := range m.parts {
			switch p.kind {
			case PartCall:
				k := [2]string{m.typ, p.id}
				pending[k] = append(pending[k], len(order))
				order = append(order, open{i, m.typ, p.id})
			case PartResult:
				out := responsesOutputs[p.typ]
				k := [2]string{out[0], p.id}
				q := pending[k]
				if len(q) == 0 {
					// With previous_response_id (or a conversation) the call
					// may be stored on the server.
					if !sc.continues {
						v.add(RuleResponsesOutputWithoutCall, sc.off+i, "No tool call found for %s with %s %s.", strings.ReplaceAll(p.typ, "_", " "), out[1], p.id)
					}
					continue
				}
				answered[q[0]] = true
				pending[k] = q[1:]
			}
		}
	}
	for k, o := range order {
		if answered[k] || o.typ == "mcp_approval_request" {
			continue // the user may leave an approval request unanswered
		}
		rule := RuleResponsesCallWithoutOutput
		if o.index > sc.barrier {
			rule = RuleResponsesPendingCalls
		}
		v.add(rule, sc.off+o.index, "No tool output found for %s %s.", strings.ReplaceAll(o.typ, "_", " "), o.id)
	}
}

// signedReasoning reports a signed reasoning part in m.
func signedReasoning(m *facts) bool {
	for _, p := range m.parts {
		if p.kind == PartReasoning && p.signed {
			return true
		}
	}
	return false
}

// ---- Anthropic ------------------------------------------------------------

// turnPart is a content part of a merged turn, with its message (as an
// index into the messages given) and its block index.
type turnPart struct {
	msg int
	blk int
	p   *fpart
}

type turn struct {
	role  string
	first int // index of the first message of the turn
	last  int
	parts []turnPart
}

// mergeTurns merges consecutive same-role messages into turns, as the
// Anthropic API does.
func mergeTurns(msgs []*facts) []turn {
	var turns []turn
	for i, m := range msgs {
		if n := len(turns); n == 0 || turns[n-1].role != m.role {
			turns = append(turns, turn{role: m.role, first: i})
		}
		t := &turns[len(turns)-1]
		t.last = i
		for k := range m.parts {
			t.parts = append(t.parts, turnPart{msg: i, blk: k, p: &m.parts[k]})
		}
	}
	return turns
}

func validateAnthropic(b *Body, msgs []*facts, sc scope, v *violations) {
	o := sc.off
	for i, m := range msgs {
		if m.empty && !(i == len(msgs)-1 && sc.atEnd && m.role == "assistant") {
			v.add(RuleAnthropicEmptyContent, o+i,
				"messages.%d: all messages must have non-empty content except for the optional final assistant message", o+i)
		}
		for _, p := range m.parts {
			if p.kind == PartText && p.blank {
				v.add(RuleAnthropicEmptyText, o+i, "messages: text content blocks must be non-empty")
				break
			}
		}
	}
	turns := mergeTurns(msgs)
	if sc.atStart && len(turns) > 0 && turns[0].role != "user" {
		v.add(RuleAnthropicFirstNotUser, 0, `messages: first message must use the "user" role`)
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
			for _, tp := range tn.parts {
				p := tp.p
				switch p.kind {
				case PartCall:
					if seenUse[p.id] {
						v.add(RuleAnthropicDuplicateToolUseID, o+tp.msg, "messages.%d.content.%d: `tool_use` ids must be unique", o+tp.msg, tp.blk)
						continue
					}
					seenUse[p.id] = true
					uses = append(uses, p.id)
					if useAt < 0 {
						useAt = tp.msg
					}
				case PartResult:
					v.add(RuleAnthropicToolResultNotInUser, o+tp.msg, "messages.%d: `tool_result` blocks can only be in `user` messages", o+tp.msg)
				case PartServerCall:
					server[p.id] = true
				case PartServerResult:
					if !server[p.id] {
						v.add(RuleAnthropicServerResultWithoutUse, o+tp.msg,
							"messages.%d.content.%d: unexpected `tool_use_id` found in `%s` blocks: %s. Each `%s` block must have a corresponding `server_tool_use` block before it.",
							o+tp.msg, tp.blk, p.typ, p.id, p.typ)
					}
				case PartReasoning:
					hasThinking = true
				}
			}
			if hasThinking && tn.parts[0].p.kind != PartReasoning {
				v.add(RuleAnthropicThinkingNotFirst, o+tn.first,
					"messages.%d: If an assistant message contains any thinking blocks, the first block must be `thinking` or `redacted_thinking`. Found `%s`.",
					o+tn.first, tn.parts[0].p.typ)
			}
			if len(uses) == 0 {
				continue
			}
			if t == len(turns)-1 {
				if sc.atEnd {
					v.add(RuleAnthropicPendingCalls, o+useAt,
						"messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
						o+useAt, strings.Join(uses, ", "))
				}
				continue
			}
			next := &turns[t+1]
			lead := map[string]bool{}
			if next.role == "user" {
				for _, tp := range next.parts {
					if tp.p.kind != PartResult {
						break
					}
					lead[tp.p.id] = true
				}
			}
			if miss := missingIDs(uses, lead); len(miss) > 0 {
				v.add(RuleAnthropicToolUseWithoutResult, o+useAt,
					"messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
					o+useAt, strings.Join(miss, ", "))
			}
		case "user":
			issued := map[string]bool{}
			if t > 0 && turns[t-1].role == "assistant" {
				for _, tp := range turns[t-1].parts {
					if tp.p.kind == PartCall {
						issued[tp.p.id] = true
					}
				}
			}
			seen := map[string]bool{}
			for _, tp := range tn.parts {
				if tp.p.kind != PartResult {
					continue
				}
				if !issued[tp.p.id] {
					v.add(RuleAnthropicUnexpectedToolResult, o+tp.msg,
						"messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
						o+tp.msg, tp.blk, tp.p.id)
				} else if seen[tp.p.id] {
					v.add(RuleAnthropicDuplicateToolResult, o+tp.msg,
						"messages.%d.content.%d: each tool_use must have a single result. Found multiple `tool_result` blocks with id: %s", o+tp.msg, tp.blk, tp.p.id)
				}
				seen[tp.p.id] = true
			}
		}
	}
	// Tool references name tools the request must declare.
	if ts := sc.tools; ts != nil && ts.toolsArray {
		for i, m := range msgs {
			for _, n := range m.refs {
				if n != "" && !ts.declared[n] {
					v.add(RuleAnthropicUnknownToolReference, o+i, "Tool reference '%s' not found in available tools", n)
				}
			}
		}
	}
	if len(turns) == 0 || !sc.atEnd {
		return
	}
	enabled := b.thinking == "enabled" || b.thinking == "adaptive"
	last := &turns[len(turns)-1]
	if !enabled && last.role == "assistant" {
		for _, tp := range last.parts {
			if tp.p.kind == PartReasoning {
				v.add(RuleAnthropicThinkingWhileDisabled, o+tp.msg,
					"messages.%d.content.%d: When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`.", o+tp.msg, tp.blk)
				break
			}
		}
	}
	// Active tool loop: the body ends on a user turn that starts with tool
	// results; the assistant turn before it must start with thinking. Only
	// checked when the body carries thinking at all, since a conversation
	// begun before thinking was switched on has none to send back.
	if enabled && sc.anyThinking && len(turns) >= 2 && last.role == "user" &&
		len(last.parts) > 0 && last.parts[0].p.kind == PartResult {
		a := &turns[len(turns)-2]
		if a.role == "assistant" && len(a.parts) > 0 && a.parts[0].p.kind != PartReasoning {
			v.add(RuleAnthropicMissingThinking, o+a.first,
				"messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks).",
				o+a.first, a.parts[0].p.typ)
		}
	}
}

// ---- Gemini ---------------------------------------------------------------

// isGeminiUserRole reports a role Gemini counts as the user side.
func isGeminiUserRole(r string) bool { return r == "user" || r == "function" || r == "tool" }

func validateGemini(cs []*facts, sc scope, v *violations) {
	o := sc.off
	for i, c := range cs {
		calls, resps := int(c.ncalls), int(c.nresults)
		if i == 0 && sc.atStart && !isGeminiUserRole(c.role) && calls == 0 {
			v.add(RuleGeminiFirstNotUser, o+i, "Please ensure that multiturn requests alternate between user and model, starting with a user turn (first content should be with role 'user').")
		}
		if calls > 0 {
			if (i == 0 && sc.atStart) || (i > 0 && !isGeminiUserRole(cs[i-1].role)) {
				v.add(RuleGeminiCallTurnPosition, o+i,
					"Please ensure that function call turn comes immediately after a user turn or after a function response turn.")
			}
			switch {
			case i == len(cs)-1 && sc.atEnd:
				v.add(RuleGeminiPendingCalls, o+i,
					"Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
			case i < len(cs)-1 && cs[i+1].nresults == 0:
				v.add(RuleGeminiCallWithoutResponse, o+i,
					"Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
			}
			if sc.signedBody && o+i > sc.lastUser {
				for k, p := range c.parts {
					if p.kind != PartCall {
						continue
					}
					if !p.signed {
						v.add(RuleGeminiMissingThoughtSignature, o+i,
							"Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d.",
							p.name, k+1)
					}
					break
				}
			}
		}
		if resps > 0 {
			switch {
			case (i == 0 && sc.atStart) || (i > 0 && cs[i-1].ncalls == 0):
				v.add(RuleGeminiResponseTurnPosition, o+i,
					"Please ensure that function response turn comes immediately after a function call turn.")
			case i > 0 && !geminiResponsesMatch(cs[i-1], c):
				v.add(RuleGeminiResponseCount, o+i,
					"Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
			}
		}
	}
}

// geminiResponsesMatch compares a call turn with its response turn: equal
// counts, and when both sides carry ids, the same multiset of ids.
func geminiResponsesMatch(call, resp *facts) bool {
	if call.ncalls != resp.nresults {
		return false
	}
	ids := map[string]int{}
	noID := false
	call.eachCall(func(_ int, p *fpart) {
		if p.id == "" {
			noID = true
		}
		ids[p.id]++
	})
	if noID {
		return true
	}
	for _, p := range resp.parts {
		if p.kind != PartResult {
			continue
		}
		if p.id == "" {
			return true
		}
		ids[p.id]--
	}
	for _, n := range ids {
		if n != 0 {
			return false
		}
	}
	return true
}

// ---- Bedrock --------------------------------------------------------------

func validateBedrock(b *Body, msgs []*facts, sc scope, v *violations) {
	o := sc.off
	toolAt := -1
	for i, m := range msgs {
		if toolAt < 0 && (m.ncalls > 0 || m.nresults > 0) {
			toolAt = i
		}
		if i == 0 && sc.atStart && m.role != "user" {
			v.add(RuleBedrockFirstNotUser, o+i, "A conversation must start with a user message. Try again with a conversation that starts with a user message.")
		}
		if i > 0 && m.role == msgs[i-1].role {
			v.add(RuleBedrockNotAlternating, o+i, "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.")
		}
		for k, p := range m.parts {
			if p.kind == PartText && p.blank {
				v.add(RuleBedrockBlankText, o+i, "The text field in the ContentBlock object at messages.%d.content.%d is blank. Add text to the text field, and try again.", o+i, k)
			}
		}
		if m.ncalls > 0 {
			ids := callIDs(m)
			switch {
			case i == len(msgs)-1 && sc.atEnd:
				v.add(RuleBedrockPendingCalls, o+i, "Expected toolResult blocks at messages.%d.content for the following Ids: %s", o+i+1, strings.Join(ids, ", "))
			case i < len(msgs)-1:
				have := map[string]bool{}
				if msgs[i+1].role == "user" {
					for _, p := range msgs[i+1].parts {
						if p.kind == PartResult {
							have[p.id] = true
						}
					}
				}
				if miss := missingIDs(ids, have); len(miss) > 0 {
					v.add(RuleBedrockToolUseWithoutResult, o+i, "Expected toolResult blocks at messages.%d.content for the following Ids: %s", o+i+1, strings.Join(miss, ", "))
				}
			}
		}
		if m.nresults > 0 && (i > 0 || sc.atStart) {
			issued := map[string]bool{}
			n := 0
			if i > 0 && msgs[i-1].role == "assistant" {
				n = int(msgs[i-1].ncalls)
				msgs[i-1].eachCall(func(_ int, p *fpart) { issued[p.id] = true })
			}
			if int(m.nresults) > n {
				v.add(RuleBedrockTooManyResults, o+i, "The number of toolResult blocks at messages.%d.content exceeds the number of toolUse blocks of previous turn.", o+i)
			} else {
				for k, p := range m.parts {
					if p.kind == PartResult && !issued[p.id] {
						v.add(RuleBedrockUnexpectedToolResult, o+i, "messages.%d.content.%d: toolResult block with toolUseId %s does not match a toolUse block of the previous turn.", o+i, k, p.id)
					}
				}
			}
		}
	}
	if toolAt >= 0 && !b.hasToolConfig && sc.atStart && sc.atEnd {
		v.add(RuleBedrockMissingToolConfig, o+toolAt, "The toolConfig field must be defined when using toolUse and toolResult content blocks.")
	}
}

package wire

import "strings"

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

// Rule codes for the tools array and the tool choice. They concern the
// request outside its history, which a prune changes when it withdraws
// schemas; their violations carry index 0 unless a message is to blame.
const (
	// RuleAnthropicToolBlocksWithoutTools: the history holds tool_use or
	// tool_result blocks and the tools array is empty. A body without a
	// tools field is not reported: recorded histories often leave it out.
	RuleAnthropicToolBlocksWithoutTools = "anthropic/tool-blocks-without-tools"
	// RuleAnthropicUnknownToolChoice: tool_choice names a tool the tools
	// array does not declare.
	RuleAnthropicUnknownToolChoice = "anthropic/unknown-tool-choice"
	// RuleAnthropicUnknownToolReference: a tool_reference block in the
	// history (left by tool search) names a tool the tools array does not
	// declare. A body without a tools field is not reported, as for
	// RuleAnthropicToolBlocksWithoutTools.
	RuleAnthropicUnknownToolReference = "anthropic/unknown-tool-reference"
)

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

// validateAnthropic checks the messages msgs, merged into turns as the
// API merges them.
func validateAnthropic(b *Body, msgs []*facts, sc scope, v *violations) {
	anthropicContent(msgs, sc, v)
	turns := mergeTurns(msgs)
	if sc.atStart && len(turns) > 0 && turns[0].role != "user" {
		v.add(RuleAnthropicFirstNotUser, 0, `messages: first message must use the "user" role`)
	}
	for t := range turns {
		switch turns[t].role {
		case "assistant":
			anthropicAssistantTurn(turns, t, sc, v)
		case "user":
			anthropicUserTurn(turns, t, sc, v)
		}
	}
	// Tool references name tools the request must declare.
	if ts := sc.tools; ts != nil {
		for i, m := range msgs {
			*v = anthropicToolRefs(ts, sc.off+i, m.refs, *v)
		}
	}
	if len(turns) > 0 && sc.atEnd {
		anthropicThinking(b, turns, sc, v)
	}
}

// anthropicContent checks that messages have content, but for a final
// assistant message, and that text blocks are not blank.
func anthropicContent(msgs []*facts, sc scope, v *violations) {
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
}

// anthropicAssistantTurn checks assistant turn t: unique tool_use ids,
// no tool results, server results after their server call, thinking
// first, and the results of its tool_use blocks at the start of the turn
// after it.
func anthropicAssistantTurn(turns []turn, t int, sc scope, v *violations) {
	o, tn := sc.off, &turns[t]
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
		return
	}
	if t == len(turns)-1 {
		if sc.atEnd {
			v.add(RuleAnthropicPendingCalls, o+useAt,
				"messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
				o+useAt, strings.Join(uses, ", "))
		}
		return
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
}

// anthropicUserTurn checks that the tool results of user turn t answer,
// once each, the tool_use blocks of the assistant turn before it.
func anthropicUserTurn(turns []turn, t int, sc scope, v *violations) {
	o := sc.off
	issued := map[string]bool{}
	if t > 0 && turns[t-1].role == "assistant" {
		for _, tp := range turns[t-1].parts {
			if tp.p.kind == PartCall {
				issued[tp.p.id] = true
			}
		}
	}
	seen := map[string]bool{}
	for _, tp := range turns[t].parts {
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

// anthropicThinking checks the last turns against the thinking setting:
// no thinking in a final assistant turn when thinking is off, and, when
// it is on, thinking first in the assistant turn of the active tool loop.
func anthropicThinking(b *Body, turns []turn, sc scope, v *violations) {
	o := sc.off
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

// anthropicToolFields checks that a tool_choice of type tool names a
// tool declared, and reads whether the tools field is an array, and an
// empty one, for the rules of tool blocks and tool references.
func anthropicToolFields(b *Body, ts *toolState, v *violations) {
	items, ok := asArray(b.field("tools"))
	ts.toolsArray = ok
	ts.emptyTools = ok && len(items) == 0
	choice := b.field("tool_choice")
	if str(path(choice, "type")) == "tool" {
		for _, n := range unknownTools(ts.declared, str(path(choice, "name"))) {
			v.add(RuleAnthropicUnknownToolChoice, 0, "tool_choice: tool '%s' is not among the tools defined in the request.", n)
		}
	}
}

// anthropicToolBlocks reports the tool blocks of message i in a body whose
// tools array is empty. Only an empty tools array is reported: a body
// without one is taken as recorded without its tools (Claude Code session
// logs keep none), and a prune never takes the field away.
func anthropicToolBlocks(i int, v violations) violations {
	v.add(RuleAnthropicToolBlocksWithoutTools, i, "Requests which include `tool_use` or `tool_result` blocks must define tools.")
	return v
}

// anthropicToolRefs reports the tools that the tool_reference blocks of
// message i name and the tools array does not declare.
func anthropicToolRefs(ts *toolState, i int, names []string, v violations) violations {
	if !ts.toolsArray {
		return v
	}
	for _, n := range names {
		if n != "" && !ts.declared[n] {
			v.add(RuleAnthropicUnknownToolReference, i, "Tool reference '%s' not found in available tools", n)
		}
	}
	return v
}

// wholeAnthropic reports an edit that changes whether the body carries
// thinking, or, with an empty tools array, tool blocks.
func wholeAnthropic(_ *Body, gb, ga globals, ts *toolState) bool {
	return (gb.thinking > 0) != (ga.thinking > 0) ||
		(ts.emptyTools && (gb.toolBlocks > 0) != (ga.toolBlocks > 0))
}

package wire

import "strings"

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

// Rule codes for the tools array and the tool choice. They concern the
// request outside its history, which a prune changes when it withdraws
// schemas; their violations carry index 0 unless a message is to blame.
const (
	// RuleBedrockEmptyTools: toolConfig.tools is empty.
	RuleBedrockEmptyTools = "bedrock/empty-tools"
	// RuleBedrockUnknownToolChoice: toolConfig.toolChoice names a tool
	// toolConfig.tools does not declare.
	RuleBedrockUnknownToolChoice = "bedrock/unknown-tool-choice"
)

// validateBedrock checks the messages msgs: roles alternating from a user
// message, each toolUse answered in the message after it, no blank text,
// and a toolConfig when tool blocks are present.
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
		// A summary after a user message is written inside it (see
		// bedrockSummary): the two are one message.
		if i > 0 && m.role == msgs[i-1].role && !joined(m, msgs[i-1]) {
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

// bedrockToolFields checks that toolConfig.tools is not empty and that
// toolConfig.toolChoice names a tool declared.
func bedrockToolFields(b *Body, ts *toolState, v *violations) {
	cfg := b.field("toolConfig")
	if isNull(cfg) {
		return
	}
	if items, ok := asArray(path(cfg, "tools")); ok && len(items) == 0 {
		v.add(RuleBedrockEmptyTools, 0, "1 validation error detected: Value at 'toolConfig.tools' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	for _, n := range unknownTools(ts.declared, str(path(cfg, "toolChoice", "tool", "name"))) {
		v.add(RuleBedrockUnknownToolChoice, 0, "toolConfig.toolChoice: tool %s is not defined in toolConfig.tools.", n)
	}
}

// wholeBedrock reports an edit that changes whether a body without a
// toolConfig holds tool blocks.
func wholeBedrock(b *Body, gb, ga globals, _ *toolState) bool {
	return !b.hasToolConfig && (gb.toolBlocks > 0) != (ga.toolBlocks > 0)
}

package wire

import (
	"strings"
	"testing"
)

// ruleCase is a small body that breaks one rule. A few rules cannot be
// broken alone; their companions are listed in also.
type ruleCase struct {
	name  string
	d     Dialect
	body  string
	rule  string // "" for a clean body
	index int
	want  string // substring of the violation message
	also  []string
}

var ruleCases = []ruleCase{
	// ---- OpenAI Chat ----
	{name: "clean", d: OpenAIChat, body: `{"model":"gpt-4o","messages":[
		{"role":"system","content":"be brief"},
		{"role":"user","content":"weather in Paris and Rome?"},
		{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_a","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},
			{"id":"call_b","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Rome\"}"}}]},
		{"role":"tool","tool_call_id":"call_b","content":"rain"},
		{"role":"tool","tool_call_id":"call_a","content":"sun"},
		{"role":"assistant","content":"Paris sun, Rome rain."},
		{"role":"user","content":"thanks"}],"tools":[{"type":"function","function":{"name":"weather"}}]}`},
	{name: "missing response", d: OpenAIChat, rule: RuleChatToolCallsWithoutResponse, index: 1,
		want: "The following tool_call_ids did not have response messages: call_b",
		body: `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"call_b","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call_a","content":"ok"},
		{"role":"user","content":"next"}]}`},
	{name: "orphan tool message", d: OpenAIChat, rule: RuleChatOrphanToolMessage, index: 1,
		want: "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
		body: `{"messages":[{"role":"user","content":"go"},{"role":"tool","tool_call_id":"call_a","content":"ok"}]}`},
	{name: "unknown tool_call_id", d: OpenAIChat, rule: RuleChatUnknownToolCallID, index: 3,
		want: "'tool_call_id' of 'call_z' not found in 'tool_calls' of previous message",
		body: `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call_a","content":"ok"},
		{"role":"tool","tool_call_id":"call_z","content":"ok"}]}`},
	{name: "duplicate tool response", d: OpenAIChat, rule: RuleChatDuplicateToolResponse, index: 3,
		want: "Duplicate value for 'tool_call_id' of 'call_a', in messages[2] and messages[3].",
		body: `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call_a","content":"ok"},
		{"role":"tool","tool_call_id":"call_a","content":"again"}]}`},
	{name: "function without name", d: OpenAIChat, rule: RuleChatFunctionWithoutName, index: 1,
		want: "messages with role 'function' must have a 'name'",
		body: `{"messages":[{"role":"user","content":"go"},{"role":"function","content":"42"}]}`},
	{name: "pending", d: OpenAIChat, rule: RuleChatPendingCalls, index: 1,
		want: "did not have response messages: call_a",
		body: `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`},
	{name: "swe-agent tool_call_ids", d: OpenAIChat, body: `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":"x","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_ids":["call_a"],"content":"ok"}]}`},

	// ---- OpenAI Responses ----
	{name: "clean", d: OpenAIResponses, body: `{"model":"gpt-5","input":[
		{"role":"user","content":"weather?"},
		{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"},
		{"type":"function_call","id":"fc_1","call_id":"call_1","name":"weather","arguments":"{\"city\":\"Paris\"}"},
		{"type":"function_call_output","call_id":"call_1","output":"sun"},
		{"type":"message","role":"assistant","id":"msg_1","content":[{"type":"output_text","text":"Sun."}]},
		{"role":"user","content":[{"type":"input_text","text":"thanks"}]}],"store":false}`},
	{name: "call without output", d: OpenAIResponses, rule: RuleResponsesCallWithoutOutput, index: 1,
		want: "No tool output found for function call call_1.",
		body: `{"input":[{"role":"user","content":"go"},
		{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"},
		{"role":"user","content":"next"}]}`},
	{name: "output without call", d: OpenAIResponses, rule: RuleResponsesOutputWithoutCall, index: 1,
		want: "No tool call found for function call output with call_id call_9.",
		body: `{"input":[{"role":"user","content":"go"},{"type":"function_call_output","call_id":"call_9","output":"x"}]}`},
	{name: "output before call", d: OpenAIResponses, rule: RuleResponsesOutputWithoutCall, index: 1,
		want: "No tool call found for function call output with call_id call_1.",
		also: []string{RuleResponsesPendingCalls},
		body: `{"input":[{"role":"user","content":"go"},{"type":"function_call_output","call_id":"call_1","output":"x"},
		{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"}]}`},
	{name: "reasoning without following item", d: OpenAIResponses, rule: RuleResponsesReasoningWithoutFollower, index: 1,
		want: "Item 'rs_1' of type 'reasoning' was provided without its required following item.",
		body: `{"input":[{"role":"user","content":"go"},{"type":"reasoning","id":"rs_1","summary":[]},{"role":"user","content":"next"}]}`},
	{name: "reasoning last", d: OpenAIResponses, rule: RuleResponsesReasoningWithoutFollower, index: 1,
		want: "of type 'reasoning' was provided without its required following item",
		body: `{"input":[{"role":"user","content":"go"},{"type":"reasoning","id":"rs_1","summary":[]}]}`},
	{name: "duplicate item id", d: OpenAIResponses, rule: RuleResponsesDuplicateItemID, index: 3,
		want: "Duplicate item found with id msg_1",
		body: `{"input":[{"role":"user","content":"a"},{"type":"message","role":"assistant","id":"msg_1","content":"x"},
		{"role":"user","content":"b"},{"type":"message","role":"assistant","id":"msg_1","content":"x"}]}`},
	{name: "reasoning not persisted", d: OpenAIResponses, rule: RuleResponsesReasoningNotPersisted, index: 1,
		want: "Items are not persisted when `store` is set to false",
		body: `{"store":false,"input":[{"role":"user","content":"a"},{"type":"reasoning","id":"rs_1","summary":[]},
		{"type":"message","role":"assistant","content":"x"}]}`},
	{name: "pending", d: OpenAIResponses, rule: RuleResponsesPendingCalls, index: 2,
		want: "No tool output found for function call call_2.",
		body: `{"input":[{"role":"user","content":"go"},{"type":"reasoning","id":"rs_1","summary":[]},
		{"type":"function_call","call_id":"call_2","name":"f","arguments":"{}"}]}`},
	{name: "string input", d: OpenAIResponses, body: `{"input":"hello","model":"gpt-5"}`},

	// ---- Anthropic ----
	{name: "clean", d: Anthropic, body: `{"model":"claude","max_tokens":1024,"system":"be brief",
		"thinking":{"type":"enabled","budget_tokens":1024},"messages":[
		{"role":"user","content":"weather in Paris and Rome?"},
		{"role":"assistant","content":[{"type":"thinking","thinking":"two calls","signature":"sig"},
			{"type":"text","text":"Checking."},
			{"type":"tool_use","id":"toolu_a","name":"weather","input":{"city":"Paris"}},
			{"type":"tool_use","id":"toolu_b","name":"weather","input":{"city":"Rome"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_b","content":"rain"},
			{"type":"tool_result","tool_use_id":"toolu_a","content":[{"type":"text","text":"sun"}]},
			{"type":"text","text":"also search the news"}]},
		{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"news"}},
			{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},
			{"type":"text","text":"Paris sun, Rome rain, no news."}]},
		{"role":"user","content":"thanks"}],"tools":[{"name":"weather","input_schema":{"type":"object"}}]}`},
	{name: "tool_use without result", d: Anthropic, rule: RuleAnthropicToolUseWithoutResult, index: 1,
		want: "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_a",
		body: `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_a","name":"f","input":{}}]},
		{"role":"user","content":"next"}]}`},
	{name: "text merged before result (A5)", d: Anthropic, rule: RuleAnthropicToolUseWithoutResult, index: 1,
		want: "without `tool_result` blocks immediately after: toolu_a",
		body: `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_a","name":"f","input":{}}]},
		{"role":"user","content":"interjection"},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"ok"}]}]}`},
	{name: "unexpected tool_result", d: Anthropic, rule: RuleAnthropicUnexpectedToolResult, index: 2,
		want: "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x",
		body: `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"sure"},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_x","content":"ok"}]}]}`},
	{name: "history starts with tool_result", d: Anthropic, rule: RuleAnthropicUnexpectedToolResult, index: 0,
		want: "unexpected `tool_use_id` found in `tool_result` blocks: toolu_x",
		body: `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_x","content":"ok"}]}]}`},
	{name: "duplicate tool_result", d: Anthropic, rule: RuleAnthropicDuplicateToolResult, index: 2,
		want: "each tool_use must have a single result. Found multiple `tool_result` blocks with id: toolu_a",
		body: `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_a","name":"f","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"1"},{"type":"tool_result","tool_use_id":"toolu_a","content":"2"}]}]}`},
	{name: "duplicate tool_use id", d: Anthropic, rule: RuleAnthropicDuplicateToolUseID, index: 1,
		want: "`tool_use` ids must be unique",
		body: `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_a","name":"f","input":{}},{"type":"tool_use","id":"toolu_a","name":"f","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"1"}]}]}`},
	{name: "tool_result in assistant", d: Anthropic, rule: RuleAnthropicToolResultNotInUser, index: 1,
		want: "`tool_result` blocks can only be in `user` messages",
		body: `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"text","text":"hm"},{"type":"tool_result","tool_use_id":"toolu_a","content":"1"}]}]}`},
	{name: "empty content", d: Anthropic, rule: RuleAnthropicEmptyContent, index: 1,
		want: "all messages must have non-empty content except for the optional final assistant message",
		body: `{"max_tokens":1024,"system":"s","messages":[{"role":"user","content":"go"},{"role":"assistant","content":[]},{"role":"user","content":"again"}]}`},
	{name: "empty final assistant is fine", d: Anthropic,
		body: `{"max_tokens":1024,"system":"s","messages":[{"role":"user","content":"go"},{"role":"assistant","content":""}]}`},
	{name: "blank text block", d: Anthropic, rule: RuleAnthropicEmptyText, index: 0,
		want: "text content blocks must be non-empty",
		body: `{"max_tokens":1024,"system":"s","messages":[{"role":"user","content":[{"type":"text","text":" \n"},{"type":"text","text":"go"}]}]}`},
	{name: "first not user", d: Anthropic, rule: RuleAnthropicFirstNotUser, index: 0,
		want: `first message must use the "user" role`,
		body: `{"max_tokens":1024,"system":"s","messages":[{"role":"assistant","content":"hello"},{"role":"user","content":"go"}]}`},
	{name: "thinking not first", d: Anthropic, rule: RuleAnthropicThinkingNotFirst, index: 1,
		want: "the first block must be `thinking` or `redacted_thinking`. Found `text`.",
		body: `{"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"text","text":"hm"},{"type":"thinking","thinking":"t","signature":"s"}]},
		{"role":"user","content":"next"}]}`},
	{name: "missing thinking in tool loop", d: Anthropic, rule: RuleAnthropicMissingThinking, index: 3,
		want: "Expected `thinking` or `redacted_thinking`, but found `tool_use`",
		body: `{"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"hi"}]},
		{"role":"user","content":"now call"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_a","name":"f","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"1"}]}]}`},
	{name: "thinking while disabled", d: Anthropic, rule: RuleAnthropicThinkingWhileDisabled, index: 1,
		want: "When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`",
		body: `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"hi"}]}]}`},
	{name: "server result without use", d: Anthropic, rule: RuleAnthropicServerResultWithoutUse, index: 1,
		want: "unexpected `tool_use_id` found in `web_search_tool_result` blocks: srvtoolu_1. Each `web_search_tool_result` block must have a corresponding `server_tool_use` block before it.",
		body: `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},{"type":"text","text":"x"}]},
		{"role":"user","content":"next"}]}`},
	{name: "pending", d: Anthropic, rule: RuleAnthropicPendingCalls, index: 1,
		want: "without `tool_result` blocks immediately after: toolu_a, toolu_b",
		body: `{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"tool_use","id":"toolu_a","name":"f","input":{}},{"type":"tool_use","id":"toolu_b","name":"f","input":{}}]}]}`},

	// ---- Gemini ----
	{name: "clean", d: Gemini, body: `{"systemInstruction":{"parts":[{"text":"be brief"}]},"contents":[
		{"role":"user","parts":[{"text":"weather in Paris and Rome?"}]},
		{"role":"model","parts":[{"functionCall":{"name":"weather","args":{"city":"Paris"}},"thoughtSignature":"c2ln"},
			{"functionCall":{"name":"weather","args":{"city":"Rome"}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"weather","response":{"result":"sun"}}},
			{"functionResponse":{"name":"weather","response":{"result":"rain"}}}]},
		{"role":"model","parts":[{"text":"Paris sun, Rome rain."}]}],
		"tools":[{"functionDeclarations":[{"name":"weather"}]}]}`},
	{name: "call turn after model turn", d: Gemini, rule: RuleGeminiCallTurnPosition, index: 2,
		want: "function call turn comes immediately after a user turn or after a function response turn",
		body: `{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"text":"ok"}]},
		{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`},
	{name: "call turn first", d: Gemini, rule: RuleGeminiCallTurnPosition, index: 0,
		want: "function call turn comes immediately after a user turn or after a function response turn",
		body: `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`},
	{name: "response turn not after call", d: Gemini, rule: RuleGeminiResponseTurnPosition, index: 2,
		want: "function response turn comes immediately after a function call turn",
		body: `{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"text":"ok"}]},
		{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`},
	{name: "response count", d: Gemini, rule: RuleGeminiResponseCount, index: 2,
		want: "number of function response parts is equal to the number of function call parts",
		body: `{"contents":[{"role":"user","parts":[{"text":"go"}]},
		{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}},{"functionCall":{"name":"g","args":{}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`},
	{name: "response ids differ", d: Gemini, rule: RuleGeminiResponseCount, index: 2,
		want: "number of function response parts is equal to the number of function call parts",
		body: `{"contents":[{"role":"user","parts":[{"text":"go"}]},
		{"role":"model","parts":[{"functionCall":{"id":"c1","name":"f","args":{}}}]},
		{"role":"user","parts":[{"functionResponse":{"id":"c2","name":"f","response":{}}}]}]}`},
	{name: "call without response", d: Gemini, rule: RuleGeminiCallWithoutResponse, index: 1,
		want: "number of function response parts is equal to the number of function call parts",
		body: `{"contents":[{"role":"user","parts":[{"text":"go"}]},
		{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},
		{"role":"user","parts":[{"text":"never mind"}]}]}`},
	{name: "missing thought signature", d: Gemini, rule: RuleGeminiMissingThoughtSignature, index: 5,
		want: "Function call is missing a thought_signature in functionCall parts",
		body: `{"contents":[{"role":"user","parts":[{"text":"q1"}]},
		{"role":"model","parts":[{"functionCall":{"name":"f","args":{}},"thoughtSignature":"c2ln"}]},
		{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]},
		{"role":"model","parts":[{"text":"a1"}]},
		{"role":"user","parts":[{"text":"q2"}]},
		{"role":"model","parts":[{"functionCall":{"name":"g","args":{}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"g","response":{}}}]}]}`},
	{name: "old turns need no signature", d: Gemini, body: `{"contents":[{"role":"user","parts":[{"text":"q1"}]},
		{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]},
		{"role":"model","parts":[{"text":"a1"}]},
		{"role":"user","parts":[{"text":"q2"}]},
		{"role":"model","parts":[{"functionCall":{"name":"g","args":{}},"thoughtSignature":"c2ln"}]},
		{"role":"user","parts":[{"functionResponse":{"name":"g","response":{}}}]}]}`},
	{name: "first not user", d: Gemini, rule: RuleGeminiFirstNotUser, index: 0,
		want: "first content should be with role 'user'",
		body: `{"contents":[{"role":"model","parts":[{"text":"hello"}]},{"role":"user","parts":[{"text":"go"}]}]}`},
	{name: "pending", d: Gemini, rule: RuleGeminiPendingCalls, index: 1,
		want: "number of function response parts",
		body: `{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]}]}`},

	// ---- Bedrock ----
	{name: "clean", d: Bedrock, body: `{"modelId":"x","system":[{"text":"be brief"}],"messages":[
		{"role":"user","content":[{"text":"weather?"}]},
		{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"call","signature":"s"}}},{"text":"Checking."},
			{"toolUse":{"toolUseId":"tooluse_a","name":"weather","input":{"city":"Paris"}}}]},
		{"role":"user","content":[{"toolResult":{"toolUseId":"tooluse_a","content":[{"json":{"w":"sun"}}],"status":"success"}}]},
		{"role":"assistant","content":[{"text":"Sun."}]}],
		"toolConfig":{"tools":[{"toolSpec":{"name":"weather","description":"w","inputSchema":{"json":{"type":"object"}}}}]}}`},
	{name: "not alternating", d: Bedrock, rule: RuleBedrockNotAlternating, index: 1,
		want: "A conversation must alternate between user and assistant roles",
		body: `{"messages":[{"role":"user","content":[{"text":"a"}]},{"role":"user","content":[{"text":"b"}]}]}`},
	{name: "first not user", d: Bedrock, rule: RuleBedrockFirstNotUser, index: 0,
		want: "A conversation must start with a user message",
		body: `{"messages":[{"role":"assistant","content":[{"text":"a"}]},{"role":"user","content":[{"text":"b"}]}]}`},
	{name: "tool use without result", d: Bedrock, rule: RuleBedrockToolUseWithoutResult, index: 1,
		want: "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_a",
		body: `{"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object"}}}}]},"messages":[{"role":"user","content":[{"text":"a"}]},
		{"role":"assistant","content":[{"toolUse":{"toolUseId":"tooluse_a","name":"f","input":{}}}]},
		{"role":"user","content":[{"text":"b"}]}]}`},
	{name: "too many results", d: Bedrock, rule: RuleBedrockTooManyResults, index: 2,
		want: "The number of toolResult blocks at messages.2.content exceeds the number of toolUse blocks of previous turn.",
		body: `{"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object"}}}}]},"messages":[{"role":"user","content":[{"text":"a"}]},
		{"role":"assistant","content":[{"toolUse":{"toolUseId":"tooluse_a","name":"f","input":{}}}]},
		{"role":"user","content":[{"toolResult":{"toolUseId":"tooluse_a","content":[{"text":"1"}]}},{"toolResult":{"toolUseId":"tooluse_b","content":[{"text":"2"}]}}]}]}`},
	{name: "unexpected result", d: Bedrock, rule: RuleBedrockUnexpectedToolResult, index: 2,
		want: "toolUseId tooluse_z does not match a toolUse block of the previous turn",
		also: []string{RuleBedrockToolUseWithoutResult},
		body: `{"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object"}}}}]},"messages":[{"role":"user","content":[{"text":"a"}]},
		{"role":"assistant","content":[{"toolUse":{"toolUseId":"tooluse_a","name":"f","input":{}}}]},
		{"role":"user","content":[{"toolResult":{"toolUseId":"tooluse_z","content":[{"text":"1"}]}}]}]}`},
	{name: "missing toolConfig", d: Bedrock, rule: RuleBedrockMissingToolConfig, index: 1,
		want: "The toolConfig field must be defined when using toolUse and toolResult content blocks.",
		body: `{"messages":[{"role":"user","content":[{"text":"a"}]},
		{"role":"assistant","content":[{"toolUse":{"toolUseId":"tooluse_a","name":"f","input":{}}}]},
		{"role":"user","content":[{"toolResult":{"toolUseId":"tooluse_a","content":[{"text":"1"}]}}]}]}`},
	{name: "blank text", d: Bedrock, rule: RuleBedrockBlankText, index: 0,
		want: "The text field in the ContentBlock object at messages.0.content.1 is blank. Add text to the text field, and try again.",
		body: `{"messages":[{"role":"user","content":[{"text":"a"},{"text":"  "}]}]}`},
	{name: "pending", d: Bedrock, rule: RuleBedrockPendingCalls, index: 1,
		want: "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_a",
		body: `{"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object"}}}}]},"messages":[{"role":"user","content":[{"text":"a"}]},
		{"role":"assistant","content":[{"toolUse":{"toolUseId":"tooluse_a","name":"f","input":{}}}]}]}`},

	// ---- Tools arrays and tool choices ----
	{name: "chat empty tools", d: OpenAIChat, rule: RuleChatEmptyTools, index: 0,
		want: "Invalid 'tools': empty array.",
		body: `{"tools":[],"messages":[{"role":"user","content":"go"}]}`},
	{name: "chat tool choice without tools", d: OpenAIChat, rule: RuleChatToolChoiceWithoutTools, index: 0,
		want: "'tool_choice' is only allowed when 'tools' are specified",
		body: `{"tool_choice":"auto","messages":[{"role":"user","content":"go"}]}`},
	{name: "chat unknown tool choice", d: OpenAIChat, rule: RuleChatUnknownToolChoice, index: 0,
		want: "no tool named 'g'",
		body: `{"tool_choice":{"type":"function","function":{"name":"g"}},"tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"go"}]}`},
	{name: "chat unknown function_call", d: OpenAIChat, rule: RuleChatUnknownFunctionCall, index: 0,
		want: "no function named 'g'",
		body: `{"function_call":{"name":"g"},"functions":[{"name":"f"}],"messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"}},{"role":"function","name":"f","content":"ok"}]}`},
	{name: "chat legacy function calling", d: OpenAIChat,
		body: `{"function_call":"auto","functions":[{"name":"f"}],"messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"}},{"role":"function","name":"f","content":"ok"},{"role":"assistant","content":"done"}]}`},
	{name: "chat empty functions", d: OpenAIChat, rule: RuleChatEmptyTools, index: 0,
		want: "Invalid 'functions': empty array",
		body: `{"functions":[],"messages":[{"role":"user","content":"go"},{"role":"function","name":"f","content":"ok"}]}`},
	{name: "chat allowed tools", d: OpenAIChat,
		body: `{"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"f"}}]}},"tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"go"}]}`},
	{name: "responses unknown tool choice", d: OpenAIResponses, rule: RuleResponsesUnknownToolChoice, index: 0,
		want: "no tool named 'g'",
		body: `{"tool_choice":{"type":"function","name":"g"},"tools":[{"type":"function","name":"f"}],"input":[{"role":"user","content":"go"}]}`},
	{name: "responses empty tools", d: OpenAIResponses,
		body: `{"tool_choice":"auto","tools":[],"input":[{"role":"user","content":"go"}]}`},
	{name: "anthropic tool blocks without tools", d: Anthropic, rule: RuleAnthropicToolBlocksWithoutTools, index: 1,
		want: "Requests which include `tool_use` or `tool_result` blocks must define tools.",
		body: `{"tools":[],"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`},
	{name: "anthropic unknown tool reference", d: Anthropic, rule: RuleAnthropicUnknownToolReference, index: 1,
		want: "Tool reference 'g' not found in available tools",
		body: `{"tools":[{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"}],"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_regex","input":{"query":"g"}},
		{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"g"}]}}]}]}`},
	{name: "anthropic unknown tool choice", d: Anthropic, rule: RuleAnthropicUnknownToolChoice, index: 0,
		want: "tool 'g' is not among the tools",
		body: `{"tool_choice":{"type":"tool","name":"g"},"tools":[{"name":"f","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"go"}]}`},
	{name: "gemini unknown allowed function", d: Gemini, rule: RuleGeminiUnknownAllowedFunction, index: 0,
		want: "function 'g' is not declared",
		body: `{"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f","g"]}},"tools":[{"functionDeclarations":[{"name":"f"}]}],"contents":[{"role":"user","parts":[{"text":"go"}]}]}`},
	{name: "gemini snake case tool config", d: Gemini, rule: RuleGeminiUnknownAllowedFunction, index: 0,
		want: "function 'g' is not declared",
		body: `{"tool_config":{"function_calling_config":{"mode":"ANY","allowed_function_names":["g"]}},"tools":[{"function_declarations":[{"name":"f"}]}],"contents":[{"role":"user","parts":[{"text":"go"}]}]}`},
	{name: "bedrock empty tools", d: Bedrock, rule: RuleBedrockEmptyTools, index: 0,
		want: "Value at 'toolConfig.tools' failed to satisfy constraint",
		body: `{"toolConfig":{"tools":[]},"messages":[{"role":"user","content":[{"text":"a"}]}]}`},
	{name: "bedrock unknown tool choice", d: Bedrock, rule: RuleBedrockUnknownToolChoice, index: 0,
		want: "tool g is not defined",
		body: `{"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{}}}}],"toolChoice":{"tool":{"name":"g"}}},"messages":[{"role":"user","content":[{"text":"a"}]}]}`},

	// ---- Empty histories ----
	{name: "empty", d: OpenAIChat, rule: RuleChatEmptyMessages, want: "Expected an array with minimum length 1",
		body: `{"model":"gpt-4o","messages":[]}`},
	{name: "empty", d: OpenAIResponses, rule: RuleResponsesEmptyInput, want: "at least one item is required",
		body: `{"model":"gpt-5","input":[]}`},
	{name: "empty", d: Anthropic, rule: RuleAnthropicEmptyMessages, want: "messages: at least one message is required",
		body: `{"model":"claude","max_tokens":9,"system":"s","messages":[]}`},
	{name: "empty", d: Gemini, rule: RuleGeminiEmptyContents, want: "contents is not specified",
		body: `{"contents":[],"systemInstruction":{"parts":[{"text":"s"}]}}`},
	{name: "empty", d: Bedrock, rule: RuleBedrockEmptyMessages, want: "must start with a user message",
		body: `{"inferenceConfig":{"maxTokens":9},"messages":[]}`},
}

func TestRules(t *testing.T) {
	for _, c := range ruleCases {
		t.Run(string(c.d)+"/"+c.name, func(t *testing.T) {
			vs, err := Validate([]byte(c.body), c.d)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			var found bool
			for _, v := range vs {
				switch {
				case v.Rule == c.rule && !found:
					found = true
					if v.Index != c.index {
						t.Errorf("%s at index %d, want %d", v.Rule, v.Index, c.index)
					}
					if !strings.Contains(v.Message, c.want) {
						t.Errorf("message %q does not contain %q", v.Message, c.want)
					}
				case contains(c.also, v.Rule):
				default:
					t.Errorf("unexpected violation %v", v)
				}
			}
			if c.rule != "" && !found {
				t.Errorf("no %s violation; got %v", c.rule, vs)
			}
			// Every table body round-trips and is detected as its dialect.
			if d, err := Detect([]byte(c.body)); err != nil || d != c.d {
				t.Errorf("Detect = %q, %v; want %s", d, err, c.d)
			}
			b, err := Read([]byte(c.body), c.d)
			if err != nil {
				t.Fatal(err)
			}
			b.dirty = true
			out, err := b.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, []byte(c.body), out) {
				t.Errorf("round trip changed the body:\n%s", out)
			}
		})
	}
}

// TestRuleCoverage makes sure every rule code has a table case.
func TestRuleCoverage(t *testing.T) {
	all := []string{
		RuleChatToolCallsWithoutResponse, RuleChatOrphanToolMessage, RuleChatUnknownToolCallID,
		RuleChatFunctionWithoutName, RuleChatPendingCalls, RuleChatDuplicateToolResponse,
		RuleResponsesCallWithoutOutput, RuleResponsesOutputWithoutCall, RuleResponsesReasoningWithoutFollower,
		RuleResponsesDuplicateItemID, RuleResponsesReasoningNotPersisted, RuleResponsesPendingCalls,
		RuleAnthropicToolUseWithoutResult, RuleAnthropicUnexpectedToolResult, RuleAnthropicDuplicateToolResult,
		RuleAnthropicDuplicateToolUseID, RuleAnthropicToolResultNotInUser, RuleAnthropicEmptyContent,
		RuleAnthropicEmptyText, RuleAnthropicFirstNotUser, RuleAnthropicThinkingNotFirst,
		RuleAnthropicMissingThinking, RuleAnthropicThinkingWhileDisabled, RuleAnthropicServerResultWithoutUse,
		RuleAnthropicPendingCalls,
		RuleGeminiCallTurnPosition, RuleGeminiResponseTurnPosition, RuleGeminiResponseCount,
		RuleGeminiCallWithoutResponse, RuleGeminiMissingThoughtSignature, RuleGeminiFirstNotUser,
		RuleGeminiPendingCalls,
		RuleBedrockNotAlternating, RuleBedrockFirstNotUser, RuleBedrockToolUseWithoutResult,
		RuleBedrockTooManyResults, RuleBedrockUnexpectedToolResult, RuleBedrockMissingToolConfig,
		RuleBedrockBlankText, RuleBedrockPendingCalls,
		RuleChatEmptyMessages, RuleResponsesEmptyInput, RuleAnthropicEmptyMessages,
		RuleGeminiEmptyContents, RuleBedrockEmptyMessages,
		RuleChatEmptyTools, RuleChatToolChoiceWithoutTools, RuleChatUnknownToolChoice, RuleChatUnknownFunctionCall,
		RuleResponsesUnknownToolChoice, RuleAnthropicToolBlocksWithoutTools, RuleAnthropicUnknownToolChoice,
		RuleAnthropicUnknownToolReference, RuleGeminiUnknownAllowedFunction, RuleBedrockEmptyTools, RuleBedrockUnknownToolChoice,
	}
	covered := map[string]bool{}
	clean := map[Dialect]bool{}
	for _, c := range ruleCases {
		covered[c.rule] = true
		if c.rule == "" {
			clean[c.d] = true
		}
	}
	for _, r := range all {
		if !covered[r] {
			t.Errorf("no table case for %s", r)
		}
		d := Dialect(r[:strings.IndexByte(r, '/')])
		if _, ok := d.messagesKey(); !ok {
			t.Errorf("rule %s does not start with a dialect", r)
		}
	}
	for _, d := range Dialects {
		if !clean[d] {
			t.Errorf("no clean body for %s", d)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

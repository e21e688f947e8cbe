package wire

import "encoding/json"

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
	// RuleResponsesUnknownToolChoice: tool_choice names a function the
	// tools array does not declare.
	RuleResponsesUnknownToolChoice = "openai-responses/unknown-tool-choice"
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
	// RuleGeminiUnknownAllowedFunction: the function calling config allows
	// a function no functionDeclarations entry declares.
	RuleGeminiUnknownAllowedFunction = "gemini/unknown-allowed-function"
	// RuleBedrockEmptyTools: toolConfig.tools is empty.
	RuleBedrockEmptyTools = "bedrock/empty-tools"
	// RuleBedrockUnknownToolChoice: toolConfig.toolChoice names a tool
	// toolConfig.tools does not declare.
	RuleBedrockUnknownToolChoice = "bedrock/unknown-tool-choice"
)

// field returns a top-level field of the body, edits included.
func (b *Body) field(key string) json.RawMessage {
	if v, ok := b.fields[key]; ok {
		return v
	}
	if b.top == nil {
		return nil
	}
	return b.top.fields[key]
}

// setField replaces (or adds) a top-level field of the body; Marshal
// writes it in place of the one read.
func (b *Body) setField(key string, v json.RawMessage) {
	if b.fields == nil {
		b.fields = map[string]json.RawMessage{}
	}
	b.fields[key] = v
}

// path follows object keys from raw; any missing step gives nil.
func path(raw json.RawMessage, keys ...string) json.RawMessage {
	for _, k := range keys {
		obj, ok := asObject(raw)
		if !ok {
			return nil
		}
		raw = obj[k]
	}
	return raw
}

// firstPath is path over several spellings of the same field.
func firstPath(raw json.RawMessage, paths ...[]string) json.RawMessage {
	for _, p := range paths {
		if v := path(raw, p...); !isNull(v) {
			return v
		}
	}
	return nil
}

func str(raw json.RawMessage) string {
	s, _ := asString(raw)
	return s
}

// toolState is what the rules of the tools arrays and tool choices make
// of a body's top-level fields: the tools declared, and the violations
// that depend on nothing else.
type toolState struct {
	declared   map[string]bool
	toolsArray bool // Anthropic: the tools field is an array, so tool references are checked
	emptyTools bool // Anthropic: the tools field is an empty array
	top        []RuleViolation
}

// toolState reads the body's tools arrays and tool choices, edits
// included.
func (b *Body) toolState() *toolState {
	ts := &toolState{declared: map[string]bool{}}
	for _, t := range b.Tools() {
		ts.declared[t.Name] = true
	}
	if b.Dialect == Anthropic {
		items, ok := asArray(b.field("tools"))
		ts.toolsArray = ok
		ts.emptyTools = ok && len(items) == 0
	}
	ts.top = validateToolFields(b, ts.declared)
	return ts
}

// validateTools lists the violations of the tools array and the tool
// choice of a body with the messages ms.
func validateTools(d Dialect, ms []*facts, ts *toolState) []RuleViolation {
	v := violations(append([]RuleViolation(nil), ts.top...))
	if d == Anthropic && ts.emptyTools {
		// Only an empty tools array is reported: a body without one is
		// taken as recorded without its tools (Claude Code session logs
		// keep none), and a prune never takes the field away.
		for i, m := range ms {
			if m.ncalls > 0 || m.nresults > 0 {
				v.add(RuleAnthropicToolBlocksWithoutTools, i, "Requests which include `tool_use` or `tool_result` blocks must define tools.")
				break
			}
		}
	}
	return v
}

// validateToolFields lists the violations of the tools arrays and tool
// choices that depend on the top-level fields alone; declared names the
// tools declared.
func validateToolFields(b *Body, declared map[string]bool) []RuleViolation {
	var v violations
	unknown := func(names []string) []string {
		var out []string
		for _, n := range names {
			if n != "" && !declared[n] {
				out = append(out, n)
			}
		}
		return out
	}
	switch b.Dialect {
	case OpenAIChat:
		for _, key := range []string{"tools", "functions"} {
			if items, ok := asArray(b.field(key)); ok && len(items) == 0 {
				v.add(RuleChatEmptyTools, 0, "Invalid '%s': empty array. Expected an array with minimum length 1, but got an empty array instead.", key)
			}
		}
		choice, fcall := b.field("tool_choice"), b.field("function_call")
		if len(declared) == 0 {
			if !isNull(choice) {
				v.add(RuleChatToolChoiceWithoutTools, 0, "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
			}
			if !isNull(fcall) {
				v.add(RuleChatToolChoiceWithoutTools, 0, "Invalid value for 'function_call': 'function_call' is only allowed when 'functions' are specified.")
			}
			break
		}
		for _, n := range unknown(chatChoiceNames(choice)) {
			v.add(RuleChatUnknownToolChoice, 0, "Invalid 'tool_choice': no tool named '%s' is declared in 'tools'.", n)
		}
		for _, n := range unknown([]string{str(path(fcall, "name"))}) {
			v.add(RuleChatUnknownFunctionCall, 0, "Invalid 'function_call': no function named '%s' is declared in 'functions'.", n)
		}
	case OpenAIResponses:
		for _, n := range unknown(responsesChoiceNames(b.field("tool_choice"))) {
			v.add(RuleResponsesUnknownToolChoice, 0, "Invalid 'tool_choice': no tool named '%s' is declared in 'tools'.", n)
		}
	case Anthropic:
		choice := b.field("tool_choice")
		if str(path(choice, "type")) == "tool" {
			for _, n := range unknown([]string{str(path(choice, "name"))}) {
				v.add(RuleAnthropicUnknownToolChoice, 0, "tool_choice: tool '%s' is not among the tools defined in the request.", n)
			}
		}
	case Gemini:
		cfg := b.field("toolConfig")
		if isNull(cfg) {
			cfg = b.field("tool_config")
		}
		fcc := firstPath(cfg, []string{"functionCallingConfig"}, []string{"function_calling_config"})
		allowed, _ := asArray(firstPath(fcc, []string{"allowedFunctionNames"}, []string{"allowed_function_names"}))
		var names []string
		for _, a := range allowed {
			names = append(names, str(a))
		}
		for _, n := range unknown(names) {
			v.add(RuleGeminiUnknownAllowedFunction, 0, "allowed_function_names: function '%s' is not declared in tools[].function_declarations.", n)
		}
	case Bedrock:
		cfg := b.field("toolConfig")
		if isNull(cfg) {
			break
		}
		if items, ok := asArray(path(cfg, "tools")); ok && len(items) == 0 {
			v.add(RuleBedrockEmptyTools, 0, "1 validation error detected: Value at 'toolConfig.tools' failed to satisfy constraint: Member must have length greater than or equal to 1")
		}
		for _, n := range unknown([]string{str(path(cfg, "toolChoice", "tool", "name"))}) {
			v.add(RuleBedrockUnknownToolChoice, 0, "toolConfig.toolChoice: tool %s is not defined in toolConfig.tools.", n)
		}
	}
	return v
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

// responsesChoiceNames returns the functions a Responses tool_choice
// names: a function or custom tool, or those of an allowed_tools list.
// Hosted tools (by type) and MCP servers are not declared by name.
func responsesChoiceNames(choice json.RawMessage) []string {
	var names []string
	switch str(path(choice, "type")) {
	case "function", "custom":
		names = append(names, str(path(choice, "name")))
	case "allowed_tools":
		items, _ := asArray(path(choice, "tools"))
		for _, it := range items {
			if t := str(path(it, "type")); t == "function" || t == "custom" {
				names = append(names, str(path(it, "name")))
			}
		}
	}
	return names
}

package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
)

// Dialect names a provider request format.
//
// The zero Dialect (empty) names no format: [Read] and [Validate] then
// detect the format ([Detect]); a session refuses it.
type Dialect string

// The supported dialects.
const (
	// OpenAIChat is the OpenAI Chat Completions request format
	// ({"messages": [...], "tools": [...]}), also spoken by many
	// OpenAI-compatible servers.
	OpenAIChat Dialect = "openai-chat"
	// OpenAIResponses is the OpenAI Responses request format
	// ({"input": [...items] or "text", "tools": [...]}).
	OpenAIResponses Dialect = "openai-responses"
	// Anthropic is the Anthropic Messages request format
	// ({"system": ..., "messages": [...], "tools": [...]}).
	Anthropic Dialect = "anthropic"
	// Gemini is the Google Gemini generateContent request format
	// ({"contents": [...], "tools": [{"functionDeclarations": [...]}]}).
	Gemini Dialect = "gemini"
	// Bedrock is the AWS Bedrock Converse request format
	// ({"messages": [...], "system": [...], "toolConfig": {...}}).
	Bedrock Dialect = "bedrock"
)

// Dialects lists every supported dialect.
var Dialects = []Dialect{OpenAIChat, OpenAIResponses, Anthropic, Gemini, Bedrock}

// provider returns the table of dialect d, or nil for a dialect the
// package does not know. It is the one place that tells the dialects
// apart: everything else asks the table.
func (d Dialect) provider() *provider {
	switch d {
	case OpenAIChat:
		return &chatProvider
	case OpenAIResponses:
		return &responsesProvider
	case Anthropic:
		return &anthropicProvider
	case Gemini:
		return &geminiProvider
	case Bedrock:
		return &bedrockProvider
	}
	return nil
}

// messagesKey returns the top-level key of the history of dialect d, and
// false for a dialect the package does not know.
func (d Dialect) messagesKey() (string, bool) {
	if p := d.provider(); p != nil {
		return p.historyKey, true
	}
	return "", false
}

// Detect guesses the dialect of a request body from its shape:
// "contents" means Gemini, "input" means Responses, "toolConfig" or
// camelCase toolUse/toolResult blocks mean Bedrock, tool_calls or tool
// messages mean Chat, tool_use/tool_result/thinking blocks mean Anthropic.
// A plain "messages" body falls back on the other top-level keys
// ("max_tokens" with "system" for Anthropic, "inferenceConfig" for
// Bedrock), on the shape of the tools array (input_schema or a dated
// tool type for Anthropic, a "function" object for Chat), on Anthropic's
// thinking budget_tokens and stop_sequences, and then on OpenAI Chat, the
// most widely spoken format.
func Detect(body []byte) (Dialect, error) {
	top, err := readTop(body)
	if err != nil {
		return "", fmt.Errorf("wire: detect: %w", err)
	}
	return detect(top)
}

// detect is Detect of a top-level object already read.
func detect(top *topLevel) (Dialect, error) {
	f := top.fields
	if raw, ok := f["contents"]; ok && kindOf(raw) == '[' {
		return Gemini, nil
	}
	if raw, ok := f["input"]; ok && (kindOf(raw) == '[' || kindOf(raw) == '"') {
		return OpenAIResponses, nil
	}
	if raw, ok := f["toolConfig"]; ok && !isNull(raw) {
		return Bedrock, nil
	}
	raw, ok := f["messages"]
	if !ok {
		return "", errors.New("wire: detect: body has none of \"messages\", \"input\" or \"contents\"")
	}
	elems, ok := top.elems["messages"]
	if !ok || kindOf(raw) != '[' {
		return "", fmt.Errorf("wire: detect: messages is %s, not an array", kindName(raw))
	}
	if d := detectMessages(top.src, elems); d != "" {
		return d, nil
	}
	if _, ok := f["inferenceConfig"]; ok {
		return Bedrock, nil
	}
	if sys, ok := f["system"]; ok {
		if items, ok := asArray(sys); ok && len(items) > 0 {
			if obj, ok := asObject(items[0]); ok {
				if _, typed := obj["type"]; !typed {
					return Bedrock, nil
				}
			}
		}
		if _, ok := f["max_tokens"]; ok {
			return Anthropic, nil
		}
	}
	if _, ok := f["max_tokens"]; ok {
		if _, ok := f["anthropic_version"]; ok {
			return Anthropic, nil
		}
	}
	if d := detectTools(f["tools"]); d != "" {
		return d, nil
	}
	if th, ok := asObject(f["thinking"]); ok {
		if _, ok := th["budget_tokens"]; ok {
			return Anthropic, nil
		}
	}
	if _, ok := f["stop_sequences"]; ok {
		return Anthropic, nil
	}
	return OpenAIChat, nil
}

// detectTools tells Anthropic tool declarations (a name beside
// input_schema, or a versioned server or client tool type such as
// "web_search_20250305") from Chat ones ({"type": "function",
// "function": {...}}). It returns "" when the tools array says neither.
func detectTools(raw json.RawMessage) Dialect {
	items, _ := asArray(raw)
	for _, it := range items {
		obj, ok := asObject(it)
		if !ok {
			continue
		}
		if _, ok := obj["function"]; ok {
			return OpenAIChat
		}
		if _, ok := obj["input_schema"]; ok {
			return Anthropic
		}
		if typ, _ := optString(obj, "type"); versionedType.MatchString(typ) {
			return Anthropic
		}
	}
	return ""
}

// versionedType matches Anthropic's dated tool types.
var versionedType = regexp.MustCompile(`^[a-z_]+_20\d{6}$`)

// detectMessages looks at message roles and content blocks for a dialect
// marker, in the messages at elems of src, until it finds one. It
// returns "" when the messages fit every messages-based dialect.
func detectMessages(src []byte, elems []span) Dialect {
	r := newReader("")
	for _, e := range elems {
		r.v.reset()
		obj, ok := r.v.object(src[e.start:e.end])
		if !ok {
			continue
		}
		switch r.strOf(obj.get("role")) {
		case "tool", "function", "system", "developer":
			return OpenAIChat
		}
		if tc := obj.get("tool_calls"); tc != nil && !isNull(tc) {
			return OpenAIChat
		}
		if obj.has("tool_call_id") {
			return OpenAIChat
		}
		if fc := obj.get("function_call"); fc != nil && !isNull(fc) {
			return OpenAIChat
		}
		blocks, ok := r.v.array(obj.get("content"))
		if !ok {
			continue
		}
		for k := 0; k < blocks.len(); k++ {
			blk, ok := r.v.object(blocks.at(k))
			if !ok {
				continue
			}
			for _, key := range []string{"toolUse", "toolResult", "reasoningContent", "cachePoint", "guardContent"} {
				if blk.has(key) {
					return Bedrock
				}
			}
			typ := r.strOf(blk.get("type"))
			switch typ {
			case "tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use", "document":
				return Anthropic
			case "image_url", "input_audio", "refusal":
				return OpenAIChat
			case "image":
				if blk.has("source") {
					return Anthropic // Chat images are image_url parts
				}
			}
			if isAnthropicServerResult(typ) || typ == "mcp_tool_use" {
				return Anthropic
			}
			if blk.has("text") && typ == "" {
				return Bedrock // Converse text blocks carry no type
			}
		}
	}
	return ""
}

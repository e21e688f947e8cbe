package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestReadErrors(t *testing.T) {
	cases := []struct {
		d    Dialect
		body string
		want string
	}{
		{Anthropic, `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":[{"type":"text","text":"x"},{"type":"tool_result","content":"x"}]}]}`,
			"wire: anthropic: messages[2].content[1]: tool_result without tool_use_id"},
		{Anthropic, `{"messages":[{"role":"assistant","content":[{"type":"tool_use","name":"f"}]}]}`, "wire: anthropic: messages[0].content[0]: tool_use without id"},
		{Anthropic, `{"messages":[{"role":"user","content":[{"text":"x"}]}]}`, "wire: anthropic: messages[0].content[0]: content block without type"},
		{Anthropic, `{"messages":[{"role":"user","content":42}]}`, "wire: anthropic: messages[0].content: content is a number, not a string or an array"},
		{Anthropic, `{"messages":[{"content":"x"}]}`, "wire: anthropic: messages[0]: message without role"},
		{Anthropic, `{"messages":{}}`, "wire: anthropic: messages is an object, not an array"},
		{Anthropic, `{"system":"x"}`, `wire: anthropic: body has no "messages"`},
		{Anthropic, `{"messages":[], "thinking": 3}`, "wire: anthropic: thinking is a number, not an object"},
		{OpenAIChat, `[1,2]`, "wire: openai-chat: body is not a JSON object"},
		{OpenAIChat, `{"messages":[1]}`, "wire: openai-chat: messages[0]: message is a number, not an object"},
		{OpenAIChat, `{"messages":[{"role":"tool","content":"x"}]}`, "wire: openai-chat: messages[0]: tool message without tool_call_id"},
		{OpenAIChat, `{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f"}}]}]}`, "wire: openai-chat: messages[0].tool_calls[0]: tool call without id"},
		{OpenAIChat, `{"messages":[{"role":7}]}`, "wire: openai-chat: messages[0]: role is a number, not a string"},
		{OpenAIChat, `{"messages":[`, "wire: openai-chat: body is not valid JSON"},
		{OpenAIChat, `{"messages":[]} x`, "wire: openai-chat: body is not valid JSON: data after the top-level object"},
		{OpenAIResponses, `{"input":[{"type":"function_call","name":"f"}]}`, "wire: openai-responses: input[0]: function_call without call_id"},
		{OpenAIResponses, `{"input":[{"type":"function_call_output","output":"x"}]}`, "wire: openai-responses: input[0]: function_call_output without call_id"},
		{OpenAIResponses, `{"input":[{"content":"x"}]}`, "wire: openai-responses: input[0]: item without type, role or id"},
		{OpenAIResponses, `{"input":5}`, "wire: openai-responses: input is a number, not an array"},
		{Gemini, `{"contents":[{"role":"model","parts":[{"functionCall":{"args":{}}}]}]}`, "wire: gemini: contents[0].parts[0]: functionCall without name"},
		{Gemini, `{"contents":[{"role":"model","parts":{}}]}`, "wire: gemini: contents[0].parts: parts is an object, not an array"},
		{Bedrock, `{"messages":[{"role":"assistant","content":[{"toolUse":{"name":"f"}}]}]}`, "wire: bedrock: messages[0].content[0]: toolUse without toolUseId"},
		{Bedrock, `{"messages":[{"role":"user","content":[{"toolResult":{"content":[]}}]}]}`, "wire: bedrock: messages[0].content[0]: toolResult without toolUseId"},
		{Bedrock, `{"messages":[{"role":"user","content":"hi"}]}`, "wire: bedrock: messages[0].content: content is a string, not an array"},
		{Gemini, `{"contents":[{"role":"model","parts":[{"functionCall":3}]}]}`, "wire: gemini: contents[0].parts[0].functionCall: functionCall is a number, not an object"},
		{Gemini, `{"contents":[{"role":"user","parts":[{"functionResponse":[]}]}]}`, "wire: gemini: contents[0].parts[0].functionResponse: functionResponse is an array, not an object"},
		{Gemini, `{"contents":[{"role":"user","parts":[{"text":"x"},1]}]}`, "wire: gemini: contents[0].parts[1]: part is a number, not an object"},
		{Bedrock, `{"messages":[{"role":"user","content":[{"toolResult":"x"}]}]}`, "wire: bedrock: messages[0].content[0].toolResult: toolResult is a string, not an object"},
		{Bedrock, `{"messages":[{"role":"assistant","content":[{"toolUse":true}]}]}`, "wire: bedrock: messages[0].content[0].toolUse: toolUse is a boolean, not an object"},
		{Bedrock, `{"messages":[{"role":"user","content":[1]}]}`, "wire: bedrock: messages[0].content[0]: content block is a number, not an object"},
		{Bedrock, `{"messages":[{"content":[]}]}`, "wire: bedrock: messages[0]: message without role"},
		{Anthropic, `{"messages":[{"role":"user","content":[{"type":"text","text":"x"},"y"]}]}`, "wire: anthropic: messages[0].content[1]: content block is a string, not an object"},
		{OpenAIChat, `{"messages":[{"role":"user","content":[1]}]}`, "wire: openai-chat: messages[0].content[0]: content part is a number, not an object"},
		{OpenAIChat, `{"messages":[{"role":"user","content":[{"type":"text","text":1}]}]}`, "wire: openai-chat: messages[0].content[0]: text is a number, not a string"},
		{OpenAIResponses, `{"input":[{"role":"user","content":[true]}]}`, "wire: openai-responses: input[0].content[0]: content part is a boolean, not an object"},
		{Dialect("cohere"), `{"messages":[]}`, `wire: unknown dialect "cohere"`},
	}
	for _, c := range cases {
		_, err := Read([]byte(c.body), c.d)
		if err == nil {
			t.Errorf("Read(%s, %s): no error, want %q", c.d, c.body, c.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Read(%s, %s) = %q, want prefix %q", c.d, c.body, err, c.want)
		}
	}
}

func TestDetect(t *testing.T) {
	cases := []struct {
		body string
		want Dialect
	}{
		{`{"contents":[]}`, Gemini},
		{`{"input":"hi"}`, OpenAIResponses},
		{`{"input":[]}`, OpenAIResponses},
		{`{"messages":[],"toolConfig":{}}`, Bedrock},
		{`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, Bedrock},
		{`{"messages":[{"role":"user","content":"hi"}],"system":[{"text":"s"}]}`, Bedrock},
		{`{"messages":[{"role":"user","content":"hi"}],"inferenceConfig":{}}`, Bedrock},
		{`{"messages":[{"role":"user","content":"hi"}],"system":"s","max_tokens":10}`, Anthropic},
		{`{"messages":[{"role":"user","content":"hi"}],"system":[{"type":"text","text":"s"}],"max_tokens":10}`, Anthropic},
		{`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t"}]}]}`, Anthropic},
		{`{"messages":[{"role":"system","content":"s"}]}`, OpenAIChat},
		{`{"messages":[{"role":"user","content":"hi"}]}`, OpenAIChat},
		// Found by the generated sweep: Anthropic bodies without a system
		// prompt or tool blocks yet.
		{`{"messages":[{"role":"user","content":"hi"}],"max_tokens":10,"tools":[{"name":"f","input_schema":{"type":"object"}}]}`, Anthropic},
		{`{"messages":[{"role":"user","content":"hi"}],"max_tokens":10,"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, Anthropic},
		{`{"messages":[{"role":"user","content":"hi"}],"max_tokens":10,"thinking":{"type":"enabled","budget_tokens":1024}}`, Anthropic},
		{`{"messages":[{"role":"user","content":"hi"}],"max_tokens":10,"stop_sequences":["x"]}`, Anthropic},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"x"}}]}]}`, Anthropic},
		{`{"messages":[{"role":"user","content":"hi"}],"max_tokens":10,"tools":[{"type":"function","function":{"name":"f"}}]}`, OpenAIChat},
		{`{"messages":[{"role":"user","content":"hi"}],"thinking":{"type":"enabled"}}`, OpenAIChat},
	}
	for _, c := range cases {
		got, err := Detect([]byte(c.body))
		if err != nil || got != c.want {
			t.Errorf("Detect(%s) = %q, %v; want %s", c.body, got, err, c.want)
		}
	}
	for _, bad := range []string{`{}`, `[]`, `nope`, `{"messages":3}`} {
		if d, err := Detect([]byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "wire: detect: ") {
			t.Errorf("Detect(%s) = %q, %v; want a wire: detect error", bad, d, err)
		}
	}
}

func TestReadFacts(t *testing.T) {
	b, err := Read([]byte(ruleCaseBody(t, Anthropic, "clean")), Anthropic)
	if err != nil {
		t.Fatal(err)
	}
	a := b.Messages[1]
	if a.Role != "assistant" || !a.Reasoning || len(a.Calls) != 2 || a.Calls[1].ID != "toolu_b" ||
		a.Calls[0].Name != "weather" || string(a.Calls[0].Args) != `{"city":"Paris"}` || a.Texts[0] != "Checking." {
		t.Errorf("assistant facts: %+v", a)
	}
	if got := b.Messages[2].Results; len(got) != 2 || got[0] != "toolu_b" || got[1] != "toolu_a" {
		t.Errorf("results = %v", got)
	}
	if !b.Messages[3].ServerToolUse || len(b.Messages[3].Calls) != 0 {
		t.Errorf("server tool use: %+v", b.Messages[3])
	}

	c, err := Read([]byte(ruleCaseBody(t, OpenAIChat, "clean")), OpenAIChat)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Messages[2].Calls[1]; got.ID != "call_b" || string(got.Args) != `{"city":"Rome"}` {
		t.Errorf("chat call = %+v", got)
	}

	g, err := Read([]byte(ruleCaseBody(t, Gemini, "clean")), Gemini)
	if err != nil {
		t.Fatal(err)
	}
	if calls := g.Messages[1].Calls; len(calls) != 2 || !calls[0].Signed || calls[1].Signed {
		t.Errorf("gemini calls = %+v", calls)
	}
}

func ruleCaseBody(t *testing.T, d Dialect, name string) string {
	t.Helper()
	for _, c := range ruleCases {
		if c.d == d && c.name == name {
			return c.body
		}
	}
	t.Fatalf("no rule case %s/%s", d, name)
	return ""
}

func TestMarshalUntouchedIsByteIdentical(t *testing.T) {
	for _, c := range ruleCases {
		b, err := Read([]byte(c.body), c.d)
		if err != nil {
			t.Fatal(err)
		}
		out, err := b.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != c.body {
			t.Errorf("%s/%s: untouched body not byte-identical", c.d, c.name)
		}
	}
}

// TestStubAndRemove stubs the results of every clean body, then removes
// the call/result pair, checking that the body stays valid, that the ids
// survive stubbing and that unrelated fields survive both.
func TestStubAndRemove(t *testing.T) {
	cases := []struct {
		d        Dialect
		result   int   // index of the message carrying results
		pair     []int // indexes forming the call/result unit
		contains string
	}{
		{OpenAIChat, 3, []int{2, 3, 4}, `"content":"[pruned]"`},
		{OpenAIResponses, 3, []int{1, 2, 3}, `"output":"[pruned]"`},
		{Anthropic, 2, []int{1, 2}, `"content":"[pruned]"`},
		{Gemini, 2, []int{1, 2}, `"response":{"result":"[pruned]"}`},
		{Bedrock, 2, []int{1, 2}, `"content":[{"text":"[pruned]"}]`},
	}
	for _, c := range cases {
		t.Run(string(c.d), func(t *testing.T) {
			body := ruleCaseBody(t, c.d, "clean")
			b, err := Read([]byte(body), c.d)
			if err != nil {
				t.Fatal(err)
			}
			before := append([]string(nil), b.Messages[c.result].Results...)
			if err := b.Stub(c.result, "[pruned]"); err != nil {
				t.Fatal(err)
			}
			if got := b.Messages[c.result].Results; strings.Join(got, ",") != strings.Join(before, ",") {
				t.Errorf("results after stub = %v, want %v", got, before)
			}
			out, err := b.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), c.contains) {
				t.Errorf("stubbed body lacks %s:\n%s", c.contains, out)
			}
			if vs, err := Validate(out, c.d); err != nil || len(vs) != 0 {
				t.Errorf("stubbed body: %v %v", vs, err)
			}
			if err := b.Remove(c.pair); err != nil {
				t.Fatal(err)
			}
			out, err = b.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if vs, err := Validate(out, c.d); err != nil {
				t.Errorf("after remove: %v", err)
			} else {
				for _, v := range vs {
					t.Errorf("after remove: %v", v)
				}
			}
			// Top-level fields other than the conversation survive.
			var in, got map[string]json.RawMessage
			_ = json.Unmarshal([]byte(body), &in)
			_ = json.Unmarshal(out, &got)
			key, _ := c.d.messagesKey()
			for k := range in {
				if k != key && !jsonEqual(t, in[k], got[k]) {
					t.Errorf("top-level %q changed", k)
				}
			}
		})
	}
}

func TestEditErrors(t *testing.T) {
	b, err := Read([]byte(ruleCaseBody(t, OpenAIChat, "clean")), OpenAIChat)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Stub(0, "x"); err == nil || !strings.Contains(err.Error(), "carries no tool result") {
		t.Errorf("Stub on a system message: %v", err)
	}
	if err := b.Stub(3, "  "); err == nil {
		t.Error("Stub with blank text: no error")
	}
	if err := b.Stub(99, "x"); err == nil {
		t.Error("Stub out of range: no error")
	}
	n := len(b.Messages)
	if err := b.Remove([]int{1, 99}); err == nil || len(b.Messages) != n {
		t.Errorf("Remove out of range: %v, %d messages", err, len(b.Messages))
	}
	if err := b.Remove([]int{6, 6, 5}); err != nil || len(b.Messages) != n-2 {
		t.Errorf("Remove duplicates: %v, %d messages", err, len(b.Messages))
	}
}

func TestResponsesStringInput(t *testing.T) {
	b, err := Read([]byte(`{"input":"hello","model":"m"}`), OpenAIResponses)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Messages) != 1 || b.Messages[0].Role != "user" || b.Messages[0].Texts[0] != "hello" {
		t.Fatalf("messages = %+v", b.Messages)
	}
	if err := b.Remove([]int{0}); err != nil {
		t.Fatal(err)
	}
	out, err := b.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"input":[],"model":"m"}` {
		t.Errorf("after removing the string input: %s", out)
	}
}

// A tool message separated from its call by another message breaks C2:
// the call is unanswered and the tool message is an orphan.
func TestChatInterleavedMessage(t *testing.T) {
	vs, err := Validate([]byte(`{"messages":[{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"system","content":"note"},
		{"role":"tool","tool_call_id":"call_a","content":"ok"}]}`), OpenAIChat)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].Rule != RuleChatToolCallsWithoutResponse || vs[0].Index != 1 ||
		vs[1].Rule != RuleChatOrphanToolMessage || vs[1].Index != 3 {
		t.Errorf("violations = %v", vs)
	}
}

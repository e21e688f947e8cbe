package sdk_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// ---- OpenAI Chat Completions ----------------------------------------------

func chatCall(id, name, args string) openai.ChatCompletionMessageToolCallUnionParam {
	return openai.ChatCompletionMessageToolCallUnionParam{
		OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
			ID: id,
			Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
				Name: name, Arguments: args,
			},
		},
	}
}

func chatAssistant(text string, calls ...openai.ChatCompletionMessageToolCallUnionParam) openai.ChatCompletionMessageParamUnion {
	a := openai.ChatCompletionAssistantMessageParam{ToolCalls: calls}
	if text != "" {
		a.Content.OfString = openai.String(text)
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

func chatFunction(name, desc string, props map[string]any, required ...string) openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        name,
		Description: openai.String(desc),
		Strict:      openai.Bool(false),
		Parameters: shared.FunctionParameters{
			"type": "object", "properties": props, "required": required,
		},
	})
}

// chatParams is a Chat Completions request: system, user, a parallel batch
// of two calls with their two results, a single call with its result, and
// a final user message.
func chatParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model: openai.ChatModelGPT4o,
		Messages: []openai.ChatCompletionMessageParamUnion{
			/* 0 */ openai.SystemMessage("You are a travel assistant. Use the tools for live data."),
			/* 1 */ openai.UserMessage("What is the weather in Paris and Berlin right now?"),
			/* 2 */ chatAssistant("",
				chatCall("call_w1", "get_weather", `{"city":"Paris","unit":"celsius"}`),
				chatCall("call_w2", "get_weather", `{"city":"Berlin","unit":"celsius"}`)),
			/* 3 */ openai.ToolMessage(`{"city":"Paris","temp_c":18,"conditions":"sunny","humidity":0.41,"wind_kph":9,"forecast":["sunny","cloudy","rain"]}`, "call_w1"),
			/* 4 */ openai.ToolMessage(`{"city":"Berlin","temp_c":12,"conditions":"overcast","humidity":0.77,"wind_kph":21,"forecast":["rain","rain","cloudy"]}`, "call_w2"),
			/* 5 */ chatAssistant("Paris is sunny at 18°C, Berlin overcast at 12°C. Let me check the local time too.",
				chatCall("call_t1", "get_time", `{"tz":"Europe/Paris"}`)),
			/* 6 */ openai.ToolMessage(`{"tz":"Europe/Paris","time":"2025-06-01T14:03:00+02:00"}`, "call_t1"),
			/* 7 */ openai.UserMessage("Thanks. Which city is better for a walk this afternoon?"),
		},
		Tools: []openai.ChatCompletionToolUnionParam{
			chatFunction("get_weather", weatherDoc, weatherProps(), "city"),
			chatFunction("get_time", "Local time in an IANA time zone.", map[string]any{
				"tz": map[string]any{"type": "string"},
			}, "tz"),
		},
		ParallelToolCalls: openai.Bool(true),
		Temperature:       openai.Float(0.2),
		User:              openai.String("user-42"),
	}
}

// checkChatPairs checks in the SDK types that every assistant tool_calls
// message is followed by exactly one tool message per call id, and that
// every tool message sits in such a block.
func checkChatPairs(t *testing.T, msgs []openai.ChatCompletionMessageParamUnion) {
	t.Helper()
	var open []string
	for i, m := range msgs {
		switch {
		case m.OfTool != nil:
			j := slices.Index(open, m.OfTool.ToolCallID)
			if j < 0 {
				t.Errorf("message %d: tool message for %q answers no open call (open %v)", i, m.OfTool.ToolCallID, open)
				continue
			}
			open = slices.Delete(open, j, j+1)
		default:
			if len(open) > 0 {
				t.Errorf("message %d: calls %v left without results", i, open)
			}
			open = nil
			if m.OfAssistant != nil {
				for _, c := range m.OfAssistant.ToolCalls {
					open = append(open, c.OfFunction.ID)
				}
			}
		}
	}
	if len(open) > 0 {
		t.Errorf("calls %v left without results at the end", open)
	}
}

// unmarshalChat unmarshals a body into the SDK params and checks that
// marshalling them again gives the same JSON.
func unmarshalChat(t *testing.T, body []byte) openai.ChatCompletionNewParams {
	t.Helper()
	var p openai.ChatCompletionNewParams
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("unmarshal into openai.ChatCompletionNewParams: %v", err)
	}
	jsonEqual(t, "SDK params unmarshalled and marshalled again", body, mustJSON(t, p))
	return p
}

func TestOpenAIChat(t *testing.T) {
	params := chatParams()
	body := mustJSON(t, params)

	// The SDK itself round-trips the body, so comparisons below through
	// its types are meaningful.
	unmarshalChat(t, body)

	t.Run("evict first batch", func(t *testing.T) {
		g := readUnpruned(t, body, wire.OpenAIChat)
		// Name only the first result: the guard grows the plan to the
		// whole batch, the assistant message and both tool messages.
		d, out := prune(t, g, pruneguard.Plan{Evict: ids(3)})
		if !slices.Equal(d.Evict, ids(2, 3, 4)) {
			t.Fatalf("evicted %v, want %v", d.Evict, ids(2, 3, 4))
		}
		noViolations(t, out, wire.OpenAIChat)
		sameExcept(t, body, out, "messages")
		survivors(t, array(t, body, "messages"), array(t, out, "messages"), []int{0, 1, 5, 6, 7})

		got := unmarshalChat(t, out)
		if len(got.Messages) != 5 {
			t.Fatalf("pruned params hold %d messages, want 5", len(got.Messages))
		}
		for j, i := range []int{0, 1, 5, 6, 7} {
			jsonEqual(t, "SDK message "+string(wire.ID(i)), mustJSON(t, params.Messages[i]), mustJSON(t, got.Messages[j]))
		}
		jsonEqual(t, "SDK tools", mustJSON(t, params.Tools), mustJSON(t, got.Tools))
		if got.Model != params.Model || got.Temperature.Value != 0.2 || !got.ParallelToolCalls.Value || got.User.Value != "user-42" {
			t.Errorf("settings changed: model %q temperature %v parallel %v user %q",
				got.Model, got.Temperature, got.ParallelToolCalls, got.User)
		}
		a := got.Messages[2].OfAssistant
		if a == nil || len(a.ToolCalls) != 1 || a.ToolCalls[0].OfFunction == nil {
			t.Fatalf("message 2 is not the get_time call: %s", mustJSON(t, got.Messages[2]))
		}
		if c := a.ToolCalls[0].OfFunction; c.ID != "call_t1" || c.Function.Name != "get_time" || c.Function.Arguments != `{"tz":"Europe/Paris"}` {
			t.Errorf("get_time call changed: %+v", c.Function)
		}
		if tm := got.Messages[3].OfTool; tm == nil || tm.ToolCallID != "call_t1" {
			t.Errorf("message 3 is not the get_time result: %s", mustJSON(t, got.Messages[3]))
		}
		for _, m := range got.Messages {
			if m.OfTool != nil && (m.OfTool.ToolCallID == "call_w1" || m.OfTool.ToolCallID == "call_w2") {
				t.Errorf("a result of the evicted batch survived: %s", mustJSON(t, m))
			}
		}
		checkChatPairs(t, got.Messages)
	})

	t.Run("guard budget", func(t *testing.T) {
		g := readUnpruned(t, body, wire.OpenAIChat)
		before := g.Context().Tokens()
		res, refused, err := g.Check(pruneguard.Guard{Budget: before - 1, Policy: pruneguard.LargestResultsFirst{}})
		if err != nil {
			t.Fatalf("check: %v", err)
		}
		for _, r := range refused {
			t.Logf("refusal: %+v", r)
		}
		if res.After >= before {
			t.Fatalf("guard freed nothing: %d -> %d (%v)", before, res.After, res.Reason)
		}
		// The largest result is Berlin's weather (m4); its unit is the
		// whole first batch.
		if len(res.Decisions) != 1 || !slices.Equal(res.Decisions[0].Evict, ids(2, 3, 4)) {
			for _, d := range res.Decisions {
				t.Logf("decision evicts %v stubs %v", d.Evict, d.Stub)
			}
			t.Fatalf("guard made %d decisions, want one evicting %v", len(res.Decisions), ids(2, 3, 4))
		}
		out, err := g.Body().Marshal()
		if err != nil {
			t.Fatal(err)
		}
		noViolations(t, out, wire.OpenAIChat)
		sameExcept(t, body, out, "messages")
		got := unmarshalChat(t, out)
		checkChatPairs(t, got.Messages)
		if got.Messages[0].OfSystem == nil || got.Messages[len(got.Messages)-1].OfUser == nil {
			t.Errorf("system prompt or last user message lost")
		}
	})
}

// ---- OpenAI Responses -------------------------------------------------------

func responsesFunction(name, desc string, props map[string]any, required ...string) responses.ToolUnionParam {
	tool := responses.ToolParamOfFunction(name, map[string]any{
		"type": "object", "properties": props, "required": required, "additionalProperties": false,
	}, true)
	tool.OfFunction.Description = openai.String(desc)
	return tool
}

// responsesMessage is an easy input message with its "type" set. The
// API accepts a message item without it, and the SDK's helper
// ResponseInputItemParamOfMessage leaves it out, but the SDK's decoder
// needs it to tell the union's variants apart: without it
// json.Unmarshal into responses.ResponseNewParams returns no error and
// silently drops the whole input array (openai-go v3.98.0).
func responsesMessage(role responses.EasyInputMessageRole, text string) responses.ResponseInputItemUnionParam {
	item := responses.ResponseInputItemParamOfMessage(text, role)
	item.OfMessage.Type = responses.EasyInputMessageTypeMessage
	return item
}

func responsesCall(id, callID, name, args string) responses.ResponseInputItemUnionParam {
	item := responses.ResponseInputItemParamOfFunctionCall(args, callID, name)
	item.OfFunctionCall.ID = openai.String(id)
	item.OfFunctionCall.Status = responses.ResponseFunctionToolCallStatusCompleted
	return item
}

func responsesOutput(callID, output string) responses.ResponseInputItemUnionParam {
	item := responses.ResponseInputItemParamOfFunctionCallOutput(output)
	item.OfFunctionCallOutput.CallID = openai.String(callID)
	return item
}

// responsesParams is a Responses request: user message, a reasoning item,
// two function calls of one turn, their two outputs, the assistant's
// answer and a final user message.
func responsesParams() responses.ResponseNewParams {
	reasoning := responses.ResponseInputItemParamOfReasoning("rs_01", []responses.ResponseReasoningItemSummaryParam{
		{Text: "The user wants both cities; call get_weather twice in parallel."},
	})
	reasoning.OfReasoning.EncryptedContent = openai.String("gAAAAABoEncryptedReasoningBlob==")
	return responses.ResponseNewParams{
		Model:        "gpt-5",
		Instructions: openai.String("You are a travel assistant. Use the tools for live data."),
		Store:        openai.Bool(false),
		Include:      []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			/* 0 */ responsesMessage(responses.EasyInputMessageRoleUser, "What is the weather in Paris and Berlin right now?"),
			/* 1 */ reasoning,
			/* 2 */ responsesCall("fc_01", "call_w1", "get_weather", `{"city":"Paris"}`),
			/* 3 */ responsesCall("fc_02", "call_w2", "get_weather", `{"city":"Berlin"}`),
			/* 4 */ responsesOutput("call_w1", `{"city":"Paris","temp_c":18,"conditions":"sunny","forecast":["sunny","cloudy","rain"]}`),
			/* 5 */ responsesOutput("call_w2", `{"city":"Berlin","temp_c":12,"conditions":"overcast","forecast":["rain","rain","cloudy"]}`),
			/* 6 */ responsesMessage(responses.EasyInputMessageRoleAssistant, "Paris is sunny at 18°C, Berlin overcast at 12°C."),
			/* 7 */ responsesMessage(responses.EasyInputMessageRoleUser, "Which city is better for a walk this afternoon?"),
		}},
		Tools: []responses.ToolUnionParam{
			responsesFunction("get_weather", weatherDoc, weatherProps(), "city"),
			responsesFunction("get_time", "Local time in an IANA time zone.", map[string]any{
				"tz": map[string]any{"type": "string"},
			}, "tz"),
		},
		ParallelToolCalls: openai.Bool(true),
	}
}

func unmarshalResponses(t *testing.T, body []byte) responses.ResponseNewParams {
	t.Helper()
	var p responses.ResponseNewParams
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("unmarshal into responses.ResponseNewParams: %v", err)
	}
	jsonEqual(t, "SDK params unmarshalled and marshalled again", body, mustJSON(t, p))
	return p
}

// checkResponsesPairs checks in the SDK types that every function_call has
// a later function_call_output with its call_id and every output an
// earlier call.
func checkResponsesPairs(t *testing.T, items responses.ResponseInputParam) {
	t.Helper()
	calls := map[string]int{}
	for i, it := range items {
		switch {
		case it.OfFunctionCall != nil:
			calls[it.OfFunctionCall.CallID]++
		case it.OfFunctionCallOutput != nil:
			id := it.OfFunctionCallOutput.CallID.Value
			if calls[id] == 0 {
				t.Errorf("item %d: output for %q without an earlier call", i, id)
			}
			calls[id]--
		}
	}
	for id, n := range calls {
		if n > 0 {
			t.Errorf("call %q without an output", id)
		}
	}
}

func TestOpenAIResponses(t *testing.T) {
	params := responsesParams()
	body := mustJSON(t, params)
	unmarshalResponses(t, body)

	g := readUnpruned(t, body, wire.OpenAIResponses)
	// Name only the first output: its unit is the reasoning item, both
	// calls of the turn and both outputs.
	d, out := prune(t, g, pruneguard.Plan{Evict: ids(4)})
	if !slices.Equal(d.Evict, ids(1, 2, 3, 4, 5)) {
		t.Fatalf("evicted %v, want %v", d.Evict, ids(1, 2, 3, 4, 5))
	}
	noViolations(t, out, wire.OpenAIResponses)
	sameExcept(t, body, out, "input")
	survivors(t, array(t, body, "input"), array(t, out, "input"), []int{0, 6, 7})

	got := unmarshalResponses(t, out)
	items := got.Input.OfInputItemList
	if len(items) != 3 {
		t.Fatalf("pruned params hold %d items, want 3", len(items))
	}
	for j, i := range []int{0, 6, 7} {
		jsonEqual(t, "SDK item "+string(wire.ID(i)), mustJSON(t, params.Input.OfInputItemList[i]), mustJSON(t, items[j]))
	}
	for _, it := range items {
		if it.OfMessage == nil {
			t.Errorf("a call, output or reasoning item survived: %s", mustJSON(t, it))
		}
	}
	if items[1].OfMessage.Role != responses.EasyInputMessageRoleAssistant ||
		items[1].OfMessage.Content.OfString.Value != "Paris is sunny at 18°C, Berlin overcast at 12°C." {
		t.Errorf("assistant answer changed: %s", mustJSON(t, items[1]))
	}
	jsonEqual(t, "SDK tools", mustJSON(t, params.Tools), mustJSON(t, got.Tools))
	if got.Instructions.Value != params.Instructions.Value || got.Store.Value || got.Model != params.Model {
		t.Errorf("settings changed: instructions %q store %v model %q", got.Instructions.Value, got.Store, got.Model)
	}
	checkResponsesPairs(t, items)

	t.Run("unpruned items read back", func(t *testing.T) {
		// The unpruned body carries the reasoning item and both calls;
		// check the SDK reads them back as such.
		items := unmarshalResponses(t, body).Input.OfInputItemList
		r := items[1].OfReasoning
		if r == nil || r.ID != "rs_01" || r.EncryptedContent.Value != "gAAAAABoEncryptedReasoningBlob==" || len(r.Summary) != 1 {
			t.Fatalf("reasoning item not read back: %s", mustJSON(t, items[1]))
		}
		for i, want := range []string{"call_w1", "call_w2"} {
			c := items[2+i].OfFunctionCall
			if c == nil || c.CallID != want || c.Name != "get_weather" {
				t.Errorf("item %d is not call %s: %s", 2+i, want, mustJSON(t, items[2+i]))
			}
			o := items[4+i].OfFunctionCallOutput
			if o == nil || o.CallID.Value != want || !strings.Contains(o.Output.OfString.Value, `"temp_c"`) {
				t.Errorf("item %d is not output %s: %s", 4+i, want, mustJSON(t, items[4+i]))
			}
		}
		checkResponsesPairs(t, items)
	})
}

// ---- Anthropic Messages -----------------------------------------------------

func anthropicTool(name, desc string, props map[string]any, required ...string) anthropic.ToolUnionParam {
	tool := anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: props, Required: required}, name)
	tool.OfTool.Description = anthropic.String(desc)
	return tool
}

// weatherReport is a tool result large enough that a stub shrinks it.
func weatherReport(city string, temp int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"city":%q,"temp_c":%d,"hourly":[`, city, temp)
	for h := range 24 {
		if h > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"hour":%d,"conditions":"partly cloudy","precip_mm":0}`, h)
	}
	b.WriteString(`]}`)
	return b.String()
}

// anthropicParams is a Messages request: user text, an assistant turn with
// two tool_use blocks, the user turn with both tool_result blocks, the
// assistant's answer and a final user message.
func anthropicParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 1024,
		System: []anthropic.TextBlockParam{
			{Text: "You are a travel assistant. Use the tools for live data."},
		},
		Tools: []anthropic.ToolUnionParam{
			anthropicTool("get_weather", weatherDoc, weatherProps(), "city"),
			anthropicTool("get_time", "Local time in an IANA time zone.", map[string]any{
				"tz": map[string]any{"type": "string"},
			}, "tz"),
		},
		Messages: []anthropic.MessageParam{
			/* 0 */ anthropic.NewUserMessage(anthropic.NewTextBlock("What is the weather in Paris and Berlin right now?")),
			/* 1 */ anthropic.NewAssistantMessage(
				anthropic.NewTextBlock("Let me check both cities."),
				anthropic.NewToolUseBlock("toolu_01", map[string]any{"city": "Paris"}, "get_weather"),
				anthropic.NewToolUseBlock("toolu_02", map[string]any{"city": "Berlin"}, "get_weather"),
			),
			/* 2 */ anthropic.NewUserMessage(
				anthropic.NewToolResultBlock("toolu_01", weatherReport("Paris", 18), false),
				anthropic.NewToolResultBlock("toolu_02", weatherReport("Berlin", 12), false),
			),
			/* 3 */ anthropic.NewAssistantMessage(anthropic.NewTextBlock("Paris is sunny at 18°C, Berlin overcast at 12°C.")),
			/* 4 */ anthropic.NewUserMessage(anthropic.NewTextBlock("Which city is better for a walk this afternoon?")),
		},
		StopSequences: []string{"\n\nHuman:"},
	}
}

// unmarshalAnthropic unmarshals a body into the SDK params and checks
// that marshalling them again gives the same JSON, up to the shorthand
// the SDK expands: tool_result content or a system prompt given as a
// string (as a stub or a tombstone writes them) comes back as one text
// block, which the API defines as the same thing.
func unmarshalAnthropic(t *testing.T, body []byte) anthropic.MessageNewParams {
	t.Helper()
	var p anthropic.MessageNewParams
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("unmarshal into anthropic.MessageNewParams: %v", err)
	}
	jsonEqual(t, "SDK params unmarshalled and marshalled again", expandResultText(t, body), mustJSON(t, p))
	return p
}

// expandResultText rewrites a string system prompt, and every tool_result
// whose content is a string, into the equivalent one-text-block array.
func expandResultText(t *testing.T, body []byte) []byte {
	t.Helper()
	var top map[string]any
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatal(err)
	}
	if s, ok := top["system"].(string); ok {
		top["system"] = []any{map[string]any{"type": "text", "text": s}}
	}
	msgs, _ := top["messages"].([]any)
	for _, m := range msgs {
		content, _ := m.(map[string]any)["content"].([]any)
		for _, b := range content {
			blk, _ := b.(map[string]any)
			if s, ok := blk["content"].(string); ok && blk["type"] == "tool_result" {
				blk["content"] = []any{map[string]any{"type": "text", "text": s}}
			}
		}
	}
	return mustJSON(t, top)
}

// blocks returns the content blocks of a user or assistant message.
func blocks(m anthropic.MessageParam) []anthropic.ContentBlockParamUnion {
	switch {
	case m.OfUser != nil:
		return m.OfUser.Content
	case m.OfAssistant != nil:
		return m.OfAssistant.Content
	}
	return nil
}

// checkAnthropicPairs checks in the SDK types that each assistant turn's
// tool_use ids are answered, once each, by tool_result blocks at the start
// of the next turn.
func checkAnthropicPairs(t *testing.T, msgs []anthropic.MessageParam) {
	t.Helper()
	var open []string
	for i, m := range msgs {
		var results []string
		for _, b := range blocks(m) {
			if b.OfToolResult != nil {
				results = append(results, b.OfToolResult.ToolUseID)
			}
		}
		slices.Sort(results)
		if !slices.Equal(results, open) {
			t.Errorf("message %d answers %v, want %v", i, results, open)
		}
		open = nil
		for _, b := range blocks(m) {
			if b.OfToolUse != nil {
				open = append(open, b.OfToolUse.ID)
			}
		}
		slices.Sort(open)
	}
	if len(open) > 0 {
		t.Errorf("tool_use %v left without results at the end", open)
	}
}

func TestAnthropic(t *testing.T) {
	params := anthropicParams()
	body := mustJSON(t, params)
	unmarshalAnthropic(t, body)

	t.Run("stub results", func(t *testing.T) {
		g := readUnpruned(t, body, wire.Anthropic)
		d, out := prune(t, g, pruneguard.Plan{Stub: ids(2)})
		if len(d.Evict) != 0 || !slices.Equal(d.Stub, ids(2)) {
			t.Fatalf("decision evicts %v and stubs %v, want stub %v only", d.Evict, d.Stub, ids(2))
		}
		noViolations(t, out, wire.Anthropic)
		sameExcept(t, body, out, "messages")
		in, pruned := array(t, body, "messages"), array(t, out, "messages")
		survivors(t, in[:2], pruned[:2], []int{0, 1})
		survivors(t, in[3:], pruned[3:], []int{0, 1})
		if len(pruned) != len(in) {
			t.Fatalf("pruned body holds %d messages, want %d", len(pruned), len(in))
		}

		got := unmarshalAnthropic(t, out)
		for _, i := range []int{0, 1, 3, 4} {
			jsonEqual(t, "SDK message "+string(wire.ID(i)), mustJSON(t, params.Messages[i]), mustJSON(t, got.Messages[i]))
		}
		jsonEqual(t, "SDK system", mustJSON(t, params.System), mustJSON(t, got.System))
		jsonEqual(t, "SDK tools", mustJSON(t, params.Tools), mustJSON(t, got.Tools))

		stubbed := got.Messages[2]
		if stubbed.OfUser == nil || len(stubbed.OfUser.Content) != 2 {
			t.Fatalf("stubbed turn changed shape: %s", mustJSON(t, stubbed))
		}
		for k, id := range []string{"toolu_01", "toolu_02"} {
			r := stubbed.OfUser.Content[k].OfToolResult
			if r == nil || r.ToolUseID != id {
				t.Fatalf("block %d is not the tool_result for %s: %s", k, id, mustJSON(t, stubbed.OfUser.Content[k]))
			}
			if r.IsError.Value {
				t.Errorf("tool_result %s became an error", id)
			}
			// The stub text must be in the result, whatever shape the
			// SDK gives the content, and the report must be gone.
			raw := string(mustJSON(t, r))
			if !strings.Contains(raw, g.StubText()) || strings.Contains(raw, "hourly") {
				t.Errorf("tool_result %s does not carry the stub: %s", id, raw)
			}
			if len(r.Content) != 1 || r.Content[0].OfText == nil || r.Content[0].OfText.Text != g.StubText() {
				t.Errorf("SDK does not see the stub as the result's text content: %s", raw)
			}
		}
		checkAnthropicPairs(t, got.Messages)
	})

	t.Run("stub by policy", func(t *testing.T) {
		g := readUnpruned(t, body, wire.Anthropic)
		res, refused, err := g.Check(pruneguard.Guard{
			Budget: g.Context().Tokens() - 100,
			Policy: pruneguard.LargestResultsFirst{Stub: true},
		})
		if err != nil {
			t.Fatalf("check: %v", err)
		}
		for _, r := range refused {
			t.Logf("refusal: %+v", r)
		}
		if len(res.Decisions) == 0 || !slices.Equal(res.Decisions[0].Stub, ids(2)) {
			t.Fatalf("policy did not stub the results: %+v", res)
		}
		out, err := g.Body().Marshal()
		if err != nil {
			t.Fatal(err)
		}
		noViolations(t, out, wire.Anthropic)
		got := unmarshalAnthropic(t, out)
		checkAnthropicPairs(t, got.Messages)
	})
}

// ---- Schema withdrawal ------------------------------------------------------

// TestSchemaWithdrawal drops the get_weather schema while its calls stay:
// the guard keeps the calls, takes the schema out of the tools array and
// writes a tombstone line into the system prompt, and the body still
// unmarshals into the SDK type.
func TestSchemaWithdrawal(t *testing.T) {
	cases := []struct {
		name      string
		dialect   wire.Dialect
		params    any
		tools     string
		systemOf  func(t *testing.T, body []byte) string
		toolNames func(t *testing.T, body []byte) []string
		// messages checks that the conversation is untouched but for
		// the tombstone.
		messages func(t *testing.T, in, out []json.RawMessage)
	}{
		{
			name: "openai chat", dialect: wire.OpenAIChat, params: chatParams(), tools: "tools",
			systemOf: chatSystem, toolNames: chatTools,
			messages: func(t *testing.T, in, out []json.RawMessage) {
				// The tombstone goes into the system message.
				survivors(t, in[1:], out[1:], []int{0, 1, 2, 3, 4, 5, 6})
			},
		},
		{
			name: "openai responses", dialect: wire.OpenAIResponses, params: responsesParams(), tools: "tools",
			systemOf: func(t *testing.T, body []byte) string {
				return unmarshalResponses(t, body).Instructions.Value
			},
			messages: func(t *testing.T, in, out []json.RawMessage) {
				survivors(t, in, out, []int{0, 1, 2, 3, 4, 5, 6, 7})
			},
			toolNames: func(t *testing.T, body []byte) []string {
				var names []string
				for _, tl := range unmarshalResponses(t, body).Tools {
					names = append(names, tl.OfFunction.Name)
				}
				return names
			},
		},
		{
			name: "anthropic", dialect: wire.Anthropic, params: anthropicParams(), tools: "tools",
			systemOf: anthropicSystem, toolNames: anthropicTools, messages: sameMessages,
		},
		{
			// The tombstone becomes a string system prompt, which the
			// SDK reads as one text block.
			name: "anthropic without system", dialect: wire.Anthropic, params: anthropicWithoutSystem(), tools: "tools",
			systemOf: anthropicSystem, toolNames: anthropicTools, messages: sameMessages,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := mustJSON(t, tc.params)
			g := readUnpruned(t, body, tc.dialect)
			d, out := prune(t, g, pruneguard.Plan{DropSchemas: []string{"get_weather"}})
			if !slices.Equal(d.DropSchemas, []string{"get_weather"}) || len(d.Tombstones) != 1 || d.Tombstones[0].Tool != "get_weather" {
				t.Fatalf("decision drops %v with tombstones %+v, want get_weather behind a tombstone", d.DropSchemas, d.Tombstones)
			}
			if len(d.Evict) != 0 || len(d.Stub) != 0 {
				t.Errorf("schema withdrawal touched messages: evict %v stub %v", d.Evict, d.Stub)
			}
			noViolations(t, out, tc.dialect)

			if names := tc.toolNames(t, out); !slices.Equal(names, []string{"get_time"}) {
				t.Errorf("tools after withdrawal: %v, want [get_time]", names)
			}
			jsonEqual(t, "surviving tool", array(t, body, tc.tools)[1], array(t, out, tc.tools)[0])
			msgKey := "messages"
			if tc.dialect == wire.OpenAIResponses {
				msgKey = "input"
			}
			tc.messages(t, array(t, body, msgKey), array(t, out, msgKey))
			switch tc.dialect {
			case wire.OpenAIChat:
				sameExcept(t, body, out, "messages", "tools")
			case wire.OpenAIResponses:
				sameExcept(t, body, out, "instructions", "tools")
			case wire.Anthropic:
				sameExcept(t, body, out, "system", "tools")
			}
			before, after := tc.systemOf(t, body), tc.systemOf(t, out)
			if !strings.HasPrefix(after, before) || !strings.Contains(after[len(before):], d.Tombstones[0].Text) {
				t.Errorf("system prompt does not carry the tombstone\nbefore: %q\n after: %q\ntombstone: %q", before, after, d.Tombstones[0].Text)
			}
			// Every get_weather call is still in the body.
			if n := strings.Count(string(out), `get_weather`); n < 2 {
				t.Errorf("calls to get_weather lost: %s", out)
			}
		})
	}
}

// A Chat body without a system message has nowhere to put a tombstone
// (some models and servers reject a system message a prune would add):
// the schema of get_weather, a tool the model may still use to change
// state (no annotations), stays while its calls do, and the body is not
// touched.
func TestSchemaWithdrawalWithoutSystemPrompt(t *testing.T) {
	body := mustJSON(t, chatWithoutSystem())
	g := readUnpruned(t, body, wire.OpenAIChat)
	d, refused, err := g.Prune(pruneguard.Plan{DropSchemas: []string{"get_weather"}})
	if err == nil || d != nil || !slices.ContainsFunc(refused, func(r wire.Refusal) bool {
		return r.Gate == "schema" && slices.Equal(r.Tools, []string{"get_weather"})
	}) {
		t.Fatalf("decision %+v, refusals %+v, error %v", d, refused, err)
	}
	out, err := g.Body().Marshal()
	if err != nil || !bytes.Equal(out, body) {
		t.Errorf("body changed: %s", out)
	}
	if chatSystem(t, out) != "" {
		t.Errorf("a system message was added")
	}
}

func chatWithoutSystem() openai.ChatCompletionNewParams {
	p := chatParams()
	p.Messages = p.Messages[1:]
	return p
}

// chatSystem is the text of the leading system message, or "" when the
// first message is not one.
func chatSystem(t *testing.T, body []byte) string {
	p := unmarshalChat(t, body)
	if p.Messages[0].OfSystem == nil {
		return ""
	}
	return p.Messages[0].OfSystem.Content.OfString.Value
}

func chatTools(t *testing.T, body []byte) []string {
	var names []string
	for _, tl := range unmarshalChat(t, body).Tools {
		names = append(names, tl.OfFunction.Function.Name)
	}
	return names
}

func anthropicWithoutSystem() anthropic.MessageNewParams {
	p := anthropicParams()
	p.System = nil
	return p
}

func anthropicSystem(t *testing.T, body []byte) string {
	var texts []string
	for _, b := range unmarshalAnthropic(t, body).System {
		texts = append(texts, b.Text)
	}
	return strings.Join(texts, "\n")
}

func anthropicTools(t *testing.T, body []byte) []string {
	var names []string
	for _, tl := range unmarshalAnthropic(t, body).Tools {
		names = append(names, tl.OfTool.Name)
	}
	return names
}

func sameMessages(t *testing.T, in, out []json.RawMessage) {
	t.Helper()
	keep := make([]int, len(in))
	for i := range keep {
		keep[i] = i
	}
	survivors(t, in, out, keep)
}

// weatherDoc and weatherProps describe get_weather as a real tool would:
// large enough that withdrawing it behind a one-line tombstone saves room,
// which the wire screen requires of a schema edit.
const weatherDoc = "Current weather and a short forecast for a city. Use it whenever the user asks " +
	"about weather, temperature, rain or wind; call it once per city, in parallel for several cities."

func weatherProps() map[string]any {
	return map[string]any{
		"city":    map[string]any{"type": "string", "description": "City name, optionally with the country, e.g. \"Paris, FR\"."},
		"unit":    map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}, "description": "Temperature unit of the answer."},
		"days":    map[string]any{"type": "integer", "minimum": 0, "maximum": 7, "description": "Days of forecast to include after today."},
		"details": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []string{"wind", "humidity", "uv", "pressure"}}, "description": "Extra readings to include."},
	}
}

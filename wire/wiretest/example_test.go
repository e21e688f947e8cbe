package wiretest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/pruneguard/pruneguard/wire/wiretest"
)

// A provider answers a request that declares tools with a tool call, and
// refuses a body the real API would refuse.
func ExampleNewProvider() {
	p := wiretest.NewProvider(wiretest.Config{}) // in a test: Config{Report: t}
	defer p.Close()

	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"Read main.go."}],
		"tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object"}}}]}`
	res, err := http.Post(p.URL()+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	var out struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				ToolCalls []struct {
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
		}
	}
	_ = json.NewDecoder(res.Body).Decode(&out)
	res.Body.Close()
	call := out.Choices[0].Message.ToolCalls[0]
	fmt.Println(out.Choices[0].FinishReason, call.ID, call.Function.Name, call.Function.Arguments)

	// A tool message whose call is not in the history.
	orphan := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"call_x","content":"?"}]}`
	res, err = http.Post(p.URL()+"/v1/chat/completions", "application/json", strings.NewReader(orphan))
	if err != nil {
		panic(err)
	}
	res.Body.Close()
	fmt.Println(res.StatusCode, p.Count(), p.Err() != nil)
	// Output:
	// tool_calls call_1 read_file {"path":"file1.go"}
	// 400 1 true
}

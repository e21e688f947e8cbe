// Command eino runs an eino ReAct agent whose message list pruneguard
// guards, and prints what the guard did before each model call: the
// tokens before and after, the tool results it cleared, the messages it
// evicted and what it refused to touch.
//
// The model is scripted (a bug hunt over a small Go project) and the tools
// return canned files, so the program needs no network and prints the same
// every run:
//
//	go run .
//
// The session's budget is 3,000 tokens; the files the agent reads add up
// to several times that. read_file and grep are annotated read-only and
// closed-world, so their results can be read again and may be cleared;
// run_tests is annotated read-only but not closed-world: its output is
// irreducible and stays, and since it changes no file the reads before it
// stay reconstructible (a tool left unannotated would count as mutating
// everything, and make every earlier read irreducible).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "eino example:", err)
		os.Exit(1)
	}
}

// files are what read_file returns: a few lines, repeated to a size.
var files = map[string]int{
	"go.mod": 300, "main.go": 2400, "parser.go": 6000, "lexer.go": 4800,
	"parser_test.go": 3600, "token.go": 1600,
}

func fileText(path string) string {
	size, ok := files[path]
	if !ok {
		return "open " + path + ": no such file"
	}
	line := fmt.Sprintf("// %s: func parse(r io.Reader) (*Node, error) { ... }\n", path)
	return strings.Repeat(line, size/len(line)+1)[:size]
}

type pathArgs struct {
	Path string `json:"path"`
}

type grepArgs struct {
	Pattern string `json:"pattern"`
}

type testArgs struct {
	Pkg string `json:"pkg"`
}

func tools() ([]tool.BaseTool, error) {
	read, err := utils.InferTool("read_file", "Read a file of the project.", func(_ context.Context, a pathArgs) (string, error) {
		return fileText(a.Path), nil
	})
	if err != nil {
		return nil, err
	}
	grep, err := utils.InferTool("grep", "Search the project.", func(_ context.Context, a grepArgs) (string, error) {
		return "parser.go:88: // TODO(" + a.Pattern + "): handle EOF inside a string literal", nil
	})
	if err != nil {
		return nil, err
	}
	test, err := utils.InferTool("run_tests", "Run the tests of a package.", func(_ context.Context, a testArgs) (string, error) {
		return "--- FAIL: TestParseString (0.00s)\n    parser_test.go:42: unexpected EOF in " + a.Pkg, nil
	})
	if err != nil {
		return nil, err
	}
	return []tool.BaseTool{read, grep, test}, nil
}

// script is what the model does, one step per call: the tool calls to
// make, or (when empty) the final answer.
var script = [][]schema.FunctionCall{
	{{Name: "read_file", Arguments: `{"path":"go.mod"}`}},
	{{Name: "read_file", Arguments: `{"path":"main.go"}`}, {Name: "read_file", Arguments: `{"path":"parser.go"}`}},
	{{Name: "run_tests", Arguments: `{"pkg":"./parser"}`}},
	{{Name: "read_file", Arguments: `{"path":"parser_test.go"}`}},
	{{Name: "read_file", Arguments: `{"path":"lexer.go"}`}},
	{{Name: "grep", Arguments: `{"pattern":"eof"}`}},
	{{Name: "read_file", Arguments: `{"path":"token.go"}`}},
	{{Name: "read_file", Arguments: `{"path":"parser.go"}`}},
	nil,
}

// scripted is a tool-calling chat model that follows script and checks
// that every list it is sent is a well-formed conversation.
type scripted struct {
	step  int
	calls int
	bad   []string
}

func (m *scripted) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	if err := wellFormed(in); err != nil {
		m.bad = append(m.bad, fmt.Sprintf("call %d: %v", m.step+1, err))
	}
	if m.step >= len(script) {
		return nil, fmt.Errorf("the script has no step %d", m.step+1)
	}
	fcs := script[m.step]
	m.step++
	if len(fcs) == 0 {
		return schema.AssistantMessage("The parser does not handle EOF inside a string literal (parser.go:88).", nil), nil
	}
	var tcs []schema.ToolCall
	for _, fc := range fcs {
		m.calls++
		tcs = append(tcs, schema.ToolCall{ID: fmt.Sprintf("call_%d", m.calls), Type: "function", Function: fc})
	}
	return schema.AssistantMessage("", tcs), nil
}

func (m *scripted) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	out, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{out}), nil
}

func (m *scripted) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

// wellFormed checks what providers check: each tool result answers a
// call of the assistant turn just before it, and no call goes unanswered.
func wellFormed(msgs []*schema.Message) error {
	open := map[string]bool{}
	for _, m := range msgs {
		if m.Role == schema.Tool {
			if !open[m.ToolCallID] {
				return fmt.Errorf("result %s has no call before it", m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			continue
		}
		if len(open) > 0 {
			return fmt.Errorf("%d calls unanswered", len(open))
		}
		for _, tc := range m.ToolCalls {
			open[tc.ID] = true
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("%d calls unanswered", len(open))
	}
	return nil
}

func run(w io.Writer) error {
	ctx := context.Background()
	ts, err := tools()
	if err != nil {
		return err
	}
	closed := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}
	tests := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true)}
	guarded, err := einoguard.Tools(ctx, ts, map[string]pruneguard.Annotations{"read_file": closed, "grep": closed, "run_tests": tests})
	if err != nil {
		return err
	}
	call := 0
	s, err := einoguard.New(einoguard.Config{
		Guard: pruneguard.Guard{Budget: 3000, Policy: pruneguard.KeepLastToolUses{Keep: 2, Stub: true}},
		Tools: guarded,
		OnReport: func(_ context.Context, r einoguard.Report) {
			call++
			report(w, call, r)
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "budget 3000 tokens; keep the last 2 tool results, clear older ones")
	m := &scripted{}
	agent, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: m,
		ToolsConfig:      compose.ToolsNodeConfig{Tools: ts},
		MessageModifier:  s.Modifier(),
		MaxStep:          40,
	})
	if err != nil {
		return err
	}
	answer, err := agent.Generate(ctx, []*schema.Message{
		schema.SystemMessage("You are a careful Go developer. Find the bug; read what you need."),
		schema.UserMessage("TestParseString fails. Why?"),
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "answer: %s\n", answer.Content)
	if len(m.bad) > 0 {
		return fmt.Errorf("the model was sent a malformed conversation: %s", strings.Join(m.bad, "; "))
	}
	fmt.Fprintf(w, "every one of the %d model calls got a well-formed conversation\n", m.step)
	if st, ok := s.Tool("read_file"); ok {
		fmt.Fprintf(w, "read_file: %d call(s) re-read a result the guard had cleared\n", st.Refetches)
	}
	return nil
}

// report prints one pass of the guard.
func report(w io.Writer, call int, r einoguard.Report) {
	res := r.Result
	if res.Outcome == pruneguard.UnderBudget {
		fmt.Fprintf(w, "call %d: %5d tokens, under budget; %d messages sent\n", call, res.Before, r.Sent)
		return
	}
	fmt.Fprintf(w, "call %d: %5d -> %d tokens (%s); %d messages sent\n", call, res.Before, res.After, res.Outcome, r.Sent)
	if len(r.Stubbed) > 0 {
		fmt.Fprintf(w, "        cleared %s\n", describe(r.Stubbed))
	}
	if len(r.Evicted) > 0 {
		fmt.Fprintf(w, "        evicted %s\n", describe(r.Evicted))
	}
	for _, rf := range r.Refused {
		fmt.Fprintf(w, "        kept %s: %s\n", describe(rf.Messages), rf.Violation.Code)
	}
	if r.Err != nil {
		fmt.Fprintf(w, "        error: %v\n", r.Err)
	}
}

func describe(ms []*schema.Message) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		switch {
		case m.Role == schema.Tool:
			parts[i] = fmt.Sprintf("%s %s (%d tokens)", m.ToolName, m.ToolCallID, einoguard.ApproxTokens(m))
		default:
			parts[i] = string(m.Role)
		}
	}
	return strings.Join(parts, ", ")
}

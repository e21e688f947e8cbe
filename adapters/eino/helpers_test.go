package einoguard_test

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
)

// closedWorld annotates a tool that only reads and whose results can be
// read again.
var closedWorld = pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}

// checkConversation reports the first way msgs breaks the rules every
// tool-calling provider enforces: each tool message answers a call of
// the assistant message just before its block of tool messages, no call
// is answered twice, and every call is answered before anything else
// follows (and before the list ends).
func checkConversation(msgs []*schema.Message) error {
	var open map[string]bool // calls of the last assistant turn not yet answered
	for i, m := range msgs {
		if m == nil {
			return fmt.Errorf("message %d is nil", i)
		}
		if m.Role == schema.Tool {
			if !open[m.ToolCallID] {
				return fmt.Errorf("message %d: tool result for call %q, which the assistant turn before it did not make or which was answered already", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			continue
		}
		if len(open) > 0 {
			return fmt.Errorf("message %d (%s): calls %v have no result", i, m.Role, keys(open))
		}
		open = nil
		if m.Role == schema.Assistant && len(m.ToolCalls) > 0 {
			open = make(map[string]bool)
			for _, tc := range m.ToolCalls {
				if open[tc.ID] {
					return fmt.Errorf("message %d: call id %q twice in one turn", i, tc.ID)
				}
				open[tc.ID] = true
			}
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("the list ends with calls %v unanswered", keys(open))
	}
	return nil
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// fakeModel is a scripted tool-calling chat model. After each user
// message it makes rounds tool-call rounds (every third one a parallel
// pair of calls, every call of the deploy tool's turn alone), each
// assistant turn with reasoning content, then answers in text. It checks
// every list it receives and records it.
type fakeModel struct {
	rounds int
	deploy int // every deploy-th round (from the first) calls deploy; 0: never

	mu      sync.Mutex
	calls   int
	done    map[string]int // rounds made for each task
	deploys int            // deploy calls made
	before  []int          // deploy calls made before each model call
	inputs  [][]*schema.Message
	errs    []error
	tools   []*schema.ToolInfo
}

func (f *fakeModel) Generate(ctx context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inputs = append(f.inputs, input)
	f.before = append(f.before, f.deploys)
	if err := checkConversation(input); err != nil {
		f.errs = append(f.errs, fmt.Errorf("model call %d: %w", len(f.inputs), err))
	}
	// Rounds made since the last user message: counted here, since the
	// guard may have pruned the earlier rounds from the input.
	task := ""
	for i := len(input) - 1; i >= 0; i-- {
		if input[i].Role == schema.User {
			task = input[i].Content
			break
		}
	}
	if f.done == nil {
		f.done = make(map[string]int)
	}
	done := f.done[task]
	if done >= f.rounds {
		return schema.AssistantMessage(fmt.Sprintf("done after %d rounds", done), nil), nil
	}
	f.done[task]++
	call := func(name, args string) schema.ToolCall {
		f.calls++
		return schema.ToolCall{ID: fmt.Sprintf("call_%d", f.calls), Type: "function",
			Function: schema.FunctionCall{Name: name, Arguments: args}}
	}
	var tcs []schema.ToolCall
	switch {
	case f.deploy > 0 && done%f.deploy == 0:
		tcs = append(tcs, call("deploy", fmt.Sprintf(`{"service":"svc-%d"}`, done)))
		f.deploys++
	case done%3 == 2:
		tcs = append(tcs, call("read_file", fmt.Sprintf(`{"path":"a%d.go"}`, done)),
			call("read_file", fmt.Sprintf(`{"path":"b%d.go"}`, done)))
	default:
		tcs = append(tcs, call("read_file", fmt.Sprintf(`{"path":"f%d.go"}`, done)))
	}
	m := schema.AssistantMessage("", tcs)
	m.ReasoningContent = fmt.Sprintf("round %d: I should look at more files", done)
	return m, nil
}

func (f *fakeModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	m, err := f.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{m}), nil
}

func (f *fakeModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tools = tools
	return f, nil
}

func (f *fakeModel) deploysBefore(i int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.before[i]
}

func (f *fakeModel) snapshot() ([][]*schema.Message, []error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]*schema.Message(nil), f.inputs...), append([]error(nil), f.errs...)
}

type readArgs struct {
	Path string `json:"path" jsonschema:"description=the file to read"`
}

type deployArgs struct {
	Service string `json:"service"`
}

// testTools returns read_file (2,000 bytes of content per call, 500
// tokens by the approximation) and deploy (a short, irreducible receipt).
// scoped gives read_file and deploy the scopes they touch: a deploy
// changes the cluster, not the files read_file reads, so it leaves their
// results reconstructible.
func scoped(tools []pruneguard.Tool) {
	for i := range tools {
		switch tools[i].Name {
		case "read_file":
			tools[i].Scope = "repo"
		case "deploy":
			tools[i].Scope = "cluster"
		}
	}
}

func testTools() []tool.BaseTool {
	read, err := utils.InferTool("read_file", "read a file", func(_ context.Context, a readArgs) (string, error) {
		return strings.Repeat("x", 1980) + " end of " + a.Path, nil
	})
	if err != nil {
		panic(err)
	}
	deploy, err := utils.InferTool("deploy", "deploy a service", func(_ context.Context, a deployArgs) (string, error) {
		return "deployed " + a.Service + " as release r-" + a.Service, nil
	})
	if err != nil {
		panic(err)
	}
	return []tool.BaseTool{read, deploy}
}

package einoguard_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
)

const systemPrompt = "You are a careful coding agent."

// recorder keeps every report a session gives.
type recorder struct {
	mu      sync.Mutex
	reports []einoguard.Report
}

func (r *recorder) add(_ context.Context, rep einoguard.Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, rep)
}

func (r *recorder) all() []einoguard.Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]einoguard.Report(nil), r.reports...)
}

func newSession(t *testing.T, ctx context.Context, budget int, policy pruneguard.Policy, rec *recorder) *einoguard.Session {
	t.Helper()
	tools, err := einoguard.Tools(ctx, testTools(), map[string]pruneguard.Annotations{"read_file": closedWorld})
	if err != nil {
		t.Fatal(err)
	}
	scoped(tools)
	s, err := einoguard.New(einoguard.Config{
		Guard:    pruneguard.Guard{Budget: budget, Policy: policy},
		Tools:    tools,
		OnReport: rec.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkInputs asserts what every model call must have seen: a clean
// conversation (checked by the model), the system prompt first, the task
// as the last user message, and every deploy call made so far with its
// receipt intact.
func checkInputs(t *testing.T, f *fakeModel, task func(i int) string) {
	t.Helper()
	inputs, errs := f.snapshot()
	for _, err := range errs {
		t.Error(err)
	}
	if len(inputs) == 0 {
		t.Fatal("the model was never called")
	}
	for i, in := range inputs {
		if in[0].Role != schema.System || strings.TrimSpace(in[0].Content) != systemPrompt { // adk appends a newline per middleware
			t.Errorf("model call %d: first message is %s %q, not the system prompt", i+1, in[0].Role, in[0].Content)
		}
		var users []string
		got := 0
		for _, m := range in {
			if m.Role == schema.User {
				users = append(users, m.Content)
			}
			if m.Role == schema.Tool && m.ToolName == "deploy" {
				if !strings.HasPrefix(m.Content, "deployed ") {
					t.Errorf("model call %d: deploy receipt %s lost its content: %q", i+1, m.ToolCallID, m.Content)
				}
				got++
			}
		}
		if want := task(i); len(users) == 0 || users[len(users)-1] != want {
			t.Errorf("model call %d: user messages %q, want the last to be %q", i+1, users, want)
		}
		if want := f.deploysBefore(i); got != want {
			t.Errorf("model call %d: %d deploy receipts, want all %d", i+1, got, want)
		}
	}
}

// checkPruned asserts that the session pruned, and that each pass ended
// within the budget.
func checkPruned(t *testing.T, reps []einoguard.Report, budget int) (stubbed, evicted int) {
	t.Helper()
	for i, r := range reps {
		if r.Err != nil {
			t.Errorf("pass %d: %v", i+1, r.Err)
		}
		if r.Result.After > budget {
			t.Errorf("pass %d: %d tokens after the check, budget %d (%s, refused %v)", i+1, r.Result.After, budget, r.Result.Outcome, r.Result.Refused)
		}
		stubbed += len(r.Stubbed)
		evicted += len(r.Evicted)
		t.Logf("pass %d: took %d rebuilt=%v %s %d->%d tokens, stubbed %d evicted %d, sent %d", i+1, r.Taken, r.Rebuilt,
			r.Result.Outcome, r.Result.Before, r.Result.After, len(r.Stubbed), len(r.Evicted), r.Sent)
	}
	if stubbed+evicted == 0 {
		t.Fatal("the session never pruned")
	}
	return stubbed, evicted
}

func TestReactAgentModifier(t *testing.T) {
	for _, mode := range []string{"modifier", "rewriter"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			rec := &recorder{}
			const budget = 3000
			s := newSession(t, ctx, budget, pruneguard.KeepLastToolUses{Keep: 2, Stub: true}, rec)
			f := &fakeModel{rounds: 14, deploy: 5}
			cfg := &react.AgentConfig{
				ToolCallingModel: f,
				ToolsConfig:      compose.ToolsNodeConfig{Tools: testTools()},
				MaxStep:          100,
			}
			if mode == "modifier" {
				cfg.MessageModifier = s.Modifier()
			} else {
				cfg.MessageRewriter = s.Modifier()
			}
			agent, err := react.NewAgent(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			const task = "find the bug in the parser"
			out, err := agent.Generate(ctx, []*schema.Message{schema.SystemMessage(systemPrompt), schema.UserMessage(task)})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out.Content, "done after 14 rounds") {
				t.Fatalf("final answer %q", out.Content)
			}
			checkInputs(t, f, func(int) string { return task })
			reps := rec.all()
			stubbed, evicted := checkPruned(t, reps, budget)
			if stubbed == 0 || evicted != 0 {
				t.Errorf("stubbed %d, evicted %d: keep-last-tool-uses with stubs only stubs", stubbed, evicted)
			}
			taken := 0
			for i, r := range reps {
				if r.Rebuilt {
					t.Errorf("pass %d rebuilt: the list eino passed was not recognised as extending the last", i+1)
				}
				taken += r.Taken
			}
			inputs, _ := f.snapshot()
			// Every message was taken in once: the two of the input, and
			// the answer and results of each round.
			msgs := 2
			for _, m := range inputs[len(inputs)-1] {
				if m.Role == schema.Assistant || m.Role == schema.Tool {
					msgs++
				}
			}
			if taken != msgs {
				t.Errorf("took in %d messages over %d passes, want %d", taken, len(reps), msgs)
			}
			// The stubbed results stay answered, under the placeholder.
			last := inputs[len(inputs)-1]
			stubs := 0
			for _, m := range last {
				if m.Role == schema.Tool && m.Content == pruneguard.DefaultStubText {
					stubs++
				}
			}
			if stubs == 0 {
				t.Error("the last model call saw no stubbed result")
			}
		})
	}
}

func TestADKChatModelAgent(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		name := "generate"
		if streaming {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			rec := &recorder{}
			const budget = 2500
			s := newSession(t, ctx, budget, pruneguard.OldestFirst{}, rec)
			f := &fakeModel{rounds: 6, deploy: 4}
			agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
				Name:          "coder",
				Description:   "reads code",
				Instruction:   systemPrompt,
				Model:         f,
				ToolsConfig:   adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: testTools()}},
				MaxIterations: 50,
				Middlewares:   []adk.AgentMiddleware{s.Middleware()},
			})
			if err != nil {
				t.Fatal(err)
			}
			runner := adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent, EnableStreaming: streaming})
			var history []adk.Message
			tasks := []string{"read the parser", "now read the lexer", "and the printer"}
			var taskAt []int // model calls made before each run
			for _, task := range tasks {
				inputs, _ := f.snapshot()
				taskAt = append(taskAt, len(inputs))
				history = append(history, schema.UserMessage(task))
				iter := runner.Run(ctx, history)
				for {
					ev, ok := iter.Next()
					if !ok {
						break
					}
					if ev.Err != nil {
						t.Fatal(ev.Err)
					}
					if ev.Output == nil || ev.Output.MessageOutput == nil {
						continue
					}
					m, err := ev.Output.MessageOutput.GetMessage()
					if err != nil && !errors.Is(err, io.EOF) {
						t.Fatal(err)
					}
					history = append(history, m)
				}
			}
			taskOf := func(i int) string {
				k := 0
				for k+1 < len(taskAt) && taskAt[k+1] <= i {
					k++
				}
				return tasks[k]
			}
			checkInputs(t, f, taskOf)
			reps := rec.all()
			_, evicted := checkPruned(t, reps, budget)
			if evicted == 0 {
				t.Error("oldest-first evicted nothing")
			}
			rebuilt := 0
			for _, r := range reps {
				if r.Rebuilt {
					rebuilt++
				}
			}
			// Each Run starts from copies of the history the last one
			// left: the same history, taken up where it was.
			if rebuilt != 0 {
				t.Errorf("%d rebuilds over %d runs: the copies adk hands back were not recognised", rebuilt, len(tasks))
			}
		})
	}
}

// TestGraphPreHandler guards a hand-built compose graph: a chat model node
// whose state pre-handler is the session's.
func TestGraphPreHandler(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	s := newSession(t, ctx, 500, pruneguard.OldestFirst{}, rec)
	f := &fakeModel{rounds: 1}
	type state struct{}
	g := compose.NewGraph[[]*schema.Message, *schema.Message](compose.WithGenLocalState(func(context.Context) *state { return &state{} }))
	if err := g.AddChatModelNode("model", f, compose.WithStatePreHandler(einoguard.PreHandler[*state](s))); err != nil {
		t.Fatal(err)
	}
	_ = g.AddEdge(compose.START, "model")
	_ = g.AddEdge("model", compose.END)
	r, err := g.Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A finished read, then a new question: the read goes, the system
	// prompt and the question stay.
	history := []*schema.Message{
		schema.SystemMessage(systemPrompt),
		schema.UserMessage("read a.go"),
		schema.AssistantMessage("", []schema.ToolCall{{ID: "c1", Function: schema.FunctionCall{Name: "read_file", Arguments: `{"path":"a.go"}`}}}),
		schema.ToolMessage(strings.Repeat("y", 4000), "c1", schema.WithToolName("read_file")),
		schema.AssistantMessage("a.go is fine", nil),
		schema.UserMessage("what about b.go?"),
	}
	if _, err := r.Invoke(ctx, history); err != nil {
		t.Fatal(err)
	}
	inputs, errs := f.snapshot()
	for _, err := range errs {
		t.Error(err)
	}
	in := inputs[0]
	for _, m := range in {
		if m.Role == schema.Tool || len(m.ToolCalls) > 0 {
			t.Errorf("the model saw %s message %q: the read should have gone", m.Role, m.ToolCallID)
		}
	}
	if in[0].Content != systemPrompt || in[len(in)-1].Content != "what about b.go?" {
		t.Errorf("model input %v lost the system prompt or the question", contents(in))
	}
	if len(history) != 6 || history[3].Content == "" {
		t.Error("the pre-handler changed the caller's list")
	}
}

func contents(ms []*schema.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Role) + ":" + m.Content
		if len(out[i]) > 40 {
			out[i] = out[i][:40]
		}
	}
	return out
}

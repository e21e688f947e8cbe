package einoguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
	"github.com/pruneguard/pruneguard/spill"
)

// The recall tool in eino's form: the description the model reads is the
// tool's, not buried in its parameters, and the parameters keep their
// constraints.
func TestRecallToolInfo(t *testing.T) {
	info, err := einoguard.RecallToolInfo()
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Description string `json:"description"`
	}
	if err := json.Unmarshal(spill.RecallTool().Schema, &want); err != nil {
		t.Fatal(err)
	}
	if info.Name != spill.RecallToolName || info.Desc != want.Description || info.Desc == "" {
		t.Errorf("info %q: %q", info.Name, info.Desc)
	}
	js, err := info.ToJSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(js)
	var params struct {
		Description string                     `json:"description"`
		Properties  map[string]json.RawMessage `json:"properties"`
		Additional  *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(b, &params); err != nil {
		t.Fatal(err)
	}
	if params.Description != "" || len(params.Properties) != 3 || params.Additional == nil || *params.Additional ||
		!strings.Contains(string(params.Properties["query"]), `"maxLength":256`) || !strings.Contains(string(params.Properties["page"]), `"minimum":1`) {
		t.Errorf("parameters %s", b)
	}
	// Described for the guard, it is spill.RecallTool with its annotations.
	ts, err := einoguard.Tools(context.Background(), []tool.BaseTool{einoguard.RecallTool(nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].Name != spill.RecallToolName || ts[0].Mutating() || ts[0].OutputClass() != pruneguard.Reconstructible ||
		string(ts[0].Schema) != string(spill.RecallTool().Schema) || ts[0].Annotations.Destructive() || !ts[0].Annotations.Idempotent() || ts[0].Annotations.OpenWorld() {
		t.Errorf("recall described as %+v", ts)
	}
}

// The tool answers with the Spiller; what it refuses is text for the
// model, and only a context done fails the call.
func TestRecallToolRuns(t *testing.T) {
	ctx := context.Background()
	sp := &spill.Spiller{Store: &spill.Memory{}, Namespace: "c"}
	p, err := sp.SpillMessages(ctx, []pruneguard.Message{{ID: "r1", Role: pruneguard.RoleTool, Content: []byte("receipt INC-4711")}})
	if err != nil {
		t.Fatal(err)
	}
	rt := einoguard.RecallTool(sp)
	out, err := rt.InvokableRun(ctx, fmt.Sprintf(`{"key":%q}`, p.Key))
	if err != nil || !strings.Contains(out, "INC-4711") {
		t.Errorf("recall by key: %q, %v", out, err)
	}
	out, err = rt.InvokableRun(ctx, `{"key":"seg-nothing"}`)
	if err != nil || !strings.HasPrefix(out, "recall failed: ") {
		t.Errorf("an unknown key: %q, %v", out, err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := rt.InvokableRun(done, fmt.Sprintf(`{"key":%q}`, p.Key)); err == nil {
		t.Error("a cancelled call did not fail")
	}
	if _, err := einoguard.RecallTool(&spill.Spiller{}).InvokableRun(ctx, `{"key":"k"}`); !errors.Is(err, spill.ErrNoStore) {
		t.Errorf("no store: %v", err)
	}
}

// A recall answer the model has read can leave like any reconstructible
// result, a mutating call of everything after it notwithstanding: it is
// stubbed with the stub text, never spilled again.
func TestRecallAnswersAreNotSpilledAgain(t *testing.T) {
	ctx := context.Background()
	sp := &spill.Spiller{Store: &spill.Memory{}, Namespace: "conv-2"}
	s := mustNew(t, einoguard.Config{
		Guard: pruneguard.Guard{Budget: 1500, Policy: pruneguard.KeepLastToolUses{Keep: 1, Stub: true}, Spill: sp},
		Tools: []pruneguard.Tool{readTool},
	})
	msgs := deployConv(true, 3)
	out, r := prune(t, s, msgs)
	if len(r.Result.Spills) == 0 {
		t.Fatalf("nothing spilled: %+v", r.Result)
	}
	key := r.Result.Spills[0].Pointer.Key
	answer, err := einoguard.RecallTool(sp).InvokableRun(ctx, fmt.Sprintf(`{"key":%q}`, key))
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs,
		schema.AssistantMessage("", []schema.ToolCall{{ID: "k1", Function: schema.FunctionCall{Name: spill.RecallToolName, Arguments: fmt.Sprintf(`{"key":%q}`, key)}}}),
		schema.ToolMessage(answer, "k1", schema.WithToolName(spill.RecallToolName)),
		schema.AssistantMessage("r-1 it was; deploying again", []schema.ToolCall{{ID: "d9", Function: schema.FunctionCall{Name: "deploy", Arguments: `{}`}}}),
		schema.ToolMessage("deployed r-9", "d9", schema.WithToolName("deploy")),
		schema.AssistantMessage("done", nil))
	out, r = prune(t, s, msgs)
	answered := msgs[len(msgs)-4]
	stubbed := false
	for _, m := range r.Stubbed {
		stubbed = stubbed || m == answered
	}
	if !stubbed {
		t.Fatalf("the recall answer stayed: stubbed %v (%s)", contents(r.Stubbed), r.Result.Outcome)
	}
	for _, m := range out {
		if m.ToolCallID == "k1" && m.Content != pruneguard.DefaultStubText {
			t.Errorf("the recall answer shows %q, want the stub text: calling recall again gives it back", m.Content)
		}
	}
	for _, sr := range r.Result.Spills {
		if sr.Tokens >= einoguard.ApproxTokens(answered) {
			t.Errorf("a spill of %d tokens: the recall answer (%d) was spilled again", sr.Tokens, einoguard.ApproxTokens(answered))
		}
	}
}

// With Guard.Spill set, a tool named recall must be the spill's.
func TestRecallMustBeTheSpills(t *testing.T) {
	sp := &spill.Spiller{Store: &spill.Memory{}}
	_, err := einoguard.New(einoguard.Config{
		Guard: pruneguard.Guard{Budget: 100, Spill: sp},
		Tools: []pruneguard.Tool{{Name: spill.RecallToolName}},
	})
	if !errors.Is(err, einoguard.ErrToolInfo) {
		t.Errorf("a mutating recall: %v", err)
	}
	if _, err := einoguard.New(einoguard.Config{Guard: pruneguard.Guard{Budget: 100, Spill: sp}, Tools: []pruneguard.Tool{einoguard.RecallSpec()}}); err != nil {
		t.Errorf("the spill's recall: %v", err)
	}
}

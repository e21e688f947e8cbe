package einoguard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
)

// A tool's spec carries every field of the core's Tool but its name and
// schema, which come from eino.
func TestToolWithCarriesTheSpec(t *testing.T) {
	info := &schema.ToolInfo{Name: "write_file", ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
		"path": {Type: schema.String, Required: true}})}
	spec := pruneguard.Tool{
		Annotations: pruneguard.Annotations{DestructiveHint: pruneguard.Bool(false)},
		Scope:       "repo", Family: "file", Version: "2", Output: pruneguard.Reconstructible, NoTombstone: true,
	}
	got, err := einoguard.ToolWith(info, spec)
	if err != nil {
		t.Fatal(err)
	}
	want := spec
	want.Name, want.Schema = "write_file", got.Schema
	if fmt.Sprint(got) != fmt.Sprint(want) || !strings.Contains(string(got.Schema), `"path"`) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	// A spec with a schema of its own keeps it; one naming another tool is refused.
	spec.Schema = []byte(`{"type":"object"}`)
	if got, err := einoguard.ToolWith(info, spec); err != nil || string(got.Schema) != `{"type":"object"}` {
		t.Errorf("own schema: %s, %v", got.Schema, err)
	}
	spec.Name = "other"
	if _, err := einoguard.ToolWith(info, spec); !errors.Is(err, einoguard.ErrToolInfo) {
		t.Errorf("a spec naming another tool: %v", err)
	}
}

func TestToolsWithRefusesUnknownNames(t *testing.T) {
	ctx := context.Background()
	if _, err := einoguard.ToolsWith(ctx, testTools(), map[string]pruneguard.Tool{"read_fille": {Annotations: closedWorld}}); !errors.Is(err, einoguard.ErrToolInfo) || !strings.Contains(err.Error(), "read_fille") {
		t.Errorf("a spec for no tool: %v", err)
	}
	if _, err := einoguard.Tools(ctx, testTools(), map[string]pruneguard.Annotations{"grep": closedWorld}); !errors.Is(err, einoguard.ErrToolInfo) {
		t.Errorf("annotations for no tool: %v", err)
	}
}

// With scopes, a write to one place leaves the reads of another
// reconstructible: stubbed, and the list within its budget.
func TestScopedWriteLeavesReadsReconstructible(t *testing.T) {
	ctx := context.Background()
	write, err := utils.InferTool("write_file", "write a file", func(_ context.Context, a readArgs) (string, error) { return "wrote " + a.Path, nil })
	if err != nil {
		t.Fatal(err)
	}
	all := append(testTools(), write)
	for _, scoped := range []bool{false, true} {
		specs := map[string]pruneguard.Tool{"read_file": {Annotations: closedWorld}, "write_file": {}}
		if scoped {
			specs["read_file"] = pruneguard.Tool{Annotations: closedWorld, Scope: "src"}
			specs["write_file"] = pruneguard.Tool{Scope: "notes"}
		}
		tools, err := einoguard.ToolsWith(ctx, all, specs)
		if err != nil {
			t.Fatal(err)
		}
		s := mustNew(t, einoguard.Config{Guard: pruneguard.Guard{Budget: 800, Policy: pruneguard.KeepLastToolUses{Keep: 1, Stub: true}}, Tools: tools})
		c := newConv("task").round("read_file", 2000).round("read_file", 2000).round("write_file", 40).round("read_file", 400)
		out, _, _ := s.Prune(ctx, c.msgs)
		got := sum(out, einoguard.ApproxTokens)
		if scoped && got > 800 {
			t.Errorf("scoped: sent %d tokens, budget 800: the reads before the write stayed", got)
		}
		if !scoped && got <= 800 {
			t.Errorf("unscoped: sent %d tokens: a write of everything should make the earlier reads irreducible", got)
		}
	}
}

var _ tool.BaseTool = einoguard.RecallTool(nil)

package pruneguard

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each check of a summary plan refuses what it must, and the same plan
// goes through once the gate holding the check is switched off: the
// refusal is the check's doing.
func TestSummaryChecksFailWithoutTheirGate(t *testing.T) {
	type bad struct {
		name  string
		gate  Gate
		code  Code
		setup func(t *testing.T, c *Context) Plan
	}
	// digestOf returns the Digest plan of the run from first to last,
	// its text edited.
	digestOf := func(first, last MessageID, edit func(string) string) func(*testing.T, *Context) Plan {
		return func(t *testing.T, c *Context) Plan {
			_, p := summarize(t, c, "s1", first, last)
			p.Summary.Text = edit(p.Summary.Text)
			return p
		}
	}
	same := func(s string) string { return s }
	cases := []bad{
		{"a dropped id", GateRegen, CodeMissingFact, digestOf("u1", "a3", func(s string) string { return strings.ReplaceAll(s, "INC-4711", "it") })},
		{"a digit changed", GateRegen, CodeMissingFact, digestOf("u1", "a3", func(s string) string { return strings.ReplaceAll(s, "prod-db-2", "prod-db-3") })},
		{"a negative result omitted", GateRegen, CodeMissingFact, digestOf("u1", "a3", func(s string) string {
			return strings.ReplaceAll(s, "so the OOM is not from the shell", "so")
		})},
		{"the prompt grown", GateRegen, CodeSummaryGrows, digestOf("u1", "a3", func(s string) string { return s + strings.Repeat(" x", 20000) })},
		{"a secret summarized", GateRegen, CodeSecret, func(t *testing.T, c *Context) Plan {
			require.NoError(t, c.Mark("r1", OneTimeSecret))
			return digestOf("u1", "a3", same)(t, c)
		}},
		{"part of a unit", GateBoundary, CodeSplit, func(t *testing.T, c *Context) Plan {
			return Plan{Split: SplitStrict, Summary: &Summary{Replace: []MessageID{"u1", "a1"}, ID: "s1", Text: "u1: the worker OOMs; prod-db-2"}}
		}},
		{"a message inside the run stays", GateBoundary, CodeGap, func(t *testing.T, c *Context) Plan {
			return Plan{Summary: &Summary{Replace: []MessageID{"u1", "a2", "r2"}, ID: "s1", Text: "the worker OOMs; prod-db-2; /var/log/worker.log"}}
		}},
		{"an unread result", GateBoundary, CodeUnread, func(t *testing.T, c *Context) Plan {
			require.NoError(t, c.Append(Message{ID: "a5", Role: RoleAssistant, Tokens: 10, Calls: []Call{{ID: "c5", Tool: "read_file", Args: json.RawMessage(`{"path":"x"}`)}}}))
			require.NoError(t, c.Append(Message{ID: "r5", Role: RoleTool, Tokens: 900, Answers: []CallID{"c5"}, Content: []byte("fresh")}))
			return Plan{Split: SplitStrict, Summary: &Summary{Replace: []MessageID{"a5", "r5"}, ID: "s1", Text: "read x"}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := debugSession(t, Config{})
			p := tc.setup(t, c)
			_, err := c.Prune(p)
			var pe *PruneError
			require.ErrorAs(t, err, &pe)
			codes := map[Code]bool{}
			for _, v := range pe.Violations {
				codes[v.Code] = true
				assert.Equal(t, tc.gate.sentinel(), v.Gate.sentinel())
			}
			assert.True(t, codes[tc.code], "violations: %v", pe.Violations)

			withoutGates(c, tc.gate)
			d, err := c.Prune(p)
			require.NoError(t, err, "with the %s gate off the summary goes through", tc.gate)
			require.NotNil(t, d.Summary)
		})
	}
}

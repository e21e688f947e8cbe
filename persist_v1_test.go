package pruneguard

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// v1Golden is what a state of version 1 in testdata/state/v1 restored
// to, as the release that wrote it restored it: the Context's public
// state, its alerts, and its decisions on plans.
type v1Golden struct {
	Resolvable []Pointer
	Counter    bool
	Plans      []goldenPlan
	Capture    json.RawMessage
	Refusals   []string
	Alerts     json.RawMessage
	Decisions  []string
}

// goldenPlan is a Plan as JSON holds it: compressions that are not JSON
// as strings.
type goldenPlan struct {
	Evict, Stub []MessageID
	Drop        []string
	Compress    map[string]string
	Split       SplitMode
}

func (g goldenPlan) plan() Plan {
	p := Plan{Evict: g.Evict, Stub: g.Stub, DropSchemas: g.Drop, Split: g.Split}
	for k, v := range g.Compress {
		if p.CompressSchemas == nil {
			p.CompressSchemas = map[string]json.RawMessage{}
		}
		p.CompressSchemas[k] = json.RawMessage(v)
	}
	return p
}

// The states of version 1 that the last release wrote load: the Context
// restored shows what that release restored, decides the same plans the
// same way, and saves version 2, which restores to a Context saving the
// same bytes.
func TestRestoreVersion1(t *testing.T) {
	files, err := filepath.Glob("testdata/state/v1/*.state")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			state, err := os.ReadFile(name)
			require.NoError(t, err)
			require.Contains(t, string(state), `"version":1,`)
			gb, err := os.ReadFile(strings.TrimSuffix(name, ".state") + ".golden.json")
			require.NoError(t, err)
			var g v1Golden
			require.NoError(t, json.Unmarshal(gb, &g))
			set := map[Pointer]bool{}
			for _, p := range g.Resolvable {
				set[p] = true
			}
			cfg := Config{Resolver: ResolverFunc(func(p Pointer) bool { return set[p] })}
			if g.Counter {
				cfg.Counter = ApproxCounter{}
			}
			c, err := Restore(bytes.NewReader(state), cfg)
			require.NoError(t, err)
			got, err := json.Marshal(capture(c))
			require.NoError(t, err)
			require.JSONEq(t, string(g.Capture), string(got))
			require.Empty(t, c.Refusals())
			alerts, err := json.Marshal(c.TakeAlerts())
			require.NoError(t, err)
			require.JSONEq(t, string(g.Alerts), string(alerts))
			var plans []Plan
			for _, gp := range g.Plans {
				plans = append(plans, gp.plan())
			}
			require.Equal(t, g.Decisions, goldenDecisions(c, plans))

			v2 := saved(t, c)
			require.Contains(t, string(v2), `"version":2,`)
			r, err := Restore(bytes.NewReader(v2), cfg)
			require.NoError(t, err)
			require.Equal(t, string(v2), string(saved(t, r)))
			require.Equal(t, g.Decisions, goldenDecisions(r, plans))
		})
	}
}

// goldenDecisions returns what c decides of each plan, as JSON.
func goldenDecisions(c *Context, plans []Plan) []string {
	var out []string
	for _, p := range plans {
		d, err := c.Prune(p)
		if err != nil {
			out = append(out, "error: "+err.Error())
			continue
		}
		b, _ := json.Marshal(decisionFields(d))
		out = append(out, string(b))
	}
	return out
}

package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
	"pgregory.net/rapid"
)

// referenceDrops is what the --drop-unused-schemas wrapper adds to plan p,
// its calls read from the Context message by message.
func referenceDrops(g *wire.Guarded, declared []string, keep map[string]bool, p pruneguard.Plan) []string {
	ctx := g.Context()
	leaving := map[string]int{}
	for _, id := range p.Evict {
		if m, ok := ctx.Message(id); ok {
			for _, c := range m.Calls {
				leaving[c.Tool]++
			}
		}
	}
	resident := 0
	var drop []string
	for _, t := range declared {
		ts, ok := ctx.Tool(t)
		if !ok || !ts.Resident || ts.Tombstoned {
			continue
		}
		resident++
		if ts.Args <= leaving[t] && !keep[t] && !slices.Contains(p.DropSchemas, t) {
			drop = append(drop, t)
		}
	}
	if len(drop) > 0 && len(drop) >= resident {
		drop = drop[:resident-1]
	}
	return drop
}

// TestDropUnusedMatchesContext: the wrapper, which reads the calls of the
// messages a plan evicts from the body, withdraws the schemas that
// counting the calls of the Context's messages withdraws, for plans
// naming messages the Context holds, messages an applied decision took
// out of it, ids of no message, and repeats.
func TestDropUnusedMatchesContext(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(`{"model":"m","tool_choice":{"type":"function","function":{"name":"ask"}},"tools":[`)
	tools := []string{"read", "write", "grep", "ask", "unused"}
	for i, name := range tools {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"type":"function","function":{"name":%q,"parameters":{"type":"object"}}}`, name)
	}
	sb.WriteString(`],"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"task"}`)
	calls := [][]string{{"read"}, {"write", "read"}, {"grep"}, {"read", "read"}, {"write"}, {"ask"}, {"grep", "write"}}
	for k, cs := range calls {
		sb.WriteString(`,{"role":"assistant","content":null,"tool_calls":[`)
		for j, name := range cs {
			if j > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, `{"id":"c%d_%d","type":"function","function":{"name":%q,"arguments":"{}"}}`, k, j, name)
		}
		sb.WriteString(`]}`)
		for j := range cs {
			fmt.Fprintf(&sb, `,{"role":"tool","tool_call_id":"c%d_%d","content":"%s"}`, k, j, strings.Repeat("out ", 30))
		}
		sb.WriteString(`,{"role":"assistant","content":"ok"},{"role":"user","content":"go on"}`)
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	rapid.Check(t, func(t *rapid.T) {
		g, err := wire.Bind(body, wire.OpenAIChat, wire.Options{Unannotated: wire.UnannotatedRegenerable,
			Config: pruneguard.Config{Boundary: pruneguard.BoundaryRelaxed, Regen: pruneguard.RegenDropUnsafe, TextClass: pruneguard.Reconstructible}})
		if err != nil {
			t.Fatal(err)
		}
		// Some units leave first.
		if n := rapid.IntRange(0, 3).Draw(t, "units gone"); n > 0 {
			p := pruneguard.OldestFirst{}.Propose(g.Context().View(), 1)
			var units []pruneguard.UnitID
			for _, id := range p.Evict {
				if u, ok := g.Context().UnitOf(id); ok && !slices.Contains(units, u.ID) {
					units = append(units, u.ID)
				}
			}
			if n < len(units) {
				keepUnits := units[:n]
				p.Evict = slices.DeleteFunc(p.Evict, func(id pruneguard.MessageID) bool {
					u, _ := g.Context().UnitOf(id)
					return !slices.Contains(keepUnits, u.ID)
				})
			}
			if d, _, err := g.Prune(p); err == nil {
				if err := g.Apply(d); err != nil {
					t.Fatal(err)
				}
			}
		}
		ids := rapid.SliceOfN(rapid.IntRange(0, g.Len()+2), 0, 40).Draw(t, "evict")
		var plan pruneguard.Plan
		for _, i := range ids {
			plan.Evict = append(plan.Evict, wire.ID(i))
		}
		if rapid.Bool().Draw(t, "an id of no message") {
			plan.Evict = append(plan.Evict, "x1")
		}
		if rapid.Bool().Draw(t, "drops write") {
			plan.DropSchemas = []string{"write"}
		}
		keep := toolChoiceNames(g)
		du := &dropUnused{inner: pruneguard.ViewFunc(func(*pruneguard.View, int) pruneguard.Plan { return plan }), g: g, keep: keep}
		for _, tl := range g.Tools() {
			du.declared = append(du.declared, tl.Name)
		}
		got := du.Propose(g.Context().View(), 1).DropSchemas
		want := append(slices.Clone(plan.DropSchemas), referenceDrops(g, du.declared, keep, plan)...)
		if !slices.Equal(got, want) {
			t.Fatalf("plan %v: withdraws %v, counting the Context's calls %v", plan.Evict, got, want)
		}
	})
}

package pruneguard

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A hint is trusted only for a live message that has the id named: a
// wrong, stale or out-of-range position falls back to the lookup.
func TestLocateTrustsOnlyTheMessageNamed(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 100, 200, 300)
	at := func(id MessageID) int32 {
		p, ok := c.find(id)
		require.True(t, ok)
		return p
	}
	r1, a0, r0 := at("r1"), at("a0"), at("r0")
	for _, hint := range [][]int32{nil, {r1}, {a0}, {-1}, {none}, {c.msgs.Len()}, {1 << 30}} {
		q, ok := c.locate("r1", hint, 0)
		assert.True(t, ok, "hint %v", hint)
		assert.Equal(t, r1, q, "hint %v", hint)
	}
	q, ok := c.locate("r1", []int32{a0}, 1) // past the hint
	assert.True(t, ok)
	assert.Equal(t, r1, q)
	_, ok = c.locate("nope", []int32{r1}, 0)
	assert.False(t, ok, "an id the Context does not hold is not found where the hint points")
	_, ok = c.locate("r", []int32{r1}, 0)
	assert.False(t, ok, "a prefix of the id there is another id")

	d, err := c.Prune(Plan{Evict: []MessageID{"a0", "r0"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	_, ok = c.locate("r0", []int32{r0}, 0)
	assert.False(t, ok, "a message gone is not found where it was")
	q, ok = c.locate("r1", []int32{r1}, 0)
	assert.True(t, ok)
	assert.Equal(t, at("r1"), q, "after the message moved or not")
}

// A policy that edits the plan a built-in policy made, whose positions
// the guard keeps as a hint, gets what the same plan without a hint gets.
func TestGuardEditedPlanActsAsNamed(t *testing.T) {
	edits := map[string]func(p *Plan){
		"as made":     func(p *Plan) {},
		"swapped":     func(p *Plan) { p.Evict[0], p.Evict[1] = p.Evict[1], p.Evict[0] },
		"first gone":  func(p *Plan) { p.Evict = p.Evict[1:] },
		"unknown":     func(p *Plan) { p.Evict[1] = "nope" },
		"other":       func(p *Plan) { p.Evict[0] = "r4" },
		"in place":    func(p *Plan) { p.Evict = slices.Insert(p.Evict[:0], 0, MessageID("a4")) },
		"appended":    func(p *Plan) { p.Evict = append(p.Evict, "a3") },
		"as a stub":   func(p *Plan) { p.Stub, p.Evict = p.Evict, nil },
		"prefix id":   func(p *Plan) { p.Evict[0] = MessageID(string(p.Evict[0])[:1]) },
		"pinned head": func(p *Plan) { p.Evict[0] = "sys" },
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			run := func(hinted bool) string {
				c := toolLoop(t, Config{}, []string{"x"}, 100, 200, 300, 400, 500)
				// The model has read the last result.
				mustAppend(t, c, Message{ID: "a5", Role: RoleAssistant, Tokens: 5, Content: []byte("done")})
				pol := ViewFunc(func(v *View, need int) Plan {
					p := OldestFirst{}.Propose(v, need)
					if !hinted {
						v.hint = planHint{}
					} else {
						require.NotEmpty(t, v.hint.evict, "the built-in policy leaves a hint")
					}
					if len(p.Evict) > 1 {
						edit(&p)
					}
					return p
				})
				res, err := Guard{Budget: 600, Policy: pol, Rounds: 4}.Check(c)
				out := fmt.Sprintf("%v %v %v", res.Outcome, err, res.Reason)
				for _, d := range res.Decisions {
					out += fmt.Sprintf(" %v %v", d.Evict, d.Stub)
				}
				for _, e := range c.View().Snapshot() {
					out += " " + string(e.ID)
				}
				return out
			}
			assert.Equal(t, run(false), run(true))
		})
	}
}

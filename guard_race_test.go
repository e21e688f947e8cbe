package pruneguard_test

import (
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// Guards with a spill store, a logger and remembered refusals check one
// Context from several goroutines while rounds keep arriving; whatever
// they interleave, nothing irreducible leaves without a pointer that
// resolves, and every pointer reads back the content it stood for.
func TestRaceGuardsSpillAndRemember(t *testing.T) {
	ctx := t.Context()
	sp := &spill.Spiller{Store: &spill.Memory{}}
	o := &keepOracle{}
	c := pruneguard.NewContext(pruneguard.Config{Resolver: sp, Oracle: o, HoardTokens: 300})
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "read", Annotations: pruneguard.Annotations{
		ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 100, Pinned: true}))
	h := &recorder{}
	var mu sync.Mutex
	content := map[pruneguard.MessageID]string{}
	var next int
	add := func() {
		mu.Lock()
		i := next
		next++
		mu.Unlock()
		text := fmt.Sprint("plain ", i)
		if i%3 == 0 {
			text = fmt.Sprint("keep ", i)
		}
		k := pruneguard.CallID(fmt.Sprint("k", i))
		if err := c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("a", i)), Role: pruneguard.RoleAssistant, Tokens: 5, Calls: []pruneguard.Call{{ID: k, Tool: "read"}}}); err != nil {
			t.Error(err)
		}
		if err := c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("r", i)), Tokens: 50 + i%400, Content: []byte(text), Answers: []pruneguard.CallID{k}}); err != nil {
			t.Error(err)
		}
		mu.Lock()
		content[pruneguard.MessageID(fmt.Sprint("r", i))] = text
		mu.Unlock()
	}
	var wg sync.WaitGroup
	var applied []*pruneguard.Decision
	spills := 0
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			g := pruneguard.Guard{Budget: 3000, Trigger: 4000, MinClear: 500, Spill: sp, Logger: slog.New(h)}
			if w == 1 {
				g.Hoard = pruneguard.HoardStub
				g.Policy = pruneguard.LargestResultsFirst{Stub: true}
			}
			for i := 0; i < 100; i++ {
				add()
				res, err := g.Check(c)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				applied = append(applied, res.Decisions...)
				spills += len(res.Spills)
				mu.Unlock()
				if i%25 == 0 {
					c.Refusals()
				}
			}
		}(w)
	}
	wg.Wait()
	require.NotEmpty(t, applied)
	require.Positive(t, spills)
	for _, d := range applied {
		pointed := map[pruneguard.MessageID]pruneguard.Pointer{}
		for _, n := range d.Pointers {
			pointed[n.Message] = n.Pointer
		}
		for _, r := range d.Records() {
			if r.Class == pruneguard.Reconstructible {
				continue
			}
			p, ok := pointed[r.Message]
			require.True(t, ok, "%s (%v) left with no pointer", r.Message, r.Class)
			require.True(t, sp.Resolvable(p))
			back, err := sp.Recall(ctx, p)
			require.NoError(t, err)
			found := false
			for _, m := range back {
				if m.ID == r.Message {
					found = true
					assert.Equal(t, content[r.Message], string(m.Content))
				}
			}
			assert.True(t, found, "%s is in its segment", r.Message)
		}
	}
}

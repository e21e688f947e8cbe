package pruneguard_test

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"

	"github.com/pruneguard/pruneguard"
)

// The caller's bytes of the realistic session mix: contents and call
// arguments are slices of one shared buffer, so that building the inputs
// costs no memory of its own.
var (
	filler      = make([]byte, 4096)
	contentSize = map[pruneguard.Role]int{pruneguard.RoleUser: 120, pruneguard.RoleAssistant: 80, pruneguard.RoleTool: 400}
	argsSize    = 40
)

// mixRound appends round i of the realistic mix to c: a user message, an
// assistant message with a parallel batch of three calls, and their
// three results. It returns the bytes of content (contents and
// arguments) and of ids (message and call ids) it handed over.
func mixRound(tb testing.TB, c *pruneguard.Context, i int) (content, ids int) {
	tb.Helper()
	n := strconv.Itoa(i)
	add := func(m pruneguard.Message) {
		if err := c.Append(m); err != nil {
			tb.Fatal(err)
		}
		content += len(m.Content)
		ids += len(m.ID)
		for _, k := range m.Calls {
			content += len(k.Args)
			ids += len(k.ID)
		}
	}
	add(pruneguard.Message{ID: pruneguard.MessageID("u" + n), Role: pruneguard.RoleUser, Tokens: 30, Content: filler[:contentSize[pruneguard.RoleUser]]})
	a := pruneguard.Message{ID: pruneguard.MessageID("a" + n), Role: pruneguard.RoleAssistant, Tokens: 40, Content: filler[:contentSize[pruneguard.RoleAssistant]]}
	for j, tool := range sessionTools {
		a.Calls = append(a.Calls, pruneguard.Call{ID: pruneguard.CallID("c" + n + "_" + strconv.Itoa(j)), Tool: tool, Args: filler[:argsSize]})
	}
	add(a)
	for j := range sessionTools {
		add(pruneguard.Message{ID: pruneguard.MessageID("r" + n + "_" + strconv.Itoa(j)), Role: pruneguard.RoleTool, Tokens: 100,
			Content: filler[:contentSize[pruneguard.RoleTool]], Answers: []pruneguard.CallID{a.Calls[j].ID}})
	}
	return content, ids
}

func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// bookkeeping builds a Context of about n messages of the realistic mix
// and returns the bytes it keeps per message beyond the caller's contents,
// arguments and ids (string and slice headers count as bookkeeping).
func bookkeeping(tb testing.TB, n int) float64 {
	before := heapAfterGC()
	c := pruneguard.NewContext(pruneguard.Config{})
	ids := 0
	for _, t := range sessionTools {
		if err := c.RegisterTool(pruneguard.Tool{Name: t}); err != nil {
			tb.Fatal(err)
		}
		ids += len(t)
	}
	content := 0
	for i := 0; c.Len() < n; i++ {
		dc, di := mixRound(tb, c, i)
		content += dc
		ids += di
	}
	after := heapAfterGC()
	runtime.KeepAlive(c)
	return (float64(after) - float64(before) - float64(content) - float64(ids)) / float64(c.Len())
}

// A Context keeps at most 128 bytes per message of its own at a million
// messages, beside what the caller handed it; at smaller sizes its fixed
// costs (tables, indexes, arena slack) weigh more per message, within the
// limits below. The million-message case is skipped under -short and
// -race (the race detector makes it slow, not larger): CI runs it without
// -race.
func TestBookkeepingPerMessage(t *testing.T) {
	for _, tc := range []struct {
		n     int
		limit float64
	}{{1000, 256}, {100000, 136}, {1000000, 128}} {
		if tc.n == 1000000 && (testing.Short() || raceEnabled) {
			t.Logf("messages=%d: skipped under -short and -race", tc.n)
			continue
		}
		t.Run(fmt.Sprintf("messages=%d", tc.n), func(t *testing.T) {
			per := bookkeeping(t, tc.n)
			t.Logf("%.1f bytes of bookkeeping per message", per)
			if per > tc.limit {
				t.Fatalf("%.1f bytes of bookkeeping per message at %d messages, want at most %.0f", per, tc.n, tc.limit)
			}
		})
	}
}

// A long session held at about a thousand messages keeps a flat heap:
// nothing is kept forever for the messages that are gone.
func TestLongSessionHeapStaysFlat(t *testing.T) {
	turns := 100000
	if testing.Short() || raceEnabled {
		turns = 20000
	}
	// The runtime accepts losing its user turns, so that every unit may go.
	c := pruneguard.NewContext(pruneguard.Config{TextClass: pruneguard.Reconstructible})
	for _, name := range sessionTools {
		if err := c.RegisterTool(pruneguard.Tool{Name: name, Annotations: pruneguard.Annotations{
			ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}); err != nil {
			t.Fatal(err)
		}
	}
	round := 0
	for c.Len() < 1000 {
		mixRound(t, c, round)
		round++
	}
	g := pruneguard.Guard{Budget: c.Tokens(), Policy: pruneguard.OldestFirst{}}
	var at10 uint64
	for turn := 1; turn <= turns; turn++ {
		mixRound(t, c, round)
		round++
		res, err := g.Check(c)
		if err != nil || res.Outcome != pruneguard.Pruned {
			t.Fatalf("turn %d: %v %v", turn, res.Outcome, err)
		}
		if turn == turns/10 {
			at10 = heapAfterGC()
		}
	}
	at100 := heapAfterGC()
	t.Logf("heap after %d turns: %d bytes; after %d: %d bytes; %d messages held", turns/10, at10, turns, at100, c.Len())
	if c.Len() < 900 || c.Len() > 1100 {
		t.Fatalf("the session holds %d messages", c.Len())
	}
	if at100 > at10+at10/10 {
		t.Fatalf("the heap grew from %d to %d bytes between turn %d and turn %d", at10, at100, turns/10, turns)
	}
}

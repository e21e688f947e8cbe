package pruneguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pg "github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// A later compaction takes the earlier summary into its run: over a
// long session the prompt holds one summary, or one each side of a
// pinned message.
func TestCompactionOneSummary(t *testing.T) {
	for pinAt, want := range map[int]int{-1: 1, 7: 2} {
		c := pg.NewContext(pg.Config{Counter: pg.ApproxCounter{}})
		require.NoError(t, c.RegisterTool(pg.Tool{Name: "lookup"}))
		require.NoError(t, c.Append(pg.Message{ID: "sys", Role: pg.RoleSystem, Pinned: true, Content: []byte("You look orders up.")}))
		g := pg.Guard{Budget: 1500, Trigger: 2500, Summarizer: pg.Digest{}}
		most := 0
		for i := range 200 {
			n := strconv.Itoa(i)
			require.NoError(t, c.Append(pg.Message{ID: pg.MessageID("u" + n), Pinned: i == pinAt, Role: pg.RoleUser, Content: []byte("Check order " + n + ".")}))
			require.NoError(t, c.Append(pg.Message{ID: pg.MessageID("a" + n), Role: pg.RoleAssistant, Calls: []pg.Call{{ID: pg.CallID("c" + n), Tool: "lookup", Args: json.RawMessage(`{"q":"next"}`)}}}))
			require.NoError(t, c.Append(pg.Message{ID: pg.MessageID("r" + n), Role: pg.RoleTool, Answers: []pg.CallID{pg.CallID("c" + n)},
				Content: []byte(`{"order":"ORD-` + strconv.Itoa(1000+i) + `","note":"` + strings.Repeat("lorem ipsum ", 40) + `"}`)}))
			require.NoError(t, c.Append(pg.Message{ID: pg.MessageID("b" + n), Role: pg.RoleAssistant, Content: []byte("Order ORD-" + strconv.Itoa(1000+i) + " is held.")}))
			_, err := g.Check(c)
			require.NoError(t, err)
			k := 0
			for _, m := range c.Messages() {
				if m.Role == pg.RoleSummary {
					k++
				}
			}
			most = max(most, k)
		}
		require.Equal(t, want, most, "pinned at %d", pinAt)
	}
}

// Config.SummaryCounter counts a summary the guard writes, and Restore
// takes it from the Config it is given, as it takes Counter.
func TestSummaryCounterCounts(t *testing.T) {
	var wrapped wrapCounter
	cfg := pg.Config{Counter: pg.ApproxCounter{}, SummaryCounter: wrapped}
	c := pg.NewContext(cfg)
	for i := range 10 {
		ticketTurn(t, c, i)
	}
	g := pg.Guard{Budget: c.Tokens() / 2, Summarizer: pg.Digest{}}
	res, err := g.Check(c)
	require.NoError(t, err)
	require.NotEmpty(t, res.Decisions)
	s := res.Decisions[0].Summary
	require.NotNil(t, s, "%v", res.Reason)
	assert.Equal(t, wrapped.Count([]byte(s.Text)), s.Tokens)
	assert.LessOrEqual(t, c.Tokens(), g.Budget)

	var buf bytes.Buffer
	require.NoError(t, c.Save(&buf))
	r, err := pg.Restore(&buf, cfg)
	require.NoError(t, err)
	for i := 10; i < 20; i++ {
		ticketTurn(t, r, i)
	}
	res, err = g.Check(r)
	require.NoError(t, err)
	for _, d := range res.Decisions {
		if d.Summary != nil {
			assert.Equal(t, wrapped.Count([]byte(d.Summary.Text)), d.Summary.Tokens, "the restored Context counts by the SummaryCounter given")
		}
	}
}

// ticketTurn appends a user's turn i with a ticket id and the model's answer.
func ticketTurn(t *testing.T, c *pg.Context, i int) {
	t.Helper()
	require.NoError(t, c.Append(pg.Message{ID: pg.MessageID(fmt.Sprint("u", i)), Role: pg.RoleUser,
		Content: []byte(fmt.Sprintf("ticket INC-%d %s", 100+i, strings.Repeat("words ", 60)))}))
	require.NoError(t, c.Append(pg.Message{ID: pg.MessageID(fmt.Sprint("a", i)), Role: pg.RoleAssistant,
		Content: []byte(fmt.Sprintf("Noted INC-%d.", 100+i))}))
}

// wrapCounter counts as ApproxCounter does, plus 50 for a message around
// the text.
type wrapCounter struct{}

func (wrapCounter) Count(b []byte) int { return pg.ApproxCounter{}.Count(b) + 50 }

// A summary the Context counts over the room its run had is asked for
// again, once, with Room less the excess; the shorter one is applied and
// no summary is evicted to make up for the first one's length.
func TestSummaryOverRoomAskedAgain(t *testing.T) {
	c := pg.NewContext(pg.Config{Counter: pg.ApproxCounter{}, SummaryCounter: wrapCounter{}})
	for i := range 10 {
		ticketTurn(t, c, i)
	}
	var rooms []int
	sum := pg.SummarizerFunc(func(ctx context.Context, b *pg.Brief) (string, error) {
		rooms = append(rooms, b.Room)
		return pg.Digest{MaxTokens: 10000}.Summarize(ctx, b) // fills its Room
	})
	g := pg.Guard{Budget: c.Tokens() / 2, Summarizer: sum}
	res, err := g.Check(c)
	require.NoError(t, err)
	require.Len(t, rooms, 2, "asked once more")
	assert.Less(t, rooms[1], rooms[0])
	assert.LessOrEqual(t, c.Tokens(), g.Budget)
	for _, d := range res.Decisions {
		if d.Summary == nil {
			assert.NotContains(t, fmt.Sprint(d.Evict), "summary", "a summary was evicted")
		}
	}
}

// A Summary is counted as its Tokens give it, else by the
// SummaryCounter, else by the Counter, else as ApproxCounter counts.
func TestSummaryCountedInOrder(t *testing.T) {
	text := "Summary: INC-7 is open and waits for the user."
	for name, tc := range map[string]struct {
		cfg    pg.Config
		tokens int
		want   int
	}{
		"given":          {pg.Config{Counter: pg.ApproxCounter{}, SummaryCounter: wrapCounter{}}, 7, 7},
		"SummaryCounter": {pg.Config{Counter: pg.ApproxCounter{}, SummaryCounter: wrapCounter{}}, 0, wrapCounter{}.Count([]byte(text))},
		"Counter":        {pg.Config{Counter: wrapCounter{}}, 0, wrapCounter{}.Count([]byte(text))},
		"ApproxCounter":  {pg.Config{}, 0, pg.ApproxCounter{}.Count([]byte(text))},
	} {
		t.Run(name, func(t *testing.T) {
			c := pg.NewContext(tc.cfg)
			for _, m := range []pg.Message{
				{ID: "u1", Role: pg.RoleUser, Tokens: 300, Content: []byte("check INC-7")},
				{ID: "a1", Role: pg.RoleAssistant, Tokens: 300, Content: []byte("INC-7 is open")},
				{ID: "u2", Role: pg.RoleUser, Tokens: 5, Content: []byte("next")},
			} {
				require.NoError(t, c.Append(m))
			}
			d, err := c.Prune(pg.Plan{Summary: &pg.Summary{Replace: []pg.MessageID{"u1", "a1"}, ID: "s1", Text: text, Tokens: tc.tokens}})
			require.NoError(t, err)
			require.NotNil(t, d.Summary)
			assert.Equal(t, tc.want, d.Summary.Tokens)
			require.NoError(t, c.Apply(d))
			assert.Equal(t, 5+tc.want, c.Tokens())
		})
	}
}

// A Context restored from a saved state of version 1 counts a summary
// with the SummaryCounter it is given, as one of version 2 does.
func TestSummaryCounterRestoredVersion1(t *testing.T) {
	files, err := filepath.Glob("testdata/state/v1/*.state")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	counted := 0
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			state, err := os.ReadFile(name)
			require.NoError(t, err)
			c, err := pg.Restore(bytes.NewReader(state), pg.Config{Counter: pg.ApproxCounter{}, SummaryCounter: wrapCounter{},
				Resolver: pg.ResolverFunc(func(pg.Pointer) bool { return true })})
			require.NoError(t, err)
			for _, m := range []pg.Message{
				{ID: "late-u", Role: pg.RoleUser, Tokens: 300, Content: []byte("check INC-7")},
				{ID: "late-a", Role: pg.RoleAssistant, Tokens: 300, Content: []byte("INC-7 is open")},
				{ID: "late-n", Role: pg.RoleUser, Tokens: 5, Content: []byte("next")},
			} {
				require.NoError(t, c.Append(m))
			}
			text := "Summary: INC-7 is open."
			d, err := c.Prune(pg.Plan{Summary: &pg.Summary{Replace: []pg.MessageID{"late-u", "late-a"}, ID: "late-s", Text: text}})
			if err != nil {
				return // the state refuses every prune (calls pending, a tool's schema required)
			}
			assert.Equal(t, wrapCounter{}.Count([]byte(text)), d.Summary.Tokens)
			counted++
		})
	}
	require.Positive(t, counted, "a state that takes a summary")
}

// A summary the Screen refuses is not applied: the Screen's refusal is
// in Result.Refused, the run stays in the prompt, and the check goes on
// with evictions, which the gates refuse here (text cannot be had again).
func TestScreenRefusesSummary(t *testing.T) {
	c := pg.NewContext(pg.Config{Counter: pg.ApproxCounter{}})
	for i := range 10 {
		ticketTurn(t, c, i)
	}
	refusal := &pg.Violation{Gate: pg.GateScreen, Code: "no-summaries"}
	screened := 0
	g := pg.Guard{Budget: c.Tokens() / 2, Summarizer: pg.Digest{}, Screen: pg.ScreenFunc(func(d *pg.Decision) []*pg.Violation {
		if d.Summary == nil {
			return nil
		}
		screened++
		return []*pg.Violation{refusal}
	})}
	before := c.Tokens()
	res, err := g.Check(c)
	require.NoError(t, err)
	assert.Positive(t, screened, "the Screen saw the summary")
	assert.Contains(t, res.Refused, refusal)
	for _, d := range res.Decisions {
		assert.Nil(t, d.Summary, "a screened summary was applied")
	}
	_, ok := c.Message("u0")
	assert.True(t, ok, "the run stays")
	assert.Equal(t, pg.Deferred, res.Outcome)
	assert.Equal(t, before, c.Tokens())
}

// With a store that cannot be written, a run is not summarized (only a
// pointer could stand for what it holds): the spill's error is reported
// and the Summarizer is not asked.
func TestCompactionSpillFails(t *testing.T) {
	sp := &spill.Spiller{Store: &failingStore{}}
	c := pg.NewContext(pg.Config{Counter: pg.ApproxCounter{}, Resolver: sp})
	for i := range 10 {
		ticketTurn(t, c, i)
	}
	asked := 0
	sum := pg.SummarizerFunc(func(ctx context.Context, b *pg.Brief) (string, error) {
		asked++
		return pg.Digest{}.Summarize(ctx, b)
	})
	res, err := pg.Guard{Budget: c.Tokens() / 2, Spill: sp, Summarizer: sum}.Check(c)
	require.NoError(t, err)
	assert.NotEmpty(t, res.SpillErrors)
	assert.Zero(t, asked, "a run that could not be spilled was summarized")
	for _, d := range res.Decisions {
		assert.Nil(t, d.Summary)
	}
}

// A unit that starts among the messages of a run (a user's message that
// came before the result of an earlier call) is taken into the run, so
// that the run leaves no message between its first and its last: one
// summary replaces them all, with no refusal.
func TestCompactionTakesInterleavedUnit(t *testing.T) {
	for _, want := range []string{"all", "first"} {
		c := pg.NewContext(pg.Config{Counter: pg.ApproxCounter{}})
		require.NoError(t, c.RegisterTool(pg.Tool{Name: "lookup", Output: pg.Reconstructible}))
		require.NoError(t, c.Append(pg.Message{ID: "sys", Role: pg.RoleSystem, Pinned: true, Content: []byte("sys")}))
		require.NoError(t, c.Append(pg.Message{ID: "xa", Role: pg.RoleAssistant, Calls: []pg.Call{{ID: "c1", Tool: "lookup", Args: json.RawMessage(`{}`)}}}))
		require.NoError(t, c.Append(pg.Message{ID: "xu", Role: pg.RoleUser, Content: []byte("meanwhile INC-1 " + strings.Repeat("w ", 100))}))
		require.NoError(t, c.Append(pg.Message{ID: "xr", Role: pg.RoleTool, Answers: []pg.CallID{"c1"}, Content: []byte("answer ORD-1 " + strings.Repeat("x ", 100))}))
		for i := range 6 {
			ticketTurn(t, c, i)
		}
		budget := c.Tokens() / 2
		if want == "first" {
			// Just what the call's unit holds must go: the run reaches what
			// it wants with that unit, and goes on to take in the message
			// that starts among its own.
			budget = c.Tokens() - 10
		}
		res, err := pg.Guard{Budget: budget, Summarizer: pg.Digest{}}.Check(c)
		require.NoError(t, err)
		assert.Empty(t, res.Refused, "%s: %v", want, res.Reason)
		require.NotEmpty(t, res.Decisions, want)
		s := res.Decisions[0].Summary
		require.NotNil(t, s, want)
		assert.Subset(t, s.Replace, []pg.MessageID{"xa", "xu", "xr"}, want)
		assert.LessOrEqual(t, c.Tokens(), budget, want)
	}
}

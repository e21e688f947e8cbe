package pruneguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// digestBrief is a Brief of a user message, a call and its result
// holding many facts of one kind and one id, and an earlier summary.
func digestBrief() *pruneguard.Brief {
	var noise []pruneguard.Fact
	for k := range 40 {
		noise = append(noise, pruneguard.Fact{Message: "r1", Kind: "time", Text: fmt.Sprintf("2026-11-%02dT10:00:00Z", 1+k%28)})
	}
	noise = append(noise, pruneguard.Fact{Message: "r1", Kind: "id", Text: "idem-4711abcdef"})
	return &pruneguard.Brief{
		Replace: []pruneguard.MessageID{"s0", "u1", "a1", "r1", "r2"},
		Tokens:  2000,
		Messages: []pruneguard.BriefMessage{
			{ID: "s0", Role: pruneguard.RoleSummary, Facts: []pruneguard.Fact{{Message: "s0", Kind: "id", Text: "INC-1000"}}},
			{ID: "u1", Role: pruneguard.RoleUser, Content: []byte("deploy to canary-eu-2 only"), Facts: []pruneguard.Fact{{Message: "u1", Kind: "id", Text: "canary-eu-2"}}},
			{ID: "a1", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "c1", Tool: "search_logs", Args: json.RawMessage(`{"q":"x"}`)}}},
			{ID: "r1", Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{"c1"}, Tools: []string{"search_logs"}, Facts: noise},
			{ID: "r2", Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{"c1"}, Facts: []pruneguard.Fact{{Message: "r2", Kind: "path", Text: "/var/log/kern.log"}}},
		},
	}
}

// Within a tight Room, the Digest writes the words of the user and the
// model first, then what an earlier summary carried, then a fact of each
// result in turn, the most telling kinds first: the id and the path
// outrank forty times; and it holds no more than Room.
func TestDigestRoomAndOrder(t *testing.T) {
	b := digestBrief()
	b.Room = 70
	text, err := pruneguard.Digest{}.Summarize(context.Background(), b)
	require.NoError(t, err)
	assert.LessOrEqual(t, pruneguard.ApproxCounter{}.Count([]byte(text)), b.Room, "the summary holds more than its Room:\n%s", text)
	for _, f := range []string{"canary-eu-2", "INC-1000", "idem-4711abcdef", "/var/log/kern.log"} {
		assert.Contains(t, text, f)
	}
	assert.Less(t, strings.Index(text, "canary-eu-2"), strings.Index(text, "INC-1000"), "the user's words come before what a summary carried")
	assert.Less(t, strings.Index(text, "INC-1000"), strings.Index(text, "idem-4711abcdef"), "what a summary carried comes before the results'")
	assert.Less(t, strings.Index(text, "/var/log/kern.log"), strings.Index(text, "2026-11-01T10:00:00Z"), "a result's path comes before another's times")
	assert.Less(t, strings.Count(text, "2026-11-"), 40, "the room cannot hold every time")

	// Without Room the bound is a quarter of the run: all of them fit.
	b.Room = 0
	text, err = pruneguard.Digest{}.Summarize(context.Background(), b)
	require.NoError(t, err)
	assert.Equal(t, 28, strings.Count(text, "2026-11-"), "each time once")
}

// The facts the Brief requires and the pointer lines are written
// whatever the Room; the other facts and lines only as it allows.
func TestDigestRoomKeepsRequired(t *testing.T) {
	b := digestBrief()
	b.Facts = []pruneguard.Fact{{Message: "r1", Kind: "error", Text: "exit 137: out of memory"}}
	b.Pointers = []pruneguard.Pointer{{Store: "spill", Key: "seg-1"}}
	b.Room = 1
	text, err := pruneguard.Digest{}.Summarize(context.Background(), b)
	require.NoError(t, err)
	assert.Contains(t, text, "exit 137: out of memory")
	assert.Contains(t, text, "seg-1")
	assert.NotContains(t, text, "Other facts", "no room for them")
	assert.NotContains(t, text, "more messages", "no room for the count either")
}

// A guard compacts the oldest run up to a message that may not go, and
// the run after it too when the first cannot free enough alone: each
// summary in the place of its run, the pinned message between them.
func TestGuardCompactsSeveralRuns(t *testing.T) {
	c := ticketRuns(t, pruneguard.Config{}, 3)
	budget := c.Tokens() / 3
	res, err := pruneguard.Guard{Budget: budget, Summarizer: pruneguard.Digest{}}.Check(c)
	require.NoError(t, err)
	var summaries []*pruneguard.Decision
	for _, d := range res.Decisions {
		if d.Summary != nil {
			summaries = append(summaries, d)
		}
	}
	require.Len(t, summaries, 2, "one summary each side of the pinned message: %v", res.Reason)
	assert.Equal(t, pruneguard.MessageID("a0"), summaries[0].Evict[0])
	assert.Equal(t, pruneguard.MessageID("a3"), summaries[1].Evict[0])
	assert.LessOrEqual(t, c.Tokens(), budget)
	var all strings.Builder
	for _, e := range c.Snapshot() {
		m, _ := c.Message(e.ID)
		all.Write(m.Content)
	}
	for i := range 12 {
		assert.Contains(t, all.String(), "ORD-"+fmt.Sprint(5000+i), "every ticket stays in the prompt")
	}
}

// The Digest's first line counts the messages the summary stands in for.
func TestDigestHeaderCounts(t *testing.T) {
	for n, want := range map[int]string{1: "[Summary of 1 earlier message,", 2: "[Summary of 2 earlier messages,"} {
		b := &pruneguard.Brief{Tokens: 400}
		for i := range n {
			id := pruneguard.MessageID(fmt.Sprint("m", i))
			b.Replace = append(b.Replace, id)
			b.Messages = append(b.Messages, pruneguard.BriefMessage{ID: id, Role: pruneguard.RoleUser, Content: []byte("hello")})
		}
		text, err := pruneguard.Digest{}.Summarize(context.Background(), b)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(text, want), "%d messages: %q", n, text)
	}
}

// compactTwoRuns fills a Context with a short run, a pinned message and
// a long run, and a Guard that compacts it to a third with a store,
// whose pointer lines cost more than the short run's share of room.
func compactTwoRuns(t *testing.T) (*pruneguard.Context, pruneguard.Guard) {
	sp := &spill.Spiller{Store: &spill.Memory{}}
	c := ticketRuns(t, pruneguard.Config{Resolver: sp}, 1)
	long := func(p pruneguard.Pointer) string {
		return "[the messages summarized are stored at " + p.Store + ":" + p.Key + strings.Repeat(" (described at length)", 12) + "]"
	}
	return c, pruneguard.Guard{Budget: c.Tokens() / 3, Spill: sp, Summarizer: pruneguard.Digest{PointerText: long}}
}

// The runs of a check are summarized smallest first, each with room for
// what must still be freed: a short run whose summary costs more than
// its share (its header and pointer line) takes that from the long
// run's room, and no summary is evicted to make up for it.
func TestGuardCompactsShortRunFirst(t *testing.T) {
	c, g := compactTwoRuns(t)
	res, err := g.Check(c)
	require.NoError(t, err)
	var summaries []pruneguard.MessageID
	for _, d := range res.Decisions {
		if d.Summary != nil {
			summaries = append(summaries, d.Summary.ID)
			continue
		}
		for _, id := range d.Evict {
			assert.NotContains(t, string(id), "summary", "a summary written by this check was evicted")
		}
	}
	assert.Len(t, summaries, 2, "one summary each side of the pinned message: %v", res.Reason)
	assert.LessOrEqual(t, c.Tokens(), g.Budget)
	for _, id := range summaries {
		_, ok := c.Message(id)
		assert.True(t, ok, "summary %s stays in the prompt", id)
	}
}

// A summary of an earlier summary may hold what the earlier one held,
// though that is more than a quarter of the run: compaction after
// compaction keeps the facts the first one kept, room allowing.
func TestDigestKeepsEarlierSummaryWhole(t *testing.T) {
	var fs []pruneguard.Fact
	var text strings.Builder
	text.WriteString("[Summary of 9 earlier messages, not your words nor the user's; facts quoted verbatim]\nOther facts:")
	for i := range 60 {
		f := fmt.Sprintf("INC-%d", 7000+i)
		fs = append(fs, pruneguard.Fact{Message: "s0", Kind: "id", Text: f})
		text.WriteString(" " + f + ";")
	}
	content := []byte(text.String())
	b := &pruneguard.Brief{Replace: []pruneguard.MessageID{"s0", "u1"}, Tokens: len(content)/4 + 40,
		Messages: []pruneguard.BriefMessage{
			{ID: "s0", Role: pruneguard.RoleSummary, Content: content, Facts: fs},
			{ID: "u1", Role: pruneguard.RoleUser, Content: []byte(strings.Repeat("ok ", 50))},
		}}
	require.Less(t, b.Tokens/4*4, len(content), "the earlier summary holds more than a quarter of the run")
	out, err := pruneguard.Digest{}.Summarize(context.Background(), b)
	require.NoError(t, err)
	for _, f := range fs {
		assert.Contains(t, out, f.Text)
	}

	b.Room = 60 // a Room still bounds it
	out, err = pruneguard.Digest{}.Summarize(context.Background(), b)
	require.NoError(t, err)
	assert.LessOrEqual(t, pruneguard.ApproxCounter{}.Count([]byte(out)), b.Room)
}

// A fact the pointer line already shows is not written again among the
// other facts: the room goes to facts the summary would not show.
func TestDigestSkipsFactsItsPointerShows(t *testing.T) {
	b := digestBrief()
	b.Pointers = []pruneguard.Pointer{{Store: "mem", Key: "seg-1"}}
	g := pruneguard.Digest{PointerText: func(p pruneguard.Pointer) string {
		return "[stored at " + p.Key + "; facts: canary-eu-2, /var/log/kern.log]"
	}}
	out, err := g.Summarize(context.Background(), b)
	require.NoError(t, err)
	i := strings.Index(out, "Other facts:")
	require.GreaterOrEqual(t, i, 0, out)
	other, _, _ := strings.Cut(out[i:], "\n")
	assert.NotContains(t, other, "canary-eu-2")
	assert.NotContains(t, other, "/var/log/kern.log")
	assert.Contains(t, other, "INC-1000", "the facts the line does not show are written")
}

// A fact the pointer line shows only inside a longer word, number or
// path is not shown by it and is written among the other facts; a fact
// the Brief requires is written among the required facts though the
// pointer line shows it.
func TestDigestPointerShowsWholeFactsOnly(t *testing.T) {
	b := &pruneguard.Brief{
		Replace: []pruneguard.MessageID{"r1"},
		Tokens:  400,
		Facts:   []pruneguard.Fact{{Message: "r1", Kind: "id", Text: "INC-42"}},
		Messages: []pruneguard.BriefMessage{{ID: "r1", Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{"c1"},
			Facts: []pruneguard.Fact{
				{Message: "r1", Kind: "id", Text: "INC-42"},
				{Message: "r1", Kind: "id", Text: "ORD-12"},
				{Message: "r1", Kind: "path", Text: "/etc/hosts"},
				{Message: "r1", Kind: "number", Text: "137"},
			}}},
		Pointers: []pruneguard.Pointer{{Store: "mem", Key: "seg-1"}},
	}
	g := pruneguard.Digest{PointerText: func(p pruneguard.Pointer) string {
		return "[stored at " + p.Key + "; facts: INC-42, ORD-123, /opt/etc/hosts, 1370]"
	}}
	out, err := g.Summarize(context.Background(), b)
	require.NoError(t, err)
	assert.Contains(t, out, "Facts to keep: INC-42;")
	i := strings.Index(out, "Other facts:")
	require.GreaterOrEqual(t, i, 0, out)
	other, _, _ := strings.Cut(out[i:], "\n")
	for _, f := range []string{"ORD-12;", "/etc/hosts;", "137;"} {
		assert.Contains(t, other, " "+f)
	}
}

// The runs of one check are asked for smallest first, whatever their
// place: here the long run before the pinned message comes after the
// short one behind it.
func TestGuardAsksSmallestRunFirst(t *testing.T) {
	sp := &spill.Spiller{Store: &spill.Memory{}}
	c := ticketRuns(t, pruneguard.Config{Resolver: sp}, 10)
	var sizes []int
	var firsts []pruneguard.MessageID
	g := pruneguard.Guard{Budget: c.Tokens() / 3, Spill: sp, Summarizer: pruneguard.SummarizerFunc(func(ctx context.Context, b *pruneguard.Brief) (string, error) {
		if len(firsts) == 0 || firsts[len(firsts)-1] != b.Replace[0] {
			sizes = append(sizes, b.Tokens)
			firsts = append(firsts, b.Replace[0])
		}
		return pruneguard.Digest{}.Summarize(ctx, b)
	})}
	res, err := g.Check(c)
	require.NoError(t, err)
	require.Len(t, sizes, 2, "%v: %v", firsts, res.Reason)
	assert.Less(t, sizes[0], sizes[1])
	assert.Equal(t, pruneguard.MessageID("a10"), firsts[0], "the run after the pinned message, the smaller")
	assert.LessOrEqual(t, c.Tokens(), g.Budget)
}

// ticketRuns is a Context of cfg holding a pinned system prompt, twelve
// lookups whose results each hold a ticket id, a pinned user message
// before lookup pinAt, and a last user message.
func ticketRuns(t *testing.T, cfg pruneguard.Config, pinAt int) *pruneguard.Context {
	t.Helper()
	c := pruneguard.NewContext(cfg)
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "lookup"}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Pinned: true, Content: []byte("sys"), Tokens: 2}))
	for i := range 12 {
		n := fmt.Sprint(i)
		if i == pinAt {
			require.NoError(t, c.Append(pruneguard.Message{ID: "pin", Role: pruneguard.RoleUser, Pinned: true, Content: []byte("keep this"), Tokens: 3}))
		}
		for _, m := range []pruneguard.Message{
			{ID: pruneguard.MessageID("a" + n), Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: pruneguard.CallID("c" + n), Tool: "lookup", Args: json.RawMessage(`{"q":"` + n + `"}`)}}, Tokens: 10},
			{ID: pruneguard.MessageID("r" + n), Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{pruneguard.CallID("c" + n)},
				Content: []byte("ticket ORD-" + fmt.Sprint(5000+i) + " held. " + strings.Repeat("lorem ipsum ", 40)), Tokens: 130},
		} {
			require.NoError(t, c.Append(m))
		}
	}
	require.NoError(t, c.Append(pruneguard.Message{ID: "next", Role: pruneguard.RoleUser, Content: []byte("next"), Tokens: 2}))
	return c
}

package pruneguard

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// debugSession is a session of seed 002's kind: a constraint the user
// gave once, a negative result, a transient reading, a pure read, and
// the model's own prose, then a later turn, all read by the model.
func debugSession(t *testing.T, cfg Config) *Context {
	t.Helper()
	c := NewContext(cfg)
	pure := Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}
	require.NoError(t, c.RegisterTool(Tool{Name: "read_file", Annotations: pure}))
	require.NoError(t, c.RegisterTool(Tool{Name: "run"}))
	msgs := []Message{
		{ID: "sys", Role: RoleSystem, Tokens: 50, Pinned: true, Content: []byte("You are a debugging agent.")},
		{ID: "u1", Role: RoleUser, Tokens: 40, Content: []byte("The worker OOMs. Never restart prod-db-2 during the fix.")},
		{ID: "a1", Role: RoleAssistant, Tokens: 30, Calls: []Call{{ID: "c1", Tool: "run", Args: json.RawMessage(`{"cmd":"ulimit -a"}`)}}},
		{ID: "r1", Role: RoleTool, Tokens: 400, Answers: []CallID{"c1"}, Facts: NegativeResult,
			Content: []byte("max memory size (kbytes, -m) unlimited\nChecked /etc/security/limits.conf: ulimit is unlimited, so the OOM is not from the shell.")},
		{ID: "a2", Role: RoleAssistant, Tokens: 30, Calls: []Call{{ID: "c2", Tool: "read_file", Args: json.RawMessage(`{"path":"/var/log/worker.log"}`)}}},
		{ID: "r2", Role: RoleTool, Tokens: 3000, Answers: []CallID{"c2"},
			Content: []byte("12:00:01 start\n12:03:17 worker pid 4242 killed: exit 137 (out of memory)\n" + strings.Repeat("noise line\n", 200))},
		{ID: "a3", Role: RoleAssistant, Tokens: 60, Content: []byte("The worker was killed with exit 137; I opened INC-4711 to track it.")},
		{ID: "u2", Role: RoleUser, Tokens: 10, Content: []byte("Go on.")},
		{ID: "a4", Role: RoleAssistant, Tokens: 20, Content: []byte("Looking at the cgroup next.")},
	}
	for _, m := range msgs {
		require.NoError(t, c.Append(m))
	}
	return c
}

// span returns the ids of the messages from first to last, in order.
func span(c *Context, first, last MessageID) []MessageID {
	var ids []MessageID
	in := false
	for _, e := range c.Snapshot() {
		in = in || e.ID == first
		if in {
			ids = append(ids, e.ID)
		}
		if e.ID == last {
			break
		}
	}
	return ids
}

// summarize briefs the run from first to last, writes the summary with Digest and
// returns the plan.
func summarize(t *testing.T, c *Context, id, first, last MessageID) (*Brief, Plan) {
	t.Helper()
	b, err := c.Brief(Plan{Summary: &Summary{Replace: span(c, first, last)}})
	require.NoError(t, err)
	text, err := Digest{}.Summarize(context.Background(), b)
	require.NoError(t, err)
	return b, Plan{Summary: &Summary{Replace: b.Replace, ID: id, Text: text, Pointers: b.Pointers}}
}

func TestSummaryReplacesTheRun(t *testing.T) {
	c := debugSession(t, Config{})
	before := c.Tokens()
	b, p := summarize(t, c, "s1", "u1", "r2")
	assert.Equal(t, []MessageID{"u1", "a1", "r1", "a2", "r2"}, b.Replace)
	assert.Equal(t, 40+30+400+30+3000, b.Tokens)
	var required []string
	for _, f := range b.Facts {
		required = append(required, f.Text)
	}
	assert.Contains(t, required, "prod-db-2", "the user's constraint")
	assert.NotContains(t, required, "4242", "r2 can be read again: its facts are not required")

	d, err := c.Prune(p)
	require.NoError(t, err)
	require.NotNil(t, d.Summary)
	assert.Equal(t, b.Replace, d.Evict)
	assert.Equal(t, b.Replace, d.Summary.Replace)
	assert.Equal(t, b.Tokens-d.Summary.Tokens, d.Freed)
	require.NoError(t, c.Apply(d))

	var ids []MessageID
	for _, e := range c.Snapshot() {
		ids = append(ids, e.ID)
	}
	assert.Equal(t, []MessageID{"sys", "s1", "a3", "u2", "a4"}, ids, "the summary stands where the run began")
	m, ok := c.Message("s1")
	require.True(t, ok)
	assert.Equal(t, RoleSummary, m.Role)
	assert.Equal(t, p.Summary.Text, string(m.Content))
	assert.Equal(t, Irreducible, m.Class)
	assert.Equal(t, before-d.Freed, c.Tokens())
	u, ok := c.UnitOf("s1")
	require.True(t, ok)
	assert.Equal(t, []MessageID{"s1"}, u.Messages, "a unit of its own")
	_, ok = c.Message("r1")
	assert.False(t, ok)
}

func TestSummaryRefusesWhatItDrops(t *testing.T) {
	cases := []struct {
		name string
		edit func(string) string
		code Code
		fact string
	}{
		{"a dropped id", func(s string) string { return strings.ReplaceAll(s, "INC-4711", "the ticket") }, CodeMissingFact, "INC-4711"},
		{"a changed digit", func(s string) string { return strings.ReplaceAll(s, "INC-4711", "INC-4712") }, CodeMissingFact, "INC-4711"},
		{"a negative result left out", func(s string) string {
			return strings.ReplaceAll(s, "ulimit is unlimited, so the OOM is not from the shell", "limits checked")
		}, CodeMissingFact, "Checked /etc/security/limits.conf: ulimit is unlimited, so the OOM is not from the shell"},
		{"the constraint left out", func(s string) string { return strings.ReplaceAll(s, "prod-db-2", "a database") }, CodeMissingFact, "prod-db-2"},
		{"a prompt grown", func(s string) string { return s + strings.Repeat(" padding", 4000) }, CodeSummaryGrows, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := debugSession(t, Config{})
			_, p := summarize(t, c, "s1", "u1", "a3")
			p.Summary.Text = tc.edit(p.Summary.Text)
			_, err := c.Prune(p)
			var pe *PruneError
			require.ErrorAs(t, err, &pe)
			var found *Violation
			for _, v := range pe.Violations {
				if v.Code == tc.code {
					found = v
				}
			}
			require.NotNil(t, found, "violations: %v", pe.Violations)
			assert.ErrorIs(t, found, ErrRegen)
			if tc.fact != "" {
				var texts []string
				for _, f := range found.Facts {
					texts = append(texts, f.Text)
				}
				assert.Contains(t, texts, tc.fact)
			}
		})
	}
}

func TestSummaryBoundary(t *testing.T) {
	t.Run("part of a unit under SplitStrict", func(t *testing.T) {
		c := debugSession(t, Config{})
		_, err := c.Brief(Plan{Summary: &Summary{Replace: []MessageID{"u1", "a1"}}, Split: SplitStrict})
		// a1's unit holds r1 too.
		var pe *PruneError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, CodeSplit, pe.Violations[0].Code)
	})
	t.Run("a gap", func(t *testing.T) {
		c := debugSession(t, Config{})
		require.NoError(t, c.Pin("a2"))
		_, err := c.Brief(Plan{Summary: &Summary{Replace: []MessageID{"u1", "a1", "r1", "a2", "r2", "a3"}}})
		var pe *PruneError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, CodeGap, pe.Violations[0].Code)
		assert.Equal(t, []MessageID{"a2", "r2"}, pe.Violations[0].Messages, "the pinned unit stays inside the run")
		assert.ErrorIs(t, err, ErrBoundary)
	})
	t.Run("an unread result", func(t *testing.T) {
		c := debugSession(t, Config{})
		require.NoError(t, c.Append(Message{ID: "a5", Role: RoleAssistant, Tokens: 10, Calls: []Call{{ID: "c5", Tool: "read_file"}}}))
		require.NoError(t, c.Append(Message{ID: "r5", Role: RoleTool, Tokens: 900, Answers: []CallID{"c5"}, Content: []byte("fresh")}))
		_, err := c.Brief(Plan{Summary: &Summary{Replace: []MessageID{"a4", "r5"}}, Split: SplitStrict})
		var pe *PruneError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, CodeUnread, pe.Violations[len(pe.Violations)-1].Code)
	})
	t.Run("a pending call defers", func(t *testing.T) {
		c := debugSession(t, Config{})
		require.NoError(t, c.Append(Message{ID: "a5", Role: RoleAssistant, Tokens: 10, Calls: []Call{{ID: "c5", Tool: "read_file"}}}))
		_, err := c.Brief(Plan{Summary: &Summary{Replace: []MessageID{"u1"}}})
		assert.ErrorIs(t, err, ErrDeferred)
	})
}

func TestSummaryInputErrors(t *testing.T) {
	c := debugSession(t, Config{})
	for name, p := range map[string]Plan{
		"no text":        {Summary: &Summary{Replace: []MessageID{"u1"}, ID: "s1", Text: "  "}},
		"no id":          {Summary: &Summary{Replace: []MessageID{"u1"}, Text: "x"}},
		"no run":         {Summary: &Summary{ID: "s1", Text: "x"}},
		"an id held":     {Summary: &Summary{Replace: []MessageID{"u1"}, ID: "u2", Text: "x"}},
		"an unknown id":  {Summary: &Summary{Replace: []MessageID{"nope"}, ID: "s1", Text: "x"}},
		"with evictions": {Evict: []MessageID{"u2"}, Summary: &Summary{Replace: []MessageID{"u1"}, ID: "s1", Text: "x"}},
	} {
		_, err := c.Prune(p)
		var ie *InputError
		assert.ErrorAs(t, err, &ie, name)
		assert.ErrorIs(t, err, ErrInvalidInput, name)
	}
}

// A secret never reaches the summarizer, and only its pointer lets a
// summary stand for it.
func TestSummarySecret(t *testing.T) {
	store := map[Pointer][]Message{}
	res := ResolverFunc(func(p Pointer) bool { _, ok := store[p]; return ok })
	c := debugSession(t, Config{Resolver: res})
	require.NoError(t, c.Mark("r1", OneTimeSecret))
	var seen []string
	rec := SummarizerFunc(func(ctx context.Context, b *Brief) (string, error) {
		for _, m := range b.Messages {
			seen = append(seen, string(m.Content))
			for _, k := range m.Calls {
				seen = append(seen, string(k.Args))
			}
		}
		return Digest{}.Summarize(ctx, b)
	})
	b, err := c.Brief(Plan{Summary: &Summary{Replace: span(c, "u1", "a3")}})
	require.NoError(t, err)
	assert.Equal(t, []MessageID{"r1"}, b.Withheld)
	assert.Equal(t, []MessageID{"r1"}, b.Spill)
	text, err := rec.Summarize(context.Background(), b)
	require.NoError(t, err)
	for _, s := range seen {
		assert.NotContains(t, s, "limits.conf", "the secret's content reached the summarizer")
	}
	_, err = c.Prune(Plan{Summary: &Summary{Replace: b.Replace, ID: "s1", Text: text}})
	var pe *PruneError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, CodeSecret, pe.Violations[0].Code)

	// Spilled, and the summary carries the pointer: it may go.
	ptr := Pointer{Store: "t", Key: "seg-1"}
	m, _ := c.Message("r1")
	store[ptr] = []Message{m}
	require.NoError(t, c.Spill("r1", ptr))
	b, p := summarize(t, c, "s1", "u1", "a3")
	assert.Equal(t, []Pointer{ptr}, b.Pointers)
	assert.Contains(t, p.Summary.Text, "seg-1")
	d, err := c.Prune(p)
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
}

// Compaction after compaction keeps what the first one carried.
func TestSummaryOfASummaryCarriesItsFacts(t *testing.T) {
	c := debugSession(t, Config{})
	_, p := summarize(t, c, "s1", "u1", "a3")
	d, err := c.Prune(p)
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	require.NoError(t, c.Append(Message{ID: "a5", Role: RoleAssistant, Tokens: 20, Content: []byte("cgroup memory.max is 512M")}))
	require.NoError(t, c.Append(Message{ID: "u3", Role: RoleUser, Tokens: 5, Content: []byte("ok")}))
	require.NoError(t, c.Append(Message{ID: "a6", Role: RoleAssistant, Tokens: 5, Content: []byte("noted")}))

	b, err := c.Brief(Plan{Summary: &Summary{Replace: span(c, "s1", "a5")}})
	require.NoError(t, err)
	var required []string
	for _, f := range b.Facts {
		required = append(required, f.Text)
	}
	assert.Contains(t, required, "INC-4711", "the first summary's facts are required of the second")
	assert.Contains(t, required, "prod-db-2")

	_, err = c.Prune(Plan{Summary: &Summary{Replace: b.Replace, ID: "s2", Text: "cgroup memory.max is 512M; earlier work summarized"}})
	var pe *PruneError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, CodeMissingFact, pe.Violations[0].Code)
	assert.Equal(t, []MessageID{"s1"}, pe.Violations[0].Messages)
	assert.True(t, errors.Is(err, ErrRegen))
}

// A guard with a Summarizer compacts the oldest units into a summary
// that keeps every fact of what cannot be obtained again, turn after
// turn: compaction after compaction loses nothing.
func TestGuardCompactsAndKeepsEveryFact(t *testing.T) {
	c := NewContext(Config{Counter: ApproxCounter{}})
	require.NoError(t, c.RegisterTool(Tool{Name: "lookup"})) // open-world: irreducible results
	require.NoError(t, c.Append(Message{ID: "sys", Role: RoleSystem, Pinned: true, Content: []byte("You look orders up.")}))
	g := Guard{Budget: 1500, Trigger: 2500, Summarizer: Digest{}, Policy: OldestFirst{Keep: 4}}
	compactions := 0
	for i := range 120 {
		n := strconv.Itoa(i)
		order := "ORD-" + strconv.Itoa(1000+i)
		require.NoError(t, c.Append(Message{ID: MessageID("u" + n), Role: RoleUser, Content: []byte("Check the next order, number " + n + ".")}))
		require.NoError(t, c.Append(Message{ID: MessageID("a" + n), Role: RoleAssistant, Calls: []Call{{ID: CallID("c" + n), Tool: "lookup", Args: json.RawMessage(`{"q":"next"}`)}}}))
		require.NoError(t, c.Append(Message{ID: MessageID("r" + n), Role: RoleTool, Answers: []CallID{CallID("c" + n)},
			Content: []byte(`{"order":"` + order + `","status":"held","note":"` + strings.Repeat("lorem ipsum ", 40) + `"}`)}))
		require.NoError(t, c.Append(Message{ID: MessageID("b" + n), Role: RoleAssistant, Content: []byte("Order " + order + " is held.")}))
		res, err := g.Check(c)
		require.NoError(t, err, "turn %d", i)
		for _, d := range res.Decisions {
			if d.Summary != nil {
				compactions++
			}
		}
		require.LessOrEqual(t, c.Tokens(), g.Trigger, "turn %d: %v", i, res.Reason)
	}
	assert.Greater(t, compactions, 5)
	var all strings.Builder
	for _, e := range c.Snapshot() {
		m, _ := c.Message(e.ID)
		all.Write(m.Content)
	}
	for i := range 120 {
		assert.Contains(t, all.String(), "ORD-"+strconv.Itoa(1000+i))
	}
}

// A message marked with a fact but holding none the finder knows is
// carried whole when short; a long one only a pointer can stand for.
func TestSummaryMarkedTextWithoutFacts(t *testing.T) {
	c := debugSession(t, Config{})
	require.NoError(t, c.Append(Message{ID: "u3", Role: RoleUser, Tokens: 10, Facts: UserConstraint, Content: []byte("keep the tone formal")}))
	require.NoError(t, c.Append(Message{ID: "u4", Role: RoleUser, Tokens: 300, Facts: UserConstraint, Content: []byte(strings.Repeat("be kind and be brief ", 40))}))
	require.NoError(t, c.Append(Message{ID: "a7", Role: RoleAssistant, Tokens: 5, Content: []byte("sure")}))
	b, err := c.Brief(Plan{Summary: &Summary{Replace: span(c, "u3", "u4")}})
	require.NoError(t, err)
	assert.Equal(t, []Fact{{Message: "u3", Kind: "text", Text: "keep the tone formal"}}, b.Facts)
	assert.Equal(t, []MessageID{"u4"}, b.Spill)
	_, err = c.Prune(Plan{Summary: &Summary{Replace: []MessageID{"u3"}, ID: "s", Text: "the user wants a formal tone"}})
	var pe *PruneError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, CodeMissingFact, pe.Violations[0].Code)
	_, err = c.Prune(Plan{Summary: &Summary{Replace: []MessageID{"u3"}, ID: "s", Text: "said: keep the tone formal"}})
	require.NoError(t, err, "the whole text carried")
	_, err = c.Prune(Plan{Summary: &Summary{Replace: []MessageID{"u4"}, ID: "s", Text: "kindness"}})
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, CodeUserConstraint, pe.Violations[0].Code)
}

// A run the boundary leaves empty is refused: Prune and Brief fail with
// the refusals, and nothing changes.
func TestSummaryRunLeftEmpty(t *testing.T) {
	for _, split := range []SplitMode{SplitGrow, SplitShrink} {
		c := debugSession(t, Config{})
		before := c.Tokens()
		p := Plan{Summary: &Summary{Replace: []MessageID{"sys"}, ID: "s1", Text: "a short note"}, Split: split}
		for _, do := range []func() error{
			func() error { _, err := c.Prune(p); return err },
			func() error { _, err := c.Brief(p); return err },
		} {
			var pe *PruneError
			require.ErrorAs(t, do(), &pe, "split %v", split)
			require.Len(t, pe.Violations, 1)
			assert.Equal(t, CodePinned, pe.Violations[0].Code)
			assert.Equal(t, []MessageID{"sys"}, pe.Violations[0].Messages)
		}
		assert.Equal(t, before, c.Tokens())
	}
}

package pruneguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pg "github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// shortSession is a short session whose user message holds facts that
// cannot be had again, followed by a turn that stays.
func shortSession(t *testing.T, userText string) *pg.Context {
	t.Helper()
	c := pg.NewContext(pg.Config{})
	for _, m := range []pg.Message{
		{ID: "sys", Role: pg.RoleSystem, Pinned: true, Tokens: 10, Content: []byte("You are an agent.")},
		{ID: "u1", Role: pg.RoleUser, Tokens: 400, Content: []byte(userText)},
		{ID: "a1", Role: pg.RoleAssistant, Tokens: 400, Content: []byte("Understood.")},
		{ID: "u2", Role: pg.RoleUser, Tokens: 10, Content: []byte("Go on.")},
		{ID: "a2", Role: pg.RoleAssistant, Tokens: 10, Content: []byte("Working.")},
	} {
		require.NoError(t, c.Append(m))
	}
	return c
}

func summaryOf(text string, ids ...pg.MessageID) pg.Plan {
	return pg.Plan{Summary: &pg.Summary{Replace: ids, ID: "s1", Text: text}}
}

// missing returns the texts of the facts a CodeMissingFact violation of
// err names, or fails.
func missing(t *testing.T, err error) []string {
	t.Helper()
	var pe *pg.PruneError
	require.ErrorAs(t, err, &pe)
	var out []string
	for _, v := range pe.Violations {
		if v.Code == pg.CodeMissingFact {
			for _, f := range v.Facts {
				out = append(out, f.Text)
			}
		}
	}
	require.NotEmpty(t, out, "no missing-fact violation: %v", pe.Violations)
	return out
}

// A fact is carried verbatim, white space runs as one space, nothing
// else forgiven: not another case, not a fact written inside a longer
// one, in any order of the facts.
func TestCompactionFactCarriedVerbatim(t *testing.T) {
	user := "Ticket INC-4711 is open. Never restart prod-db-2.\nThe log is /etc/security/limits.conf.\nChecked: the OOM is not from the shell."
	cases := []struct {
		name, text string
		ok         bool
	}{
		{"all, reordered", "Log: /etc/security/limits.conf; keep prod-db-2 up; ticket INC-4711.; Checked: the OOM is not from the shell", true},
		{"white space changed", "ticket\n\tINC-4711,   prod-db-2 and\n/etc/security/limits.conf; Checked: the OOM is not from the shell", true},
		{"white space inside a fact", "ticket INC-4711, prod-db-2, /etc/security/limits.conf; Checked:\n the  OOM is not\tfrom the shell", true},
		{"a negative result turned", "ticket INC-4711, prod-db-2, /etc/security/limits.conf; Checked: the OOM is from the shell", false},
		{"a non-breaking space inside a fact", "ticket INC-4711, prod-db-2, /etc/security/limits.conf; Checked: the OOM is not\u00a0from the shell", false},
		{"another case", "ticket inc-4711, prod-db-2, /etc/security/limits.conf; Checked: the OOM is not from the shell", false},
		{"a digit dropped", "ticket INC-471, prod-db-2, /etc/security/limits.conf; Checked: the OOM is not from the shell", false},
		{"a digit added", "ticket INC-47111, prod-db-2, /etc/security/limits.conf; Checked: the OOM is not from the shell", false},
		{"inside a longer word", "ticket XINC-4711, prod-db-2, /etc/security/limits.conf; Checked: the OOM is not from the shell", false},
		{"inside a longer path", "ticket INC-4711, prod-db-2, /opt/etc/security/limits.conf; Checked: the OOM is not from the shell", false},
		{"inside a longer relative path", "ticket INC-4711, prod-db-2, ./etc/security/limits.conf; Checked: the OOM is not from the shell", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := shortSession(t, user)
			_, err := c.Prune(summaryOf(tc.text, "u1", "a1"))
			if tc.ok {
				require.NoError(t, err)
				return
			}
			assert.NotEmpty(t, missing(t, err))
		})
	}
}

// A setting is carried as the Fact's text, and in the other forms the
// Fact documentation lists; its value changed is not.
func TestCompactionSettingForms(t *testing.T) {
	for text, ok := range map[string]bool{
		"run with dry_run=true":      true,
		"run with dry_run: true":     true,
		`run with {"dry_run": true}`: true,
		"run with dry_run=false":     false,
		"run with DRY_RUN=true":      false,
	} {
		c := shortSession(t, "Deploy the service with dry_run=true only.")
		_, err := c.Prune(summaryOf(text, "u1", "a1"))
		if ok {
			assert.NoError(t, err, text)
		} else {
			assert.Contains(t, missing(t, err), "dry_run=true", text)
		}
	}
}

// compactTo summarizes run with Digest, applies the summary under id
// and returns the run's Brief.
func compactTo(t *testing.T, c *pg.Context, id pg.MessageID, run []pg.MessageID) *pg.Brief {
	t.Helper()
	b, err := c.Brief(pg.Plan{Summary: &pg.Summary{Replace: run}})
	require.NoError(t, err)
	text, err := pg.Digest{}.Summarize(context.Background(), b)
	require.NoError(t, err)
	d, err := c.Prune(pg.Plan{Summary: &pg.Summary{Replace: b.Replace, ID: id, Text: text, Pointers: b.Pointers}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	return b
}

func factTexts(fs []pg.Fact) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Text)
	}
	return out
}

// Compaction after compaction after compaction: the facts the first
// summary carried, and the key of the pointer it carried, are required
// of the third; a third that drops either is refused, naming the
// summary it replaces.
func TestCompactionThreeCompactions(t *testing.T) {
	ptr := pg.Pointer{Store: "spill", Key: "seg-abc123"}
	c := pg.NewContext(pg.Config{Resolver: pg.ResolverFunc(func(p pg.Pointer) bool { return p == ptr })})
	turn := func(n, text string) []pg.MessageID {
		require.NoError(t, c.Append(pg.Message{ID: pg.MessageID("u" + n), Role: pg.RoleUser, Tokens: 300, Content: []byte(text)}))
		require.NoError(t, c.Append(pg.Message{ID: pg.MessageID("a" + n), Role: pg.RoleAssistant, Tokens: 300, Content: []byte("Noted, turn " + n + ".")}))
		return []pg.MessageID{pg.MessageID("u" + n), pg.MessageID("a" + n)}
	}
	run := turn("1", "Ticket INC-4711 stays open; never restart prod-db-2.")
	require.NoError(t, c.Append(pg.Message{ID: "u1b", Role: pg.RoleUser, Tokens: 300, Pointer: ptr, Content: []byte("the secret plan")}))
	require.NoError(t, c.Append(pg.Message{ID: "a1b", Role: pg.RoleAssistant, Tokens: 300, Content: []byte("ok")}))
	run = append(run, "u1b", "a1b")
	turn("9", "Go on.") // the last turn stays

	b1 := compactTo(t, c, "s1", run)
	assert.Equal(t, []pg.Pointer{ptr}, b1.Pointers)
	run = append(append([]pg.MessageID{"s1", "u9", "a9"}, turn("2", "The build id is BLD-20261201.")...), turn("8", "Go on.")...)
	turn("7", "Go on.")
	b2 := compactTo(t, c, "s2", run)
	assert.Subset(t, factTexts(b2.Facts), []string{"INC-4711", "prod-db-2", ptr.Key}, "the first summary's facts and key, asked of the second")
	run = append(append([]pg.MessageID{"s2", "u7", "a7"}, turn("3", "Deadline is 2026-12-24.")...), turn("6", "Go on.")...)
	turn("5", "Go on.")

	b3, err := c.Brief(pg.Plan{Summary: &pg.Summary{Replace: run}})
	require.NoError(t, err)
	assert.Subset(t, factTexts(b3.Facts), []string{"INC-4711", "prod-db-2", ptr.Key, "BLD-20261201", "2026-12-24"})
	full, err := pg.Digest{}.Summarize(context.Background(), b3)
	require.NoError(t, err)
	for _, drop := range []string{"INC-4711", ptr.Key, "BLD-20261201"} {
		text := strings.ReplaceAll(full, drop, "it")
		_, err := c.Prune(pg.Plan{Summary: &pg.Summary{Replace: b3.Replace, ID: "s3", Text: text}})
		var pe *pg.PruneError
		require.ErrorAs(t, err, &pe, drop)
		require.Contains(t, missing(t, err), drop)
		assert.Equal(t, pg.MessageID("s2"), pe.Violations[0].Messages[0])
	}
	_, err = c.Prune(pg.Plan{Summary: &pg.Summary{Replace: b3.Replace, ID: "s3", Text: full}})
	require.NoError(t, err)
}

// A summary must hold fewer tokens than its run: as many is refused.
func TestCompactionSummaryAsLargeAsItsRun(t *testing.T) {
	c := shortSession(t, "Ticket INC-4711.")
	for tokens, ok := range map[int]bool{799: true, 800: false, 801: false} {
		_, err := c.Prune(pg.Plan{Summary: &pg.Summary{Replace: []pg.MessageID{"u1", "a1"}, ID: "s1", Text: "INC-4711", Tokens: tokens}})
		if ok {
			assert.NoError(t, err)
			continue
		}
		var pe *pg.PruneError
		require.ErrorAs(t, err, &pe, "%d tokens", tokens)
		assert.Equal(t, pg.CodeSummaryGrows, pe.Violations[0].Code)
		assert.ErrorIs(t, err, pg.ErrRegen)
	}
}

// A Summarizer's error, or a summary the gates refuse, is reported in
// the Result, and the check goes on with evictions.
func TestCompactionGuardGoesOnAfterARefusal(t *testing.T) {
	boom := errors.New("model down")
	for name, s := range map[string]pg.Summarizer{
		"error": pg.SummarizerFunc(func(context.Context, *pg.Brief) (string, error) { return "", boom }),
		"drops": pg.SummarizerFunc(func(context.Context, *pg.Brief) (string, error) { return "[summary] things happened", nil }),
	} {
		t.Run(name, func(t *testing.T) {
			c := pg.NewContext(pg.Config{})
			pure := pg.Annotations{ReadOnlyHint: pg.Bool(true), OpenWorldHint: pg.Bool(false)}
			require.NoError(t, c.RegisterTool(pg.Tool{Name: "read_file", Annotations: pure}))
			require.NoError(t, c.Append(pg.Message{ID: "u1", Role: pg.RoleUser, Tokens: 50, Content: []byte("Fix INC-4711.")}))
			require.NoError(t, c.Append(pg.Message{ID: "a1", Role: pg.RoleAssistant, Tokens: 20, Calls: []pg.Call{{ID: "c1", Tool: "read_file", Args: json.RawMessage(`{"path":"/x"}`)}}}))
			require.NoError(t, c.Append(pg.Message{ID: "r1", Role: pg.RoleTool, Tokens: 3000, Answers: []pg.CallID{"c1"}, Content: []byte("lots")}))
			require.NoError(t, c.Append(pg.Message{ID: "a2", Role: pg.RoleAssistant, Tokens: 20, Content: []byte("Read it.")}))
			require.NoError(t, c.Append(pg.Message{ID: "u2", Role: pg.RoleUser, Tokens: 10, Content: []byte("next")}))
			var logged bytes.Buffer
			logger := slog.New(slog.NewJSONHandler(&logged, nil))
			res, err := pg.Guard{Budget: 1000, Summarizer: s, Logger: logger}.Check(c)
			require.NoError(t, err)
			require.Error(t, res.Reason)
			if name == "error" {
				var pe *pg.PruneError
				assert.ErrorAs(t, res.Reason, &pe, "a later refusal is the last error met")
				require.Len(t, res.SummaryErrors, 1, "the Summarizer's error is kept all the same")
				assert.ErrorIs(t, res.SummaryErrors[0], boom)
				assert.Contains(t, logged.String(), `"msg":"`+pg.LogSummaryFailed+`"`)
				assert.Contains(t, logged.String(), `"error":"model down"`)
				assert.Contains(t, logged.String(), `"summary_errors":1`)
			} else {
				assert.Empty(t, res.SummaryErrors)
				assert.NotContains(t, logged.String(), pg.LogSummaryFailed)
				var codes []pg.Code
				for _, v := range res.Refused {
					codes = append(codes, v.Code)
				}
				assert.Contains(t, codes, pg.CodeMissingFact)
			}
			assert.LessOrEqual(t, c.Tokens(), 1000, "the check evicted instead")
			_, kept := c.Message("u1")
			assert.True(t, kept, "the user's words stay when no summary carries them")
		})
	}
}

// A Summarizer's error is the Result's Reason when the evictions after
// it meet no other.
func TestCompactionSummarizerErrorIsTheReason(t *testing.T) {
	boom := errors.New("model down")
	c := pg.NewContext(pg.Config{})
	pure := pg.Annotations{ReadOnlyHint: pg.Bool(true), OpenWorldHint: pg.Bool(false)}
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "read_file", Annotations: pure}))
	require.NoError(t, c.Append(pg.Message{ID: "u1", Role: pg.RoleUser, Tokens: 50, Pinned: true, Content: []byte("Fix INC-4711.")}))
	require.NoError(t, c.Append(pg.Message{ID: "a1", Role: pg.RoleAssistant, Tokens: 20, Calls: []pg.Call{{ID: "c1", Tool: "read_file", Args: json.RawMessage(`{"path":"/x"}`)}}}))
	require.NoError(t, c.Append(pg.Message{ID: "r1", Role: pg.RoleTool, Tokens: 3000, Answers: []pg.CallID{"c1"}, Content: []byte("lots")}))
	require.NoError(t, c.Append(pg.Message{ID: "a2", Role: pg.RoleAssistant, Tokens: 20, Content: []byte("Read it.")}))
	require.NoError(t, c.Append(pg.Message{ID: "u2", Role: pg.RoleUser, Tokens: 10, Content: []byte("next")}))
	s := pg.SummarizerFunc(func(context.Context, *pg.Brief) (string, error) { return "", boom })
	res, err := pg.Guard{Budget: 1000, Summarizer: s}.Check(c)
	require.NoError(t, err)
	assert.ErrorIs(t, res.Reason, boom)
	assert.LessOrEqual(t, c.Tokens(), 1000, "the check evicted instead")
}

// schemaSession is a session with one call to a mutation tool that
// takes no tombstone, in a run that may be summarized, and with second
// set another call to it after the run.
func schemaSession(t *testing.T, second bool) *pg.Context {
	t.Helper()
	c := pg.NewContext(pg.Config{})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "deploy", NoTombstone: true, Schema: json.RawMessage(`{"type":"object","properties":{"env":{"type":"string"}}}`)}))
	for _, m := range []pg.Message{
		{ID: "u1", Role: pg.RoleUser, Tokens: 100, Content: []byte("Deploy to canary-eu-2.")},
		{ID: "a1", Role: pg.RoleAssistant, Tokens: 100, Calls: []pg.Call{{ID: "c1", Tool: "deploy", Args: json.RawMessage(`{"env":"canary-eu-2"}`)}}},
		{ID: "r1", Role: pg.RoleTool, Tokens: 100, Answers: []pg.CallID{"c1"}, Content: []byte("deployed build BLD-4711")},
		{ID: "a2", Role: pg.RoleAssistant, Tokens: 100, Content: []byte("Done.")},
	} {
		require.NoError(t, c.Append(m))
	}
	if second {
		require.NoError(t, c.Append(pg.Message{ID: "a3", Role: pg.RoleAssistant, Tokens: 10, Calls: []pg.Call{{ID: "c3", Tool: "deploy", Args: json.RawMessage(`{"env":"prod-eu-1"}`)}}}))
		require.NoError(t, c.Append(pg.Message{ID: "r3", Role: pg.RoleTool, Tokens: 10, Answers: []pg.CallID{"c3"}, Content: []byte("deployed")}))
	}
	require.NoError(t, c.Append(pg.Message{ID: "u2", Role: pg.RoleUser, Tokens: 10, Content: []byte("next")}))
	return c
}

// Arguments that leave through a summary leave for the schema gate too:
// a summary that takes a mutation tool's last arguments lets its schema
// go with no tombstone; while a call to it stays outside the run, the
// schema cannot go (the tool takes no tombstone).
func TestCompactionSummaryTakesTheLastArguments(t *testing.T) {
	text := "[summary] deployed canary-eu-2 (build BLD-4711); Deploy to canary-eu-2. deployed build BLD-4711 Done."
	plan := pg.Plan{DropSchemas: []string{"deploy"}, Summary: &pg.Summary{Replace: []pg.MessageID{"u1", "a1", "r1", "a2"}, ID: "s", Text: text}}
	d, err := schemaSession(t, false).Prune(plan)
	require.NoError(t, err)
	assert.Equal(t, []string{"deploy"}, d.DropSchemas)
	assert.Empty(t, d.Tombstones)

	_, err = schemaSession(t, true).Prune(plan)
	assert.ErrorIs(t, err, pg.ErrSchema)
}

// A one-time secret never reaches the Summarizer, in any field of any
// Brief of a guard's compaction, nor the summary text (the pointer line
// included); with a store, it is spilled, and read back by its key.
func TestCompactionSecretNeverSummarized(t *testing.T) {
	const secret = "sk-live-QX7734ZZ"
	sp := &spill.Spiller{Store: &spill.Memory{}}
	c := pg.NewContext(pg.Config{Counter: pg.ApproxCounter{}, Resolver: sp})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "vault"}))
	require.NoError(t, c.Append(pg.Message{ID: "u0", Role: pg.RoleUser, Content: []byte("Fetch the deploy key for INC-4711.")}))
	require.NoError(t, c.Append(pg.Message{ID: "a0", Role: pg.RoleAssistant, Calls: []pg.Call{{ID: "c0", Tool: "vault", Args: json.RawMessage(`{"token":"` + secret + `"}`)}}, Facts: pg.OneTimeSecret}))
	require.NoError(t, c.Append(pg.Message{ID: "r0", Role: pg.RoleTool, Answers: []pg.CallID{"c0"}, Facts: pg.OneTimeSecret,
		Content: []byte("key " + secret + " valid until 2026-12-31 " + strings.Repeat("padding ", 200))}))
	require.NoError(t, c.Append(pg.Message{ID: "b0", Role: pg.RoleAssistant, Content: []byte("I have the key.")}))
	for i := 1; i < 30; i++ {
		n := strconv.Itoa(i)
		require.NoError(t, c.Append(pg.Message{ID: pg.MessageID("u" + n), Role: pg.RoleUser, Content: []byte("Step " + n + " " + strings.Repeat("text ", 60))}))
		require.NoError(t, c.Append(pg.Message{ID: pg.MessageID("b" + n), Role: pg.RoleAssistant, Content: []byte("Done " + n + ".")}))
	}
	var briefs []string
	rec := pg.SummarizerFunc(func(ctx context.Context, b *pg.Brief) (string, error) {
		j, err := json.Marshal(b)
		require.NoError(t, err)
		briefs = append(briefs, string(j))
		return pg.Digest{PointerText: sp.PointerText}.Summarize(ctx, b)
	})
	res, err := pg.Guard{Budget: 800, Spill: sp, Summarizer: rec}.CheckContext(t.Context(), c)
	require.NoError(t, err)
	require.NotEmpty(t, briefs, "the guard compacted: %v", res.Reason)
	for _, b := range briefs {
		assert.NotContains(t, b, secret, "a Brief holds the secret")
		assert.NotContains(t, b, "QX7734ZZ")
	}
	var summary *pg.Summary
	for _, d := range res.Decisions {
		if d.Summary != nil && slices.Contains(d.Summary.Replace, "r0") {
			summary = d.Summary
		}
	}
	require.NotNil(t, summary, "the secret's unit went in a summary: %v", res.Reason)
	assert.NotContains(t, summary.Text, "QX7734ZZ")
	assert.Contains(t, summary.Text, "INC-4711")
	require.NotEmpty(t, summary.Pointers)
	back, err := sp.Recall(t.Context(), summary.Pointers[0])
	require.NoError(t, err)
	var found bool
	for _, m := range back {
		found = found || strings.Contains(string(m.Content), secret)
	}
	assert.True(t, found, "the secret can be read back")
}

// Digest's text starts with a bracketed line; MaxTokens bounds what it
// holds beyond the required facts and the pointer lines, however long
// the run (its first line aside); every required fact and pointer key
// is in it, and the gates pass it.
func TestCompactionDigestBoundOnAHugeRun(t *testing.T) {
	c := pg.NewContext(pg.Config{})
	var run []pg.MessageID
	for i := range 1000 {
		n := strconv.Itoa(i)
		for _, m := range []pg.Message{
			{ID: pg.MessageID("u" + n), Role: pg.RoleUser, Tokens: 30, Content: []byte("Order ORD-" + strconv.Itoa(10000+i) + " at /srv/orders/" + n + ".json")},
			{ID: pg.MessageID("a" + n), Role: pg.RoleAssistant, Tokens: 30, Content: []byte("Checked " + strings.Repeat("é", 200))},
		} {
			require.NoError(t, c.Append(m))
			run = append(run, m.ID)
		}
	}
	require.NoError(t, c.Append(pg.Message{ID: "last", Role: pg.RoleUser, Tokens: 5, Content: []byte("next")}))
	b, err := c.Brief(pg.Plan{Summary: &pg.Summary{Replace: run}})
	require.NoError(t, err)
	require.Len(t, b.Facts, 2000)
	b.Pointers = []pg.Pointer{{Store: "spill", Key: "seg-k1"}, {Store: "spill", Key: "seg-k2"}}
	for _, maxTokens := range []int{0, 1, 50, 400} {
		d := pg.Digest{MaxTokens: maxTokens}
		text, err := d.Summarize(context.Background(), b)
		require.NoError(t, err)
		first, _, _ := strings.Cut(text, "\n")
		assert.True(t, strings.HasPrefix(first, "[") && strings.HasSuffix(first, "]"), "first line %q", first)
		carrier := text
		for _, p := range b.Pointers {
			require.Contains(t, text, p.Key)
		}
		// What it holds beyond the required facts and the pointer lines.
		var beyond int
		for _, l := range strings.SplitAfter(carrier, "\n") {
			if !strings.HasPrefix(l, "Facts to keep:") && !strings.Contains(l, "seg-k") {
				beyond += len(l)
			}
		}
		bound := 4 * maxTokens
		if maxTokens == 0 {
			bound = 4 * max(64, b.Tokens/4) // zero: a quarter of the run, at least 64
		}
		assert.LessOrEqual(t, beyond, max(bound, len(first)+1), "MaxTokens %d:\n%.600s", maxTokens, text)
		_, err = c.Prune(pg.Plan{Summary: &pg.Summary{Replace: b.Replace, ID: "s", Text: text}})
		require.NoError(t, err, "the Digest of the run passes the gates")
	}
}

// A pointer that does not resolve, or whose key the text does not show,
// stands for nothing: the summary needs the facts it would have stood
// for, and the decision leaves it out.
func TestCompactionSummaryPointerMustResolve(t *testing.T) {
	c := shortSession(t, "Ticket INC-4711.")
	bogus := pg.Pointer{Store: "spill", Key: "seg-nowhere"}
	d, err := c.Prune(pg.Plan{Summary: &pg.Summary{Replace: []pg.MessageID{"u1", "a1"}, ID: "s1", Text: "INC-4711, see seg-nowhere", Pointers: []pg.Pointer{bogus}}})
	require.NoError(t, err)
	assert.Empty(t, d.Summary.Pointers)

	ptr := pg.Pointer{Store: "spill", Key: "seg-k1"}
	c = pg.NewContext(pg.Config{Resolver: pg.ResolverFunc(func(p pg.Pointer) bool { return p == ptr })})
	require.NoError(t, c.Append(pg.Message{ID: "u1", Role: pg.RoleUser, Tokens: 400, Pointer: ptr, Content: []byte("Ticket INC-4711.")}))
	require.NoError(t, c.Append(pg.Message{ID: "a1", Role: pg.RoleAssistant, Tokens: 400, Content: []byte("ok")}))
	require.NoError(t, c.Append(pg.Message{ID: "u2", Role: pg.RoleUser, Tokens: 10, Content: []byte("next")}))
	_, err = c.Prune(pg.Plan{Summary: &pg.Summary{Replace: []pg.MessageID{"u1", "a1"}, ID: "s1", Text: "a ticket, stored", Pointers: []pg.Pointer{ptr}}})
	assert.Contains(t, missing(t, err), "INC-4711", "the key not in the text: the pointer stands for nothing")
	d, err = c.Prune(pg.Plan{Summary: &pg.Summary{Replace: []pg.MessageID{"u1", "a1"}, ID: "s1", Text: "a ticket, stored at seg-k1", Pointers: []pg.Pointer{ptr}}})
	require.NoError(t, err)
	assert.Equal(t, []pg.Pointer{ptr}, d.Summary.Pointers)
}

// A guard's Brief has a Room below what the run holds less what the
// check must free, and Digest keeps within it: the check reaches its
// budget with the summary alone.
func TestCompactionGuardRoom(t *testing.T) {
	c := pg.NewContext(pg.Config{})
	for i := range 20 {
		n := strconv.Itoa(i)
		require.NoError(t, c.Append(pg.Message{ID: pg.MessageID("u" + n), Role: pg.RoleUser, Tokens: 100, Content: []byte("ticket INC-" + n + "00")}))
		require.NoError(t, c.Append(pg.Message{ID: pg.MessageID("a" + n), Role: pg.RoleAssistant, Tokens: 100, Content: []byte("ok")}))
	}
	need := c.Tokens() - 3000
	var briefs []*pg.Brief
	s := pg.SummarizerFunc(func(ctx context.Context, b *pg.Brief) (string, error) {
		briefs = append(briefs, b)
		return pg.Digest{}.Summarize(ctx, b)
	})
	res, err := pg.Guard{Budget: 3000, Summarizer: s}.Check(c)
	require.NoError(t, err)
	require.Len(t, briefs, 1)
	b := briefs[0]
	assert.Positive(t, b.Room)
	assert.LessOrEqual(t, b.Room, b.Tokens-need)
	require.Len(t, res.Decisions, 1, "the summary alone reaches the budget")
	assert.LessOrEqual(t, res.Decisions[0].Summary.Tokens, b.Room)
	assert.LessOrEqual(t, c.Tokens(), 3000)
}

// Without a store, a guard's run ends before the first message only a
// pointer could stand for (a one-time secret here): the summary replaces
// what comes before it, and the secret and what follows stay whole.
func TestCompactionNoStoreRunEndsBeforeASecret(t *testing.T) {
	c := pg.NewContext(pg.Config{})
	for i := range 12 {
		n := strconv.Itoa(i)
		u := pg.Message{ID: pg.MessageID("u" + n), Role: pg.RoleUser, Tokens: 200, Content: []byte("step " + n + " of INC-4711")}
		if i == 6 {
			u.Facts = pg.OneTimeSecret
			u.Content = []byte("the code is 8f3a-QQ19")
		}
		require.NoError(t, c.Append(u))
		require.NoError(t, c.Append(pg.Message{ID: pg.MessageID("a" + n), Role: pg.RoleAssistant, Tokens: 200, Content: []byte("ok " + n)}))
	}
	res, err := pg.Guard{Budget: 2000, Summarizer: pg.Digest{}}.Check(c)
	require.NoError(t, err)
	var sum *pg.Summary
	for _, d := range res.Decisions {
		if d.Summary != nil {
			require.Nil(t, sum, "one summary")
			sum = d.Summary
		}
	}
	require.NotNil(t, sum, "%v", res.Reason)
	assert.Equal(t, []pg.MessageID{"u0", "a0", "u1", "a1", "u2", "a2", "u3", "a3", "u4", "a4", "u5", "a5"}, sum.Replace)
	m, ok := c.Message("u6")
	require.True(t, ok, "the secret stays")
	assert.Equal(t, "the code is 8f3a-QQ19", string(m.Content))
	assert.NotContains(t, sum.Text, "8f3a")
}

// A message a pending planned step names stays: a summary of it is
// refused, naming the step; once the step is complete it may go.
func TestCompactionSummaryOfAPlannedMessage(t *testing.T) {
	c := shortSession(t, "Ticket INC-4711.")
	require.NoError(t, c.PlanStep("st1", "u1"))
	_, err := c.Prune(summaryOf("INC-4711", "u1", "a1"))
	var pe *pg.PruneError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, pg.CodeReferenced, pe.Violations[0].Code)
	assert.Equal(t, []pg.StepID{"st1"}, pe.Violations[0].Steps)
	require.NoError(t, c.CompleteStep("st1"))
	_, err = c.Prune(summaryOf("INC-4711", "u1", "a1"))
	assert.NoError(t, err)
}

// A run named in part grows to whole units under SplitGrow (the
// result's facts then required too) and shrinks under SplitShrink.
func TestCompactionSummarySplit(t *testing.T) {
	build := func() *pg.Context {
		c := pg.NewContext(pg.Config{})
		require.NoError(t, c.RegisterTool(pg.Tool{Name: "lookup"}))
		for _, m := range []pg.Message{
			{ID: "u1", Role: pg.RoleUser, Tokens: 300, Content: []byte("Look up INC-4711.")},
			{ID: "a1", Role: pg.RoleAssistant, Tokens: 300, Calls: []pg.Call{{ID: "c1", Tool: "lookup", Args: json.RawMessage(`{"q":"INC-4711"}`)}}},
			{ID: "r1", Role: pg.RoleTool, Tokens: 300, Answers: []pg.CallID{"c1"}, Content: []byte("owner mia_li_3668")},
			{ID: "a2", Role: pg.RoleAssistant, Tokens: 10, Content: []byte("Found it.")},
			{ID: "u2", Role: pg.RoleUser, Tokens: 10, Content: []byte("next")},
		} {
			require.NoError(t, c.Append(m))
		}
		return c
	}
	c := build()
	b, err := c.Brief(pg.Plan{Summary: &pg.Summary{Replace: []pg.MessageID{"u1", "a1"}}, Split: pg.SplitGrow})
	require.NoError(t, err)
	assert.Equal(t, []pg.MessageID{"u1", "a1", "r1"}, b.Replace)
	assert.Contains(t, factTexts(b.Facts), "mia_li_3668")
	_, err = c.Prune(pg.Plan{Summary: &pg.Summary{Replace: []pg.MessageID{"u1", "a1"}, ID: "s1", Text: "looked up INC-4711"}, Split: pg.SplitGrow})
	assert.Contains(t, missing(t, err), "mia_li_3668", "the grown run's result")

	c = build()
	d, err := c.Prune(pg.Plan{Summary: &pg.Summary{Replace: []pg.MessageID{"u1", "a1"}, ID: "s1", Text: "asked to look up INC-4711"}, Split: pg.SplitShrink})
	require.NoError(t, err)
	assert.Equal(t, []pg.MessageID{"u1"}, d.Summary.Replace)
}

// Within a tight room, a Digest passes over a fact too long for what is
// left and writes a shorter one after it; with no model, the same Brief
// gives the same text.
func TestCompactionDigestPassesOverALongFact(t *testing.T) {
	long := "/srv/" + strings.Repeat("deep/", 60) + "file.txt"
	b := &pg.Brief{
		Replace: []pg.MessageID{"u1"}, Tokens: 400,
		Messages: []pg.BriefMessage{{ID: "u1", Role: pg.RoleUser, Content: []byte("see " + long + " and ABC-123"),
			Facts: []pg.Fact{{Message: "u1", Kind: "path", Text: long}, {Message: "u1", Kind: "id", Text: "ABC-123"}}}},
		Room: 60,
	}
	text, err := pg.Digest{}.Summarize(context.Background(), b)
	require.NoError(t, err)
	assert.Contains(t, text, "ABC-123")
	assert.NotContains(t, text, "file.txt", "the long fact does not fit")
	again, err := pg.Digest{}.Summarize(context.Background(), b)
	require.NoError(t, err)
	assert.Equal(t, text, again)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = pg.Digest{}.Summarize(ctx, b)
	assert.ErrorIs(t, err, context.Canceled, "it fails only when ctx is done")
}

// The same session compacted twice, with spilling, on two stores, gives
// the same summaries and the same keys: nothing random goes into either.
func TestCompactionIsReproducible(t *testing.T) {
	play := func() []string {
		sp := &spill.Spiller{Store: &spill.Memory{}, Namespace: "sess-1"}
		c := pg.NewContext(pg.Config{Counter: pg.ApproxCounter{}, Resolver: sp})
		require.NoError(t, c.RegisterTool(pg.Tool{Name: "lookup"}))
		g := pg.Guard{Budget: 1500, Trigger: 2500, Spill: sp, Summarizer: pg.Digest{PointerText: sp.PointerText}}
		var out []string
		for i := range 60 {
			n := strconv.Itoa(i)
			for _, m := range []pg.Message{
				{ID: pg.MessageID("u" + n), Role: pg.RoleUser, Content: []byte("Check order " + n + ".")},
				{ID: pg.MessageID("a" + n), Role: pg.RoleAssistant, Calls: []pg.Call{{ID: pg.CallID("c" + n), Tool: "lookup", Args: json.RawMessage(`{"q":"` + n + `"}`)}}},
				{ID: pg.MessageID("r" + n), Role: pg.RoleTool, Answers: []pg.CallID{pg.CallID("c" + n)}, Content: []byte("ORD-" + n + "00 held. " + strings.Repeat("lorem ", 80))},
				{ID: pg.MessageID("b" + n), Role: pg.RoleAssistant, Content: []byte("ORD-" + n + "00 is held.")},
			} {
				require.NoError(t, c.Append(m))
			}
			res, err := g.CheckContext(t.Context(), c)
			require.NoError(t, err)
			for _, d := range res.Decisions {
				if d.Summary != nil {
					out = append(out, d.Summary.Text)
					for _, p := range d.Summary.Pointers {
						out = append(out, p.Key)
					}
				}
			}
		}
		return out
	}
	first := play()
	require.NotEmpty(t, first)
	assert.Equal(t, first, play())
}

// The commit boundary of a summary: a pinned message refuses its unit
// (CodePinned), an unread one its unit (CodeUnread), a streaming
// message or a pending call defers the plan.
func TestCompactionSummaryBoundaryCodes(t *testing.T) {
	plan := pg.Plan{Split: pg.SplitStrict, Summary: &pg.Summary{Replace: []pg.MessageID{"u1", "a1"}, ID: "s1", Text: "INC-4711"}}
	code := func(err error) pg.Code {
		var pe *pg.PruneError
		require.ErrorAs(t, err, &pe)
		return pe.Violations[0].Code
	}
	c := shortSession(t, "Ticket INC-4711.")
	require.NoError(t, c.Pin("u1"))
	_, err := c.Prune(plan)
	assert.Equal(t, pg.CodePinned, code(err))

	c = shortSession(t, "Ticket INC-4711.")
	_, err = c.Prune(pg.Plan{Split: pg.SplitStrict, Summary: &pg.Summary{Replace: []pg.MessageID{"u2", "a2"}, ID: "s1", Text: "go on"}})
	require.NoError(t, err, "a2 is the model's last word, read")
	require.NoError(t, c.Append(pg.Message{ID: "u3", Role: pg.RoleUser, Tokens: 10, Content: []byte("fresh")}))
	_, err = c.Prune(pg.Plan{Split: pg.SplitStrict, Summary: &pg.Summary{Replace: []pg.MessageID{"u2", "a2", "u3"}, ID: "s1", Text: "go on, fresh"}})
	assert.Equal(t, pg.CodeUnread, code(err))

	c = shortSession(t, "Ticket INC-4711.")
	require.NoError(t, c.Open(pg.Message{ID: "a3", Role: pg.RoleAssistant}))
	_, err = c.Prune(plan)
	assert.ErrorIs(t, err, pg.ErrDeferred, "streaming")

	c = shortSession(t, "Ticket INC-4711.")
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "lookup"}))
	require.NoError(t, c.Append(pg.Message{ID: "a3", Role: pg.RoleAssistant, Tokens: 10, Calls: []pg.Call{{ID: "c3", Tool: "lookup"}}}))
	_, err = c.Prune(plan)
	assert.ErrorIs(t, err, pg.ErrDeferred, "pending")
}

package pruneguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// recorder is a slog.Handler that keeps every record with every
// attribute resolved and flattened ("group.key"), at every level.
type recorder struct {
	mu   sync.Mutex
	recs []logRec
}

type logRec struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (h *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *recorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recorder) WithGroup(string) slog.Handler            { return h }
func (h *recorder) Handle(_ context.Context, r slog.Record) error {
	rec := logRec{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		flatten(rec.attrs, "", a)
		return true
	})
	h.mu.Lock()
	h.recs = append(h.recs, rec)
	h.mu.Unlock()
	return nil
}

func flatten(out map[string]string, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	key := a.Key
	if prefix != "" && key != "" {
		key = prefix + "." + key
	} else if key == "" {
		key = prefix
	}
	if v.Kind() == slog.KindGroup {
		for _, g := range v.Group() {
			flatten(out, key, g)
		}
		return
	}
	out[key] = fmt.Sprint(v.Any())
}

// dump is every record as text, for searching.
func (h *recorder) dump() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, r := range h.recs {
		fmt.Fprintf(&b, "%s %s %v\n", r.level, r.msg, r.attrs)
	}
	return b.String()
}

func (h *recorder) take() []logRec {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.recs
	h.recs = nil
	return out
}

const secret = "SECRET-sk-live-9f8e7d"

// A check that decides, refuses, spills and fails to spill writes records
// with ids, codes, classes and tokens, and never a byte of content.
func TestLogNeverCarriesContent(t *testing.T) {
	h := &recorder{}
	log := slog.New(h)
	sp := &spill.Spiller{Store: &spill.Memory{}}
	c := pruneguard.NewContext(pruneguard.Config{Resolver: sp, HoardTokens: 400})
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "post"}))
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "read", Annotations: pruneguard.Annotations{
		ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 100, Pinned: true, Content: []byte("sys " + secret)}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "task", Role: pruneguard.RoleUser, Tokens: 50, Content: []byte("my key is " + secret), Facts: pruneguard.UserConstraint}))
	for i := 0; i < 6; i++ {
		tool := []string{"post", "read"}[i%2]
		k := pruneguard.CallID(fmt.Sprint("k", i))
		require.NoError(t, c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("a", i)), Role: pruneguard.RoleAssistant, Tokens: 5,
			Content: []byte(secret), Calls: []pruneguard.Call{{ID: k, Tool: tool, Args: []byte(`{"token":"` + secret + `"}`)}}}))
		require.NoError(t, c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("r", i)), Role: pruneguard.RoleTool, Tokens: 500,
			Content: []byte("result " + secret), Answers: []pruneguard.CallID{k}}))
	}
	require.NoError(t, c.PlanStep("s1", "r2"))
	g := pruneguard.Guard{Budget: 1500, Logger: log, Spill: sp, Hoard: pruneguard.HoardStub, Policy: pruneguard.LargestResultsFirst{Stub: true}}
	res, err := g.Check(c)
	require.NoError(t, err)
	require.NotEmpty(t, res.Decisions)
	require.NotEmpty(t, res.Spills)

	failing := &spill.Spiller{Store: &failingStore{}}
	c2 := postContext(t, pruneguard.Config{Resolver: failing}, 100, 200)
	require.NoError(t, c2.Append(pruneguard.Message{ID: "x", Role: pruneguard.RoleUser, Tokens: 10, Content: []byte(secret)}))
	res2, err := pruneguard.Guard{Budget: 50, Ceiling: 60, Logger: log, Spill: failing}.Check(c2)
	require.ErrorIs(t, err, pruneguard.ErrCeiling)
	require.NotEmpty(t, res2.SpillErrors)

	out := h.dump()
	for _, want := range []string{pruneguard.LogDecision, pruneguard.LogRefusal, pruneguard.LogSpill, pruneguard.LogSpillFailed, pruneguard.LogCheck} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, secret)
	assert.NotContains(t, out, "SECRET")

	// The values a person needs are there.
	recs := h.take()
	var sawRefusal, sawDecision bool
	for _, r := range recs {
		switch r.msg {
		case pruneguard.LogRefusal:
			sawRefusal = true
			assert.NotEmpty(t, r.attrs["gate"])
			assert.NotEmpty(t, r.attrs["code"])
			assert.NotEmpty(t, r.attrs["units"])
			assert.NotEmpty(t, r.attrs["tokens"])
		case pruneguard.LogDecision:
			sawDecision = true
			assert.NotEmpty(t, r.attrs["units"])
			assert.NotEmpty(t, r.attrs["freed"])
			assert.NotEmpty(t, r.attrs["tokens"])
			assert.NotEmpty(t, r.attrs["source"])
		}
	}
	assert.True(t, sawRefusal)
	assert.True(t, sawDecision)

	// The same with the standard handlers, which render LogValue.
	var buf bytes.Buffer
	jl := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	jl.Info("result", "result", res, "decision", res.Decisions[0], "spill", res.Spills[0], "err", err)
	for _, d := range res.Decisions {
		jl.Info("records", "records", d.Records(), "pointers", d.Pointers)
	}
	for _, v := range res.Refused {
		jl.Info("violation", "v", v)
	}
	assert.NotContains(t, buf.String(), secret)
	assert.True(t, json.Valid(bytes.Split(buf.Bytes(), []byte("\n"))[0]))
}

// The records of a check map onto the Agent Client Protocol's compaction
// events: one compactionId per check, "in_progress" updates, and a last
// record whose status says how it ended.
func TestLogMapsOntoACPCompaction(t *testing.T) {
	h := &recorder{}
	log := slog.New(h)
	check := func(g pruneguard.Guard, c *pruneguard.Context) (pruneguard.Result, error, []logRec) {
		g.Logger = log
		res, err := g.Check(c)
		return res, err, h.take()
	}
	lastIs := func(t *testing.T, recs []logRec, res pruneguard.Result, status string) {
		t.Helper()
		require.NotEmpty(t, recs)
		for i, r := range recs {
			assert.Equal(t, res.Compaction, r.attrs["compaction"], "every record names the check")
			if i < len(recs)-1 {
				assert.Equal(t, "in_progress", r.attrs["status"], r.msg)
				assert.NotEqual(t, pruneguard.LogCheck, r.msg)
			}
		}
		last := recs[len(recs)-1]
		assert.Equal(t, pruneguard.LogCheck, last.msg)
		assert.Equal(t, status, last.attrs["status"])
		assert.Equal(t, res.Outcome.String(), last.attrs["outcome"])
	}

	// Completed: the check pruned.
	c := loopContext(t, pruneguard.Config{}, 100, 200, 300)
	require.NoError(t, c.Mark("r0", pruneguard.NegativeResult))
	res, err, recs := check(pruneguard.Guard{Budget: 400}, c)
	require.NoError(t, err)
	require.Equal(t, pruneguard.Pruned, res.Outcome)
	lastIs(t, recs, res, "completed")
	var kinds []string
	for _, r := range recs {
		kinds = append(kinds, r.msg)
	}
	assert.Contains(t, kinds, pruneguard.LogRefusal)
	assert.Contains(t, kinds, pruneguard.LogDecision)
	first := res.Compaction
	addRound(t, c, 9, 500, "plain")
	res, err, recs = check(pruneguard.Guard{Budget: 400}, c)
	require.NoError(t, err)
	lastIs(t, recs, res, "completed")
	assert.NotEqual(t, first, res.Compaction, "one id per check of a Context")

	// Cancelled: nothing could go.
	c = postContext(t, pruneguard.Config{}, 100, 200)
	res, err, recs = check(pruneguard.Guard{Budget: 50}, c)
	require.NoError(t, err)
	require.Equal(t, pruneguard.Deferred, res.Outcome)
	lastIs(t, recs, res, "cancelled")

	// Cancelled too while a call is pending.
	c = loopContext(t, pruneguard.Config{}, 100)
	require.NoError(t, c.Append(pruneguard.Message{ID: "a9", Tokens: 5, Calls: []pruneguard.Call{{ID: "k9", Tool: "read"}}}))
	res, err, recs = check(pruneguard.Guard{Budget: 50}, c)
	require.NoError(t, err)
	lastIs(t, recs, res, "cancelled")
	assert.Len(t, recs, 1)

	// Failed: past the ceiling, with the error.
	c = postContext(t, pruneguard.Config{}, 100, 200)
	res, err, recs = check(pruneguard.Guard{Budget: 50, Ceiling: 100}, c)
	require.ErrorIs(t, err, pruneguard.ErrCeiling)
	lastIs(t, recs, res, "failed")
	assert.Equal(t, err.Error(), recs[len(recs)-1].attrs["error"])
	assert.Equal(t, slog.LevelError, recs[len(recs)-1].level)

	// Failed: the policy named what the Context does not hold.
	c = loopContext(t, pruneguard.Config{}, 100)
	bad := pruneguard.PolicyFunc(func([]pruneguard.Entry, int) pruneguard.Plan {
		return pruneguard.Plan{Evict: []pruneguard.MessageID{"ghost"}}
	})
	res, err, recs = check(pruneguard.Guard{Budget: 1, Policy: bad}, c)
	require.ErrorIs(t, err, pruneguard.ErrUnknownMessage)
	lastIs(t, recs, res, "failed")

	// Nothing: under budget, or a configuration error.
	_, _, recs = check(pruneguard.Guard{Budget: 1 << 20}, c)
	assert.Empty(t, recs)
	_, err, recs = check(pruneguard.Guard{}, c)
	assert.ErrorIs(t, err, pruneguard.ErrConfig)
	assert.Empty(t, recs)
}

// A logger does not cost the under-budget check anything.
func TestLoggerUnderBudgetDoesNotAllocate(t *testing.T) {
	h := &recorder{}
	c := loopContext(t, pruneguard.Config{}, 100, 200)
	g := pruneguard.Guard{Budget: c.Tokens(), Logger: slog.New(h)}
	allocs := testing.AllocsPerRun(100, func() {
		if r, _ := g.Check(c); r.Outcome != pruneguard.UnderBudget {
			t.Fatal(r.Outcome)
		}
	})
	assert.Zero(t, allocs)
	assert.Empty(t, h.take())
}

// LogValue gives each type its ids and counts.
func TestLogValues(t *testing.T) {
	attrs := func(v slog.LogValuer) map[string]string {
		out := map[string]string{}
		flatten(out, "", slog.Any("", v))
		return out
	}
	v := &pruneguard.Violation{Gate: pruneguard.GateRegen, Code: pruneguard.CodeSecret, Units: []pruneguard.UnitID{"u"}, Messages: []pruneguard.MessageID{"m"}}
	assert.Equal(t, map[string]string{"gate": "regen", "code": "one-time-secret", "units": "[u]", "messages": "[m]"}, attrs(v))
	pe := &pruneguard.PruneError{Violations: []*pruneguard.Violation{v}}
	assert.Equal(t, "regen", attrs(pe)["0.gate"])
	ce := &pruneguard.CeilingError{Tokens: 10, Ceiling: 5, Cause: pe}
	assert.Equal(t, "10", attrs(ce)["tokens"])
	assert.Equal(t, "one-time-secret", attrs(ce)["cause.0.code"])
	de := &pruneguard.DeferredError{Pending: []pruneguard.CallID{"k"}, Open: []pruneguard.MessageID{"o"}}
	assert.Equal(t, map[string]string{"pending": "[k]", "open": "[o]"}, attrs(de))
	assert.Equal(t, "[x]", attrs(&pruneguard.StaleError{Units: []pruneguard.UnitID{"x"}, Reason: "r"})["units"])
	assert.Equal(t, "Guard.Budget", attrs(&pruneguard.ConfigError{Field: "Guard.Budget"})["field"])
	ie := &pruneguard.InputError{Op: "append", ID: "m1", Err: pruneguard.ErrEmptyID}
	assert.Equal(t, "m1", attrs(ie)["id"])
	se := &pruneguard.SpillError{Units: []pruneguard.UnitID{"u"}, Messages: []pruneguard.MessageID{"m"}, Err: errors.New("down")}
	assert.Equal(t, "down", attrs(se)["error"])
	rec := pruneguard.Record{Message: "m", Unit: "u", Class: pruneguard.Irreducible, Tokens: 3}
	assert.Equal(t, "irreducible", attrs(rec)["class"])
	tomb := pruneguard.Tombstone{Tool: "t", Mutating: true, Text: "tool t " + secret}
	assert.Equal(t, map[string]string{"tool": "t", "mutating": "true"}, attrs(tomb))
	p := pruneguard.Pointer{Store: "s", Key: "k"}
	assert.Equal(t, map[string]string{"store": "s", "key": "k"}, attrs(p))
	rep := pruneguard.SpillReport{Pointer: p, Units: []pruneguard.UnitID{"u"}, Messages: []pruneguard.MessageID{"m"}, Tokens: 4}
	assert.Equal(t, "k", attrs(rep)["key"])
	assert.Equal(t, "m", attrs(pruneguard.SpillNote{Message: "m", Pointer: p})["message"])

	c := loopContext(t, pruneguard.Config{}, 100, 200)
	modelRead(t, c, "seen")
	res, err := pruneguard.Guard{Budget: 200}.Check(c)
	require.NoError(t, err)
	ra := attrs(res)
	assert.Equal(t, "pruned", ra["outcome"])
	assert.Equal(t, res.Compaction, ra["compaction"])
	da := attrs(res.Decisions[0])
	assert.Equal(t, "[task a0 r0 a1 r1]", da["evicted"])
	assert.Equal(t, "[task a0 r0 a1 r1]", da["classes.reconstructible"])
	assert.Equal(t, "[task a0 a1]", da["units"])
}

// A guard with a logger takes the refetch alerts, under budget too,
// writes one record each without the content, and returns them; without
// a logger it leaves them queued.
func TestLogRefetchAlerts(t *testing.T) {
	refetch := func() *pruneguard.Context {
		c := loopContext(t, pruneguard.Config{}, 100)
		modelRead(t, c, "seen")
		d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r0"}})
		require.NoError(t, err)
		require.NoError(t, c.Apply(d))
		require.NoError(t, c.Append(pruneguard.Message{ID: "a9", Role: pruneguard.RoleAssistant, Tokens: 5,
			Calls: []pruneguard.Call{{ID: "k9", Tool: "read", Args: []byte(`{"path":"f"}`)}}}))
		require.NoError(t, c.Append(pruneguard.Message{ID: "r9", Role: pruneguard.RoleTool, Tokens: 100,
			Content: []byte("changed " + secret), Answers: []pruneguard.CallID{"k9"}}))
		return c
	}
	c := refetch()
	res, err := pruneguard.Guard{Budget: 1 << 20}.Check(c)
	require.NoError(t, err)
	assert.Empty(t, res.Alerts)
	require.Len(t, c.TakeAlerts(), 1, "left for the runtime")

	c = refetch()
	h := &recorder{}
	res, err = pruneguard.Guard{Budget: 1 << 20, Logger: slog.New(h)}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.UnderBudget, res.Outcome)
	require.Len(t, res.Alerts, 1)
	assert.Equal(t, pruneguard.CallID("k9"), res.Alerts[0].Call)
	assert.Empty(t, c.TakeAlerts(), "taken")
	recs := h.take()
	require.Len(t, recs, 1)
	r := recs[0]
	assert.Equal(t, pruneguard.LogRefetch, r.msg)
	assert.Equal(t, slog.LevelWarn, r.level, "the content differs: what was pruned could not be had again")
	assert.Equal(t, map[string]string{"tool": "read", "call": "k9", "result": "r9", "pruned": "r0", "stubbed": "false",
		"class": "reconstructible", "match": "false"}, r.attrs)
	assert.NotContains(t, h.dump(), secret)

	// The next check has nothing to take, and costs nothing.
	g := pruneguard.Guard{Budget: 1 << 20, Logger: slog.New(h)}
	assert.Zero(t, testing.AllocsPerRun(50, func() { g.Check(c) }))
}

// A schema the model asks back is logged by the next check with a
// logger, under budget too: a warning when a tombstone stood in for it,
// with neither compaction nor status; a schema shown whole asked again
// is not logged. Without a logger the requests wait.
func TestLogReexpansion(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{})
	pure := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}
	schema := []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "read", Schema: schema, Annotations: pure}))
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "grep", Schema: schema, Annotations: pure}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Tokens: 5,
		Calls: []pruneguard.Call{{ID: "k", Tool: "read", Args: []byte(`{"path":"f"}`)}}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "r", Role: pruneguard.RoleTool, Tokens: 50, Answers: []pruneguard.CallID{"k"}}))
	d, err := c.Prune(pruneguard.Plan{DropSchemas: []string{"read", "grep"}})
	require.NoError(t, err)
	require.Len(t, d.Tombstones, 1, "read's arguments stay; grep has none")
	require.NoError(t, c.Apply(d))

	was, err := c.RequestTool("read")
	require.NoError(t, err)
	assert.True(t, was)
	was, err = c.RequestTool("grep")
	require.NoError(t, err)
	assert.False(t, was)
	was, err = c.RequestTool("read")
	require.NoError(t, err)
	assert.False(t, was, "shown whole: not a re-expansion")

	res, err := pruneguard.Guard{Budget: 1 << 20}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.UnderBudget, res.Outcome, "without a logger they wait")

	h := &recorder{}
	g := pruneguard.Guard{Budget: 1 << 20, Logger: slog.New(h)}
	res, err = g.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.UnderBudget, res.Outcome)
	assert.Empty(t, res.Compaction)
	recs := h.take()
	require.Len(t, recs, 2)
	assert.Equal(t, pruneguard.LogReexpansion, recs[0].msg)
	assert.Equal(t, slog.LevelWarn, recs[0].level, "a tombstone stood in for it")
	assert.Equal(t, map[string]string{"tool": "read", "tombstoned": "true", "withdrawn": "true"}, recs[0].attrs)
	assert.Equal(t, pruneguard.LogReexpansion, recs[1].msg)
	assert.Equal(t, slog.LevelInfo, recs[1].level)
	assert.Equal(t, map[string]string{"tool": "grep", "tombstoned": "false", "withdrawn": "true"}, recs[1].attrs)

	// Taken: the next check logs nothing and costs nothing.
	assert.Zero(t, testing.AllocsPerRun(50, func() { g.Check(c) }))
	assert.Empty(t, h.take())

	// A check that prunes writes them too, outside its compaction.
	d, err = c.Prune(pruneguard.Plan{DropSchemas: []string{"read"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	_, err = c.RequestTool("read")
	require.NoError(t, err)
	res, err = pruneguard.Guard{Budget: 10, Logger: slog.New(h)}.Check(c)
	require.NoError(t, err)
	require.NotEmpty(t, res.Compaction)
	var reexp []logRec
	for _, r := range h.take() {
		if r.msg == pruneguard.LogReexpansion {
			reexp = append(reexp, r)
		} else {
			assert.Equal(t, res.Compaction, r.attrs["compaction"], r.msg)
		}
	}
	require.Len(t, reexp, 1)
	assert.Equal(t, map[string]string{"tool": "read", "tombstoned": "true", "withdrawn": "true"}, reexp[0].attrs)
}

package pruneguard

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The incidents of the seeds' "What Was Observed" sections, replayed. Each
// runs twice: with its gate switched off it must go wrong the way the
// seed describes, and with the gate on the guard must prevent it.

// recency is the salience scorer of the incidents: it ranks the oldest
// messages lowest and proposes them for eviction.
func recency(c *Context, n int) Plan {
	var p Plan
	for _, e := range c.Snapshot() {
		if len(p.Evict) == n {
			break
		}
		if e.Pinned {
			continue
		}
		p.Evict = append(p.Evict, e.ID)
	}
	return p
}

// Seed 000, first incident: a parallel batch of read_file, grep and stat;
// the budget check fires after the first result lands and the scorer
// ranks the assistant turn as old.
func TestIncidentParallelBatchEvictedMidFlight(t *testing.T) {
	run := func(t *testing.T, gateOff bool) (orphanErr error, pruneErr error) {
		c := NewContext(Config{})
		if gateOff {
			withoutGates(c, GateBoundary)
		}
		// Three reads: the calls and their results can be made again.
		closed := Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}
		for _, name := range []string{"read_file", "grep", "stat"} {
			require.NoError(t, c.RegisterTool(Tool{Name: name, Annotations: closed}))
		}
		require.NoError(t, c.Append(Message{ID: "sys", Role: RoleSystem, Tokens: 500, Pinned: true}))
		require.NoError(t, c.Append(Message{ID: "u1", Role: RoleUser, Tokens: 200}))
		require.NoError(t, c.Append(Message{ID: "a1", Role: RoleAssistant, Tokens: 300, Calls: []Call{
			{ID: "c1", Tool: "read_file", Args: json.RawMessage(`{"path":"main.go"}`)},
			{ID: "c2", Tool: "grep", Args: json.RawMessage(`{"pattern":"TODO"}`)},
			{ID: "c3", Tool: "stat", Args: json.RawMessage(`{"path":"main.go"}`)},
		}}))
		require.NoError(t, c.Append(Message{ID: "r1", Role: RoleTool, Tokens: 30000, Answers: []CallID{"c1"}}))
		// Budget check after the append: the scorer proposes the old turn.
		d, err := c.Prune(Plan{Evict: []MessageID{"a1"}})
		if err != nil {
			pruneErr = err
		} else {
			require.NoError(t, c.Apply(d))
		}
		orphanErr = errors.Join(
			c.Append(Message{ID: "r2", Role: RoleTool, Tokens: 50, Answers: []CallID{"c2"}}),
			c.Append(Message{ID: "r3", Role: RoleTool, Tokens: 50, Answers: []CallID{"c3"}}),
		)
		return orphanErr, pruneErr
	}
	t.Run("gate off", func(t *testing.T) {
		orphan, pruneErr := run(t, true)
		require.NoError(t, pruneErr)
		// The remaining results would arrive as orphans: the provider 400.
		assert.ErrorIs(t, orphan, ErrPrunedCall)
	})
	t.Run("gate on", func(t *testing.T) {
		orphan, pruneErr := run(t, false)
		var de *DeferredError
		require.ErrorAs(t, pruneErr, &de)
		assert.Equal(t, []CallID{"c2", "c3"}, de.Pending)
		assert.NoError(t, orphan)
	})
}

// Seed 000, second incident: a streaming result is evicted mid-stream and
// the stream keeps writing into a message that is gone.
func TestIncidentStreamingResultEvicted(t *testing.T) {
	run := func(t *testing.T, gateOff bool) (c *Context, writeErr, pruneErr error) {
		c = NewContext(Config{Boundary: BoundaryRelaxed})
		if gateOff {
			withoutGates(c, GateBoundary)
		}
		require.NoError(t, c.RegisterTool(Tool{Name: "fetch", Output: Reconstructible}))
		require.NoError(t, c.Append(Message{ID: "u1", Role: RoleUser, Tokens: 100}))
		require.NoError(t, c.Append(Message{ID: "a1", Role: RoleAssistant, Tokens: 50, Calls: []Call{{ID: "c1", Tool: "fetch"}}}))
		require.NoError(t, c.Open(Message{ID: "r1", Role: RoleTool, Answers: []CallID{"c1"}}))
		require.NoError(t, c.Write("r1", []byte(`{"items":[`), 200))
		// The partial message is short and incomplete: near-zero salience.
		d, err := c.Prune(Plan{Evict: []MessageID{"r1"}})
		if err != nil {
			pruneErr = err
		} else {
			require.NoError(t, c.Apply(d))
		}
		writeErr = c.Write("r1", []byte(`1,2,3]}`), 10)
		return c, writeErr, pruneErr
	}
	t.Run("gate off", func(t *testing.T) {
		c, writeErr, pruneErr := run(t, true)
		require.NoError(t, pruneErr)
		assert.ErrorIs(t, writeErr, ErrUnknownMessage, "the stream writes into a removed message")
		_, ok := c.Message("r1")
		assert.False(t, ok)
	})
	t.Run("gate on", func(t *testing.T) {
		c, writeErr, pruneErr := run(t, false)
		assert.ErrorIs(t, pruneErr, ErrDeferred)
		require.NoError(t, writeErr)
		require.NoError(t, c.Close("r1"))
		m, _ := c.Message("r1")
		assert.Equal(t, `{"items":[1,2,3]}`, string(m.Content), "no chunk lost")
	})
}

// Seed 001: update_incident's schema is withdrawn while its SEV-2
// arguments stay in the history.
func TestIncidentGhostMutationTool(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"]},"assignee_id":{"type":"object"},"notify":{"type":"boolean"}},"required":["severity","assignee_id","notify"]}`)
	setup := func(t *testing.T, cfg Config, gateOff bool) *Context {
		c := NewContext(cfg)
		if gateOff {
			withoutGates(c, GateSchema)
		}
		require.NoError(t, c.RegisterTool(Tool{Name: "update_incident", Schema: schema, Annotations: Annotations{ReadOnlyHint: Bool(false), DestructiveHint: Bool(true)}}))
		require.NoError(t, c.RegisterTool(Tool{Name: "search_logs", Annotations: Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}}))
		require.NoError(t, c.Append(Message{ID: "u1", Role: RoleUser, Tokens: 40}))
		// The runtime keeps the incident in its tracker: the update turn and
		// its result can be had again.
		require.NoError(t, c.Append(Message{ID: "a2", Role: RoleAssistant, Tokens: 60, Class: Reconstructible,
			Calls: []Call{{ID: "t2", Tool: "update_incident", Args: json.RawMessage(`{"severity":"SEV-2","assignee_id":"u-17","notify":true}`)}}}))
		require.NoError(t, c.Append(Message{ID: "r2", Role: RoleTool, Tokens: 20, Answers: []CallID{"t2"}, Class: Reconstructible}))
		for _, id := range []string{"3", "4", "5", "6"} {
			require.NoError(t, c.Append(Message{ID: MessageID("a" + id), Role: RoleAssistant, Tokens: 30, Calls: []Call{{ID: CallID("t" + id), Tool: "search_logs"}}}))
			require.NoError(t, c.Append(Message{ID: MessageID("r" + id), Role: RoleTool, Tokens: 500, Answers: []CallID{CallID("t" + id)}}))
		}
		return c
	}
	// A frequency pruner demotes the tool not called since turn 2.
	plan := Plan{DropSchemas: []string{"update_incident"}}

	t.Run("gate off without tombstones", func(t *testing.T) {
		c := setup(t, Config{NoTombstones: true}, true)
		d, err := c.Prune(plan)
		require.NoError(t, err)
		assert.Empty(t, d.Tombstones, "nothing tells the model the schema is withheld")
		require.NoError(t, c.Apply(d))
		st, _ := c.Tool("update_incident")
		assert.False(t, st.Resident)
		assert.Equal(t, 1, st.Args, "a ghost tool: arguments resident, schema gone")
	})
	t.Run("gate on without tombstones", func(t *testing.T) {
		c := setup(t, Config{NoTombstones: true}, false)
		_, err := c.Prune(plan)
		require.ErrorIs(t, err, ErrSchema)
		var v *Violation
		require.ErrorAs(t, err, &v)
		assert.Equal(t, CodeGhostTool, v.Code)
		assert.Equal(t, []string{"update_incident"}, v.Tools)
		assert.Equal(t, []CallID{"t2"}, v.Calls)
	})
	t.Run("gate on with tombstones", func(t *testing.T) {
		c := setup(t, Config{}, false)
		d, err := c.Prune(plan)
		require.NoError(t, err)
		require.Len(t, d.Tombstones, 1)
		assert.Equal(t, "update_incident", d.Tombstones[0].Tool)
		assert.True(t, d.Tombstones[0].Mutating)
		assert.Contains(t, d.Tombstones[0].Text, "update_incident")
		require.NoError(t, c.Apply(d))
		// At turn 9 the model asks for the tool back: the diagnostic signal.
		was, err := c.RequestTool("update_incident")
		require.NoError(t, err)
		assert.True(t, was)
		st, _ := c.Tool("update_incident")
		assert.Equal(t, 1, st.Reexpansions)
		assert.True(t, st.Resident)
	})
	t.Run("arguments evicted in the same plan", func(t *testing.T) {
		c := setup(t, Config{NoTombstones: true}, false)
		d, err := c.Prune(Plan{Evict: []MessageID{"a2"}, DropSchemas: []string{"update_incident"}})
		require.NoError(t, err)
		assert.Equal(t, []MessageID{"a2", "r2"}, d.Evict)
		assert.Equal(t, []string{"update_incident"}, d.DropSchemas)
		assert.Empty(t, d.Tombstones)
	})
}

// Seed 002, first incident: the negative result of the ulimit hypothesis
// is pruned as irrelevant to the current subgoal.
func TestIncidentNegativeResultPruned(t *testing.T) {
	run := func(t *testing.T, gateOff bool) (*Context, error) {
		c := NewContext(Config{})
		if gateOff {
			withoutGates(c, GateRegen)
		}
		require.NoError(t, c.Append(Message{ID: "u1", Role: RoleUser, Tokens: 40, Content: []byte("the service OOMs under load")}))
		require.NoError(t, c.Append(Message{ID: "think", Role: RoleAssistant, Tokens: 120, Facts: NegativeResult,
			Content: []byte("checked /etc/limits, ulimit is unlimited, so the OOM is not from the shell")}))
		require.NoError(t, c.Append(Message{ID: "a2", Role: RoleAssistant, Tokens: 30, Calls: []Call{{ID: "p1", Tool: "apply_patch"}}}))
		require.NoError(t, c.Append(Message{ID: "r2", Role: RoleTool, Tokens: 30, Answers: []CallID{"p1"}}))
		return c, pruneApply(c, Plan{Evict: []MessageID{"think"}})
	}
	t.Run("gate off", func(t *testing.T) {
		c, err := run(t, true)
		require.NoError(t, err)
		_, kept := c.Message("think")
		assert.False(t, kept, "the only record of the measurement is gone")
	})
	t.Run("gate on", func(t *testing.T) {
		c, err := run(t, false)
		require.ErrorIs(t, err, ErrRegen)
		var v *Violation
		require.ErrorAs(t, err, &v)
		assert.Equal(t, CodeNegative, v.Code)
		assert.Equal(t, []MessageID{"think"}, v.Messages)
		_, kept := c.Message("think")
		assert.True(t, kept)
	})
}

// Seed 002, second incident: a one-time nonce from an idempotency-keyed
// API is pruned after the request succeeded; the retry step needs it.
func TestIncidentOneTimeNoncePruned(t *testing.T) {
	run := func(t *testing.T, gateOff bool) (*Context, error) {
		c := NewContext(Config{})
		if gateOff {
			withoutGates(c, GateRegen)
		}
		require.NoError(t, c.RegisterTool(Tool{Name: "submit_payment", Annotations: Annotations{ReadOnlyHint: Bool(false), IdempotentHint: Bool(false)}}))
		require.NoError(t, c.Append(Message{ID: "u1", Role: RoleUser, Tokens: 40}))
		require.NoError(t, c.Append(Message{ID: "a1", Role: RoleAssistant, Tokens: 40, Calls: []Call{{ID: "pay1", Tool: "submit_payment"}}}))
		require.NoError(t, c.Append(Message{ID: "r1", Role: RoleTool, Tokens: 80, Answers: []CallID{"pay1"}, Facts: OneTimeSecret,
			Content: []byte(`{"status":"ok","nonce":"8f3a","credential":"tok_once"}`)}))
		// The model has read the receipt and moved on.
		require.NoError(t, c.Append(Message{ID: "a2", Role: RoleAssistant, Tokens: 20, Content: []byte("the payment went through")}))
		// The runtime has already planned a retry that will need the nonce.
		require.NoError(t, c.PlanStep("retry-if-timeout", "r1"))
		return c, pruneApply(c, Plan{Evict: []MessageID{"r1"}})
	}
	t.Run("gate off", func(t *testing.T) {
		c, err := run(t, true)
		require.NoError(t, err)
		_, kept := c.Message("r1")
		assert.False(t, kept, "the nonce is unrecoverable")
	})
	t.Run("gate on", func(t *testing.T) {
		c, err := run(t, false)
		var pe *PruneError
		require.ErrorAs(t, err, &pe)
		codes := func(pe *PruneError) (out []string) {
			for _, v := range pe.Violations {
				assert.Equal(t, GateRegen, v.Gate)
				out = append(out, string(v.Messages[0])+"/"+string(v.Code))
			}
			return out
		}
		// The payment call is irreducible, as its tool's results are. For
		// r1 the pending reference comes first: nothing else is consulted.
		assert.Equal(t, []string{"a1/irreducible", "r1/referenced"}, codes(pe))
		require.NoError(t, c.CompleteStep("retry-if-timeout"))
		_, err = c.Prune(Plan{Evict: []MessageID{"r1"}})
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, []string{"a1/irreducible", "r1/one-time-secret"}, codes(pe), "still a one-time secret")
	})
}

// Seed 001, per tool and per turn: update_incident's schema was withdrawn
// while no call to it was in the prompt (a safe prune), and at turn 9 the
// model calls it anyway. Its arguments now stand behind no schema, which
// no plan asked for: the next decision must repair it.
func TestIncidentGhostCallAfterWithdrawal(t *testing.T) {
	setup := func(t *testing.T, cfg Config, gateOff bool) *Context {
		c := NewContext(cfg)
		if gateOff {
			withoutGates(c, GateSchema)
		}
		// The incident tracker and the logs are apart: updating an incident
		// leaves the searches of the logs reconstructible.
		require.NoError(t, c.RegisterTool(Tool{Name: "update_incident", Schema: incidentSchema, Scope: "incidents"}))
		require.NoError(t, c.RegisterTool(Tool{Name: "search_logs", Scope: "logs", Annotations: Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}}))
		require.NoError(t, c.Append(Message{ID: "u1", Role: RoleUser, Tokens: 40}))
		for _, n := range []string{"3", "4", "5", "6"} {
			require.NoError(t, c.Append(Message{ID: MessageID("a" + n), Role: RoleAssistant, Tokens: 30, Calls: []Call{{ID: CallID("t" + n), Tool: "search_logs"}}}))
			require.NoError(t, c.Append(Message{ID: MessageID("r" + n), Role: RoleTool, Tokens: 500, Answers: []CallID{CallID("t" + n)}}))
		}
		d, err := c.Prune(Plan{DropSchemas: []string{"update_incident"}, Evict: []MessageID{"a3"}})
		require.NoError(t, err)
		require.Empty(t, d.Tombstones, "no arguments stand: the schema goes freely")
		require.NoError(t, c.Apply(d))
		// Turn 9: the model calls the tool it can no longer see. The call
		// is rejected and changes nothing: it and its error can be had
		// again.
		require.NoError(t, c.Append(Message{ID: "a9", Role: RoleAssistant, Tokens: 30, Class: Reconstructible, Calls: []Call{{ID: "t9", Tool: "update_incident", Args: json.RawMessage(`{"severity":"SEV-1"}`)}}}))
		require.NoError(t, c.Append(Message{ID: "r9", Role: RoleTool, Tokens: 20, Answers: []CallID{"t9"}, IsError: true, Class: Reconstructible, Content: []byte("notify: required")}))
		// The model reads the error and answers before the next check.
		require.NoError(t, c.Append(Message{ID: "a10", Role: RoleAssistant, Tokens: 30, Content: []byte("the incident tool is not available")}))
		return c
	}
	// The next budget check prunes an old search.
	plan := Plan{Evict: []MessageID{"a4"}}

	t.Run("gate off", func(t *testing.T) {
		c := setup(t, Config{}, true)
		d, err := c.Prune(plan)
		require.NoError(t, err)
		assert.Empty(t, d.Tombstones, "nothing tells the model the schema is withheld")
		require.NoError(t, c.Apply(d))
		st, _ := c.Tool("update_incident")
		assert.False(t, st.Resident)
		assert.False(t, st.Tombstoned)
		assert.Equal(t, 1, st.Args, "a ghost tool: arguments in the prompt, schema and tombstone absent")
	})
	t.Run("gate on", func(t *testing.T) {
		c := setup(t, Config{}, false)
		d, err := c.Prune(plan)
		require.NoError(t, err)
		require.Len(t, d.Tombstones, 1)
		assert.Equal(t, "update_incident", d.Tombstones[0].Tool)
		assert.True(t, d.Tombstones[0].Mutating)
		require.NoError(t, c.Apply(d))
		st, _ := c.Tool("update_incident")
		assert.True(t, st.Tombstoned)
		assert.False(t, st.Ghost)
	})
	t.Run("gate on without tombstones", func(t *testing.T) {
		c := setup(t, Config{NoTombstones: true}, false)
		_, err := c.Prune(plan)
		var v *Violation
		require.ErrorAs(t, err, &v)
		assert.Equal(t, CodeGhostTool, v.Code)
		assert.Equal(t, []CallID{"t9"}, v.Calls)
		// Taking the ghost's arguments with the plan repairs it.
		d, err := c.Prune(Plan{Evict: []MessageID{"a4", "a9"}})
		require.NoError(t, err)
		assert.Empty(t, d.Tombstones)
	})
}

// Seed 002, the operational rule: log every eviction with its class and
// alert when a later step fetches again what was classed irreducible.
// The ulimit check is pruned; after the patch fails the agent runs the
// same check again, under another cgroup, and gets another answer.
func TestIncidentIrreducibleResultFetchedAgain(t *testing.T) {
	run := func(t *testing.T, gateOff bool) (*Context, error) {
		c := NewContext(Config{})
		if gateOff {
			withoutGates(c, GateRegen)
		}
		require.NoError(t, c.RegisterTool(Tool{Name: "run_shell"})) // open world: irreducible results
		args := json.RawMessage(`{"cmd":"ulimit -a","cwd":"/srv"}`)
		require.NoError(t, c.Append(Message{ID: "a1", Role: RoleAssistant, Tokens: 30, Calls: []Call{{ID: "c1", Tool: "run_shell", Args: args}}}))
		require.NoError(t, c.Append(Message{ID: "r1", Role: RoleTool, Tokens: 200, Answers: []CallID{"c1"}, Content: []byte("max user processes unlimited")}))
		// The model reads the limits and turns to the patch.
		require.NoError(t, c.Append(Message{ID: "a2", Role: RoleAssistant, Tokens: 30, Content: []byte("not the shell limits; patching the pool size")}))
		d, err := c.Prune(Plan{Evict: []MessageID{"r1"}})
		if err == nil {
			require.Equal(t, Irreducible, d.Records()[1].Class)
			require.NoError(t, c.Apply(d))
		}
		// Two steps later, the same check, its keys in another order.
		require.NoError(t, c.Append(Message{ID: "a5", Role: RoleAssistant, Tokens: 30, Calls: []Call{{ID: "c5", Tool: "run_shell", Args: json.RawMessage(`{"cwd": "/srv", "cmd": "ulimit -a"}`)}}}))
		require.NoError(t, c.Append(Message{ID: "r5", Role: RoleTool, Tokens: 200, Answers: []CallID{"c5"}, Content: []byte("max user processes 1024")}))
		return c, err
	}
	t.Run("gate off", func(t *testing.T) {
		c, err := run(t, true)
		require.NoError(t, err)
		alerts := c.TakeAlerts()
		require.Len(t, alerts, 1)
		a := alerts[0]
		assert.Equal(t, Irreducible, a.Class, "a gate was bypassed")
		assert.False(t, a.Match, "the measurement could not be taken again")
		assert.Equal(t, MessageID("r1"), a.Pruned)
		assert.Equal(t, CallID("c5"), a.Call)
		st, _ := c.Tool("run_shell")
		assert.Equal(t, 1, st.IrreducibleRefetches)
		assert.Equal(t, 1, st.MismatchedRefetches)
	})
	t.Run("gate on", func(t *testing.T) {
		c, err := run(t, false)
		require.ErrorIs(t, err, ErrRegen)
		assert.Empty(t, c.TakeAlerts(), "the first measurement is still in the prompt")
		st, _ := c.Tool("run_shell")
		assert.Equal(t, 0, st.Refetches)
	})
}

// pruneApply prunes c by p and applies the decision, as a runtime does.
func pruneApply(c *Context, p Plan) error {
	d, err := c.Prune(p)
	if err != nil {
		return err
	}
	return c.Apply(d)
}

// Command agentloop replays the incidents of pruneguard's seed documents
// through a small simulated agent loop: a runtime that appends events,
// runs a budget check after each append and asks a salience policy what to
// evict.
//
// Each incident runs twice with the same policy: once with a plain trimmer
// that edits the slice of messages directly, and once with the policy's
// proposals going through pruneguard. The program prints what went wrong
// without the guard and what the guard did instead, and exits non-zero if
// a guarded run fails to prevent its incident.
//
//	go run ./examples/agentloop
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/pruneguard/pruneguard"
)

func main() { os.Exit(run(os.Stdout)) }

// outcome is one run of one incident.
type outcome interface {
	// Trace is what the runtime and the agent did, in order.
	Trace() []string
	// Failure describes the incident as detected in the run, or is empty
	// when it did not happen.
	Failure() string
}

type trace struct{ lines []string }

func (t *trace) Trace() []string { return t.lines }

func (t *trace) logf(format string, args ...any) {
	t.lines = append(t.lines, fmt.Sprintf(format, args...))
}

// incident is one seed incident and its replay.
type incident struct {
	Seed  string
	Title string
	Run   func(guard bool) outcome
}

var incidents = []incident{
	{"000", "parallel read_file/grep/stat batch, budget check after each append", func(g bool) outcome { return parallelBatch(g) }},
	{"000", "streaming tool result evicted mid-stream", func(g bool) outcome { return streamingResult(g) }},
	{"001", "update_incident's schema pruned while its SEV-2 arguments stay", func(g bool) outcome { return ghostTool(g) }},
	{"002", "negative ulimit result pruned as irrelevant", func(g bool) outcome { return negativeResult(g) }},
	{"002", "one-time nonce pruned while a planned retry step needs it", func(g bool) outcome { return oneTimeNonce(g) }},
}

func run(w io.Writer) int {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	prevented, reproduced := 0, 0
	for i, inc := range incidents {
		fmt.Fprintf(bw, "== %d. seed %s: %s\n", i+1, inc.Seed, inc.Title)
		u := inc.Run(false)
		for _, l := range u.Trace() {
			fmt.Fprintf(bw, "   unguarded: %s\n", l)
		}
		if f := u.Failure(); f != "" {
			reproduced++
			fmt.Fprintf(bw, "   unguarded: => INCIDENT: %s\n", f)
		} else {
			fmt.Fprintf(bw, "   unguarded: => the incident did not reproduce\n")
		}
		g := inc.Run(true)
		for _, l := range g.Trace() {
			fmt.Fprintf(bw, "   guarded:   %s\n", l)
		}
		if f := g.Failure(); f != "" {
			fmt.Fprintf(bw, "   guarded:   => NOT PREVENTED: %s\n", f)
		} else {
			prevented++
			fmt.Fprintf(bw, "   guarded:   => prevented\n")
		}
		fmt.Fprintln(bw)
	}
	fmt.Fprintf(bw, "%d/%d incidents prevented (%d/%d reproduced without the guard)\n", prevented, len(incidents), reproduced, len(incidents))
	if prevented != len(incidents) || reproduced != len(incidents) {
		return 1
	}
	return 0
}

// Tools the scenarios register. Read-only, closed-world tools give
// reconstructible results; everything else counts as irreducible.
func readOnly(name string) pruneguard.Tool {
	return pruneguard.Tool{Name: name, Annotations: pruneguard.Annotations{
		ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false),
	}}
}

func call(id pruneguard.CallID, tool, args string) pruneguard.Call {
	return pruneguard.Call{ID: id, Tool: tool, Args: json.RawMessage(args)}
}

// recency is the seed 000 scorer: the oldest messages have the lowest
// salience. It skips pinned messages and nothing else: it has no notion
// of calls in flight.
func recency(views []View, need int) pruneguard.Plan {
	var p pruneguard.Plan
	freed := 0
	for _, v := range views {
		if freed >= need {
			break
		}
		if v.Pinned {
			continue
		}
		p.Evict = append(p.Evict, v.ID)
		freed += v.Tokens
	}
	return p
}

// shortestFirst is the streaming variant's scorer: short messages carry
// little, so they have the lowest salience.
func shortestFirst(views []View, need int) pruneguard.Plan {
	vs := slices.Clone(views)
	slices.SortStableFunc(vs, func(a, b View) int { return a.Tokens - b.Tokens })
	return recency(vs, need)
}

// irrelevantTo is seed 002's model-driven pruner: asked which messages no
// longer matter to the current subgoal, it names every message that shares
// no keyword with it, whatever the budget asks for.
func irrelevantTo(subgoal *[]string) Salience {
	return func(views []View, need int) pruneguard.Plan {
		var p pruneguard.Plan
		for _, v := range views {
			text := strings.ToLower(v.Content)
			if v.Pinned || slices.ContainsFunc(*subgoal, func(k string) bool { return strings.Contains(text, k) }) {
				continue
			}
			p.Evict = append(p.Evict, v.ID)
		}
		return p
	}
}

// Seed 000, first incident.

type batchOutcome struct {
	trace
	Orphans      []pruneguard.CallID // results the provider found without a call
	Provider     error               // the provider's rejection, if any
	ReadFileRuns int                 // executions of the side-effectful read_file
	Deferred     [][]pruneguard.CallID
	Evicted      []pruneguard.MessageID
	checks       []checkRecord // the guarded runtime's budget checks
}

func (o *batchOutcome) Failure() string {
	if o.Provider == nil {
		return ""
	}
	return fmt.Sprintf("tool results for %s arrived after their call was evicted; the provider rejected the request and the retry re-ran the batch (read_file ran %d times)", join(o.Orphans), o.ReadFileRuns)
}

func parallelBatch(guard bool) *batchOutcome {
	o := &batchOutcome{}
	rt := newRuntime(guard, pruneguard.Config{}, 32000, recency)
	for _, t := range []string{"read_file", "grep", "stat"} {
		_ = rt.RegisterTool(readOnly(t))
	}
	_ = rt.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 1200, Pinned: true})
	_ = rt.Append(pruneguard.Message{ID: "u1", Role: pruneguard.RoleUser, Tokens: 800, Content: []byte("why does the deploy time out?")})
	_ = rt.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Tokens: 600, Calls: []pruneguard.Call{
		call("c1", "read_file", `{"path":"deploy/config.yaml"}`),
		call("c2", "grep", `{"pattern":"timeout","path":"deploy/"}`),
		call("c3", "stat", `{"path":"deploy/config.yaml"}`),
	}})
	batch := func() { o.ReadFileRuns++ } // the three tools run in parallel
	batch()
	// The results land one by one; the budget check runs after each.
	for _, r := range []pruneguard.Message{
		{ID: "r1", Role: pruneguard.RoleTool, Tokens: 30700, Answers: []pruneguard.CallID{"c1"}},
		{ID: "r2", Role: pruneguard.RoleTool, Tokens: 40, Answers: []pruneguard.CallID{"c2"}},
		{ID: "r3", Role: pruneguard.RoleTool, Tokens: 40, Answers: []pruneguard.CallID{"c3"}},
	} {
		_ = rt.Append(r)
	}
	o.lines = append(o.lines, rt.Log()...)

	// The next model invocation.
	err := invoke(rt.Prompt())
	if pe, ok := err.(*providerError); ok {
		o.Provider, o.Orphans = pe, pe.Orphans
		o.logf("provider 400 (Anthropic): %v", pe)
		o.logf("provider 400 (OpenAI): %s", pe.OpenAI())
		// The retry logic does not know why and re-runs the whole batch,
		// reading a file an intervening step has modified.
		batch()
		o.logf("retry re-ran read_file, grep and stat: read_file ran %d times, the second time on a modified file", o.ReadFileRuns)
		return o
	}
	o.logf("model invoked: no orphaned result, every call answered (%d message(s), %d tokens); read_file ran %d time", len(rt.Prompt().Messages), rt.Tokens(), o.ReadFileRuns)
	// The model has read the batch and answers: the budget check after
	// its answer may now take what it read.
	logged := len(rt.Log())
	_ = rt.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Tokens: 200, Content: []byte("the deploy times out after 30s: deploy/config.yaml")})
	o.lines = append(o.lines, rt.Log()[logged:]...)
	if g, ok := rt.(*guarded); ok {
		o.checks = g.checks
		for _, c := range g.checks {
			if c.Result.Outcome == pruneguard.Deferred {
				var de *pruneguard.DeferredError
				if errors.As(c.Result.Reason, &de) {
					o.Deferred = append(o.Deferred, de.Pending)
				}
			}
			for _, d := range c.Result.Decisions {
				o.Evicted = append(o.Evicted, d.Evict...)
			}
		}
	}
	return o
}

// Seed 000, second incident.

// The health check streams one JSON record per line. The first chunk
// holds the failing check.
var healthChunks = []struct {
	text   string
	tokens int
}{
	{`{"check":"disk","ok":false,"detail":"/var is 100% full"}` + "\n", 80},
	{`{"check":"mem","ok":true}` + "\n", 40},
	{`{"check":"net","ok":true}` + "\n", 10},
}

type streamOutcome struct {
	trace
	Streamed, Kept int  // tokens the tool streamed, tokens the result holds
	Valid          bool // the result parses as NDJSON
	Failing        int  // failing checks the result reports
	Deferred       []string
}

func (o *streamOutcome) Failure() string {
	if o.Kept == o.Streamed {
		return ""
	}
	return fmt.Sprintf("the result keeps %d of %d streamed tokens; what is left parses (valid=%t) and reports %d failing checks instead of 1", o.Kept, o.Streamed, o.Valid, o.Failing)
}

func streamingResult(guard bool) *streamOutcome {
	o := &streamOutcome{}
	rt := newRuntime(guard, pruneguard.Config{}, 2810, shortestFirst)
	_ = rt.RegisterTool(readOnly("health_check"))
	_ = rt.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 2000, Pinned: true})
	// An earlier check, of another node: it can be run again.
	_ = rt.Append(pruneguard.Message{ID: "u0", Role: pruneguard.RoleUser, Tokens: 120, Content: []byte("is db-1 healthy?")})
	_ = rt.Append(pruneguard.Message{ID: "a0", Role: pruneguard.RoleAssistant, Tokens: 90, Calls: []pruneguard.Call{call("h0", "health_check", `{"node":"db-1"}`)}})
	_ = rt.Append(pruneguard.Message{ID: "r0", Role: pruneguard.RoleTool, Tokens: 150, Answers: []pruneguard.CallID{"h0"},
		Content: []byte(`{"check":"disk","ok":true}` + "\n" + `{"check":"mem","ok":true}` + "\n")})
	_ = rt.Append(pruneguard.Message{ID: "u1", Role: pruneguard.RoleUser, Tokens: 100, Content: []byte("and db-2?")})
	_ = rt.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Tokens: 300, Calls: []pruneguard.Call{call("h1", "health_check", `{"node":"db-2"}`)}})
	_ = rt.Open(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{"h1"}})
	for _, c := range healthChunks {
		_ = rt.Write("r1", c.text, c.tokens)
		o.Streamed += c.tokens
	}
	_ = rt.Close("r1")
	o.lines = append(o.lines, rt.Log()...)
	if g, ok := rt.(*guarded); ok {
		for _, c := range g.checks {
			if c.Result.Outcome == pruneguard.Deferred {
				o.Deferred = append(o.Deferred, c.After)
			}
		}
	}

	pr := rt.Prompt()
	if err := invoke(pr); err != nil {
		o.logf("provider 400: %v", err)
	}
	r1, ok := pr.message("r1")
	if !ok {
		o.logf("r1 is not in the prompt")
		return o
	}
	o.Kept = r1.Tokens
	o.Valid, o.Failing = true, 0
	for _, line := range strings.Split(strings.TrimSpace(string(r1.Content)), "\n") {
		var rec struct {
			Check string `json:"check"`
			OK    bool   `json:"ok"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil {
			o.Valid = false
			continue
		}
		if !rec.OK {
			o.Failing++
		}
	}
	o.logf("model invoked: r1 holds %d of %d streamed tokens, %d failing check(s): %s", o.Kept, o.Streamed, o.Failing, strings.ReplaceAll(strings.TrimSpace(string(r1.Content)), "\n", " | "))
	return o
}

// Seed 001.

const (
	schemaV1 = `{"type":"object","properties":{"incident_id":{"type":"string"},"severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"]},"assignee_id":{"type":"string"},"notify":{"type":"boolean"}},"required":["incident_id","severity","assignee_id","notify"]}`
	// The mid-session migration: assignee_id becomes an object.
	schemaV2       = `{"type":"object","properties":{"incident_id":{"type":"string"},"severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"]},"assignee_id":{"type":"object"},"notify":{"type":"boolean"}},"required":["incident_id","severity","assignee_id","notify"]}`
	createSchema   = `{"type":"object","properties":{"title":{"type":"string"},"severity":{"type":"string"}},"required":["title","severity"]}`
	turn2Args      = `{"incident_id":"INC-42","severity":"SEV-2","assignee_id":"u-17","notify":true}`
	bumpAndNotify  = "bump the incident to SEV-1 and re-notify"
	updateIncident = "update_incident"
)

func mutation(name, schema, version string) pruneguard.Tool {
	return pruneguard.Tool{Name: name, Schema: json.RawMessage(schema), Version: version,
		Annotations: pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(false), DestructiveHint: pruneguard.Bool(true)}}
}

type ghostOutcome struct {
	trace
	Ghost      bool     // schema gone, arguments resident, no tombstone
	Sent       string   // the arguments the model sent at turn 9
	Invalid    []string // the executor's validation errors
	Incidents  []string // incidents that exist after turn 9
	Reexpanded bool     // the model asked for a tombstoned schema back
}

func (o *ghostOutcome) Failure() string {
	if !o.Ghost && len(o.Invalid) == 0 && len(o.Incidents) == 1 {
		return ""
	}
	return fmt.Sprintf("ghost tool: the model rebuilt update_incident from turn-2 arguments without its schema (%s), the executor rejected it (%s), and the model worked around it with create_incident: %d incidents", o.Sent, strings.Join(o.Invalid, "; "), len(o.Incidents))
}

func ghostTool(guard bool) *ghostOutcome {
	o := &ghostOutcome{Incidents: []string{"INC-42"}}
	rt := newRuntime(guard, pruneguard.Config{}, 100000, recency)
	_ = rt.RegisterTool(mutation(updateIncident, schemaV1, "v1"))
	_ = rt.RegisterTool(mutation("create_incident", createSchema, "v1"))
	_ = rt.RegisterTool(readOnly("search_logs"))
	_ = rt.Append(pruneguard.Message{ID: "u1", Role: pruneguard.RoleUser, Tokens: 40, Content: []byte("INC-42: set SEV-2, assign u-17, notify")})
	_ = rt.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Tokens: 60, Calls: []pruneguard.Call{call("t2", updateIncident, turn2Args)}})
	_ = rt.Append(pruneguard.Message{ID: "r2", Role: pruneguard.RoleTool, Tokens: 20, Answers: []pruneguard.CallID{"t2"}, Content: []byte(`{"ok":true}`)})
	for turn := 3; turn <= 6; turn++ {
		if turn == 5 {
			// A mid-session schema migration.
			_ = rt.RegisterTool(mutation(updateIncident, schemaV2, "v2"))
			o.logf("turn 5: update_incident migrated to v2 (assignee_id is now an object)")
		}
		id := fmt.Sprintf("%d", turn)
		_ = rt.Append(pruneguard.Message{ID: pruneguard.MessageID("a" + id), Role: pruneguard.RoleAssistant, Tokens: 30,
			Calls: []pruneguard.Call{call(pruneguard.CallID("t"+id), "search_logs", `{"query":"checkout 5xx"}`)}})
		_ = rt.Append(pruneguard.Message{ID: pruneguard.MessageID("r" + id), Role: pruneguard.RoleTool, Tokens: 500,
			Answers: []pruneguard.CallID{pruneguard.CallID("t" + id)}})
	}
	// After turn 6 the frequency pruner demotes the tools not called in
	// the last four turns.
	plan := frequencyPruner(rt.Prompt(), 4)
	o.logf("after turn 6: frequency pruner proposes dropping the schema of %s", join(plan.DropSchemas))
	_ = rt.Propose(plan)
	o.lines = append(o.lines, rt.Log()...)

	// Turn 9.
	pr := rt.Prompt()
	_, resident := pr.schema(updateIncident)
	_, tombstoned := pr.tombstone(updateIncident)
	_, argsResident := lastArgs(pr, updateIncident)
	o.Ghost = !resident && !tombstoned && argsResident
	if o.Ghost {
		o.logf("turn 9 (%q): update_incident has no schema and no tombstone, but the turn-2 call t2 %s is in the prompt", bumpAndNotify, turn2Args)
	}
	if tombstoned {
		was, _ := rt.RequestTool(updateIncident)
		o.Reexpanded = was
		o.logf("turn 9 (%q): the model reads the tombstone and asks for update_incident's schema (re-expansion signal: %t)", bumpAndNotify, was)
		pr = rt.Prompt()
	}
	args := model9(pr)
	b, _ := json.Marshal(args)
	o.Sent = string(b)
	o.Invalid = validate(schemaV2, args) // the executor checks the live schema
	if len(o.Invalid) == 0 {
		o.logf("model called update_incident %s: accepted, INC-42 is SEV-1 and on-call was notified", o.Sent)
		return o
	}
	o.logf("model called update_incident %s: executor rejected it: %s", o.Sent, strings.Join(o.Invalid, "; "))
	// The recovery routes to a sibling tool instead of asking for the
	// schema: a duplicate incident.
	o.Incidents = append(o.Incidents, "INC-43")
	o.logf(`model worked around the rejection with create_incident {"title":"checkout outage","severity":"SEV-1"}: INC-43 duplicates INC-42`)
	return o
}

// frequencyPruner proposes dropping the schema of every tool that was
// called before but not in the last window assistant turns.
func frequencyPruner(pr prompt, window int) pruneguard.Plan {
	var turns [][]string
	for _, m := range pr.Messages {
		if len(m.Calls) > 0 {
			var ts []string
			for _, c := range m.Calls {
				ts = append(ts, c.Tool)
			}
			turns = append(turns, ts)
		}
	}
	recent := turns[max(0, len(turns)-window):]
	var p pruneguard.Plan
	for _, t := range pr.Schemas {
		calledEver := slices.ContainsFunc(turns, func(ts []string) bool { return slices.Contains(ts, t.Name) })
		calledRecently := slices.ContainsFunc(recent, func(ts []string) bool { return slices.Contains(ts, t.Name) })
		if calledEver && !calledRecently {
			p.DropSchemas = append(p.DropSchemas, t.Name)
		}
	}
	return p
}

func lastArgs(pr prompt, tool string) (map[string]any, bool) {
	for i := len(pr.Messages) - 1; i >= 0; i-- {
		for _, c := range pr.Messages[i].Calls {
			if c.Tool == tool {
				var args map[string]any
				_ = json.Unmarshal(c.Args, &args)
				return args, true
			}
		}
	}
	return nil, false
}

// model9 is the model at turn 9. With the schema in the prompt it fills
// every required property in the type the schema gives. Without one it
// rebuilds the call from the visible turn-2 arguments, as observed: it
// keeps the identifiers verbatim, sets what the instruction names, and
// drops the earlier call's one-off flags, notify among them.
func model9(pr prompt) map[string]any {
	if t, ok := pr.schema(updateIncident); ok {
		var s schemaDoc
		_ = json.Unmarshal(t.Schema, &s)
		args := map[string]any{"incident_id": "INC-42", "severity": "SEV-1", "notify": true, "assignee_id": "u-17"}
		if s.Properties["assignee_id"].Type == "object" {
			args["assignee_id"] = map[string]any{"id": "u-17"}
		}
		return args
	}
	prev, _ := lastArgs(pr, updateIncident)
	return map[string]any{"incident_id": prev["incident_id"], "assignee_id": prev["assignee_id"], "severity": "SEV-1"}
}

type schemaDoc struct {
	Properties map[string]struct {
		Type string `json:"type"`
	} `json:"properties"`
	Required []string `json:"required"`
}

// validate is the executor's check of arguments against a schema: the
// required properties and the top-level types.
func validate(schema string, args map[string]any) []string {
	var s schemaDoc
	_ = json.Unmarshal([]byte(schema), &s)
	var errs []string
	for _, name := range s.Required {
		v, ok := args[name]
		if !ok {
			errs = append(errs, fmt.Sprintf("missing required property %q", name))
			continue
		}
		want := s.Properties[name].Type
		var got string
		switch v.(type) {
		case string:
			got = "string"
		case bool:
			got = "boolean"
		case map[string]any:
			got = "object"
		default:
			got = fmt.Sprintf("%T", v)
		}
		if want != "" && want != got {
			errs = append(errs, fmt.Sprintf("%s: want %s, got %s", name, want, got))
		}
	}
	return errs
}

// Seed 002, first incident.

type negativeOutcome struct {
	trace
	Evicted  bool   // the negative result left the prompt
	Reran    bool   // the agent re-ran the ulimit check
	Answer   string // what the re-run answered
	Patched  string // the layer the agent patched after the failed verify
	Refusals []*pruneguard.Violation
}

func (o *negativeOutcome) Failure() string {
	if !o.Evicted && o.Patched == "cgroup" {
		return ""
	}
	return fmt.Sprintf("the negative result was pruned; the agent re-ran the ulimit check under another cgroup, got %q and patched the %s layer", o.Answer, o.Patched)
}

func negativeResult(guard bool) *negativeOutcome {
	o := &negativeOutcome{}
	subgoal := []string{"diagnose", "oom"}
	rt := newRuntime(guard, pruneguard.Config{}, 1850, irrelevantTo(&subgoal))
	_ = rt.RegisterTool(readOnly("read_file"))
	_ = rt.RegisterTool(mutation("apply_patch", `{"type":"object"}`, "v1"))
	_ = rt.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 400, Pinned: true})
	_ = rt.Append(pruneguard.Message{ID: "u1", Role: pruneguard.RoleUser, Tokens: 60, Content: []byte("the service OOMs under load: reproduce, diagnose, patch, verify")})
	_ = rt.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Tokens: 40, Content: []byte("reading the shell limits"),
		Calls: []pruneguard.Call{call("c1", "read_file", `{"path":"/etc/security/limits.conf"}`)}})
	_ = rt.Append(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Tokens: 1200, Answers: []pruneguard.CallID{"c1"},
		Content: []byte("# /etc/security/limits.conf\n*  soft  as  unlimited\n")})
	// The negative result: irreducible by construction.
	_ = rt.Append(pruneguard.Message{ID: "think", Role: pruneguard.RoleReasoning, Tokens: 80, Facts: pruneguard.NegativeResult,
		Content: []byte("checked /etc/limits, ulimit is unlimited, so it is not the shell")})
	subgoal = []string{"patch", "allocator", "load"} // the agent moves on
	_ = rt.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Tokens: 60, Content: []byte("patch the allocator arena sizing"),
		Calls: []pruneguard.Call{call("c2", "apply_patch", `{"file":"alloc.go"}`)}})
	_ = rt.Append(pruneguard.Message{ID: "r2", Role: pruneguard.RoleTool, Tokens: 30, Answers: []pruneguard.CallID{"c2"}, Class: pruneguard.Reconstructible,
		Content: []byte("patch applied to the allocator")})
	o.lines = append(o.lines, rt.Log()...)
	if g, ok := rt.(*guarded); ok {
		for _, c := range g.checks {
			o.Refusals = append(o.Refusals, c.Result.Refused...)
		}
	}

	// Verify under load: the patch does not hold.
	o.logf("verify: the patch fails under load (exit 137)")
	pr := rt.Prompt()
	_, kept := pr.message("think")
	o.Evicted = !kept
	if kept {
		o.logf("the prompt still says the shell was ruled out (%q): the agent checks the container's cgroup memory.max instead", "ulimit is unlimited, so it is not the shell")
		o.Patched = "cgroup"
	} else {
		// The hypothesis is re-derived and the check re-run, now under a
		// different cgroup: the measurement does not reproduce.
		o.Reran, o.Answer = true, "1024"
		o.Patched = "shell"
		o.logf("no record of the ulimit check: the agent re-derives the hypothesis, re-runs ulimit under a different cgroup, gets %s and patches the shell limits", o.Answer)
	}
	return o
}

// Seed 002, second incident.

type nonceOutcome struct {
	trace
	Evicted  bool // the nonce left the prompt while the retry step needed it
	Charges  int  // payments the server took
	Refusals []*pruneguard.Violation
}

func (o *nonceOutcome) Failure() string {
	if !o.Evicted && o.Charges == 1 {
		return ""
	}
	return fmt.Sprintf("the nonce was pruned while the retry step needed it; the retry went out under a fresh idempotency key and the server took %d payments", o.Charges)
}

func oneTimeNonce(guard bool) *nonceOutcome {
	o := &nonceOutcome{}
	subgoal := []string{"invoice"}
	rt := newRuntime(guard, pruneguard.Config{}, 1500, irrelevantTo(&subgoal))
	_ = rt.RegisterTool(readOnly("fetch_invoice"))
	_ = rt.RegisterTool(pruneguard.Tool{Name: "submit_payment", Annotations: pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(false), IdempotentHint: pruneguard.Bool(false)}})
	_ = rt.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 300, Pinned: true})
	_ = rt.Append(pruneguard.Message{ID: "u1", Role: pruneguard.RoleUser, Tokens: 40, Content: []byte("pay invoice INV-7, then write the summary report")})
	_ = rt.Append(pruneguard.Message{ID: "a0", Role: pruneguard.RoleAssistant, Tokens: 30, Calls: []pruneguard.Call{call("f0", "fetch_invoice", `{"id":"INV-7"}`)}})
	_ = rt.Append(pruneguard.Message{ID: "r0", Role: pruneguard.RoleTool, Tokens: 900, Answers: []pruneguard.CallID{"f0"}, Content: []byte(`{"id":"INV-7","amount":"1200.00 EUR","lines":[...]}`)})
	_ = rt.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Tokens: 40, Calls: []pruneguard.Call{call("pay1", "submit_payment", `{"amount":"1200.00 EUR"}`)}})
	charges := 1
	const nonce = "n-8f3a"
	subgoal = []string{"summary", "report"} // the request succeeded: on to the report
	// The result carries a one-time nonce. The plan holds a retry step that
	// will need it if the payment is not confirmed: the runtime records the
	// step's reference as it appends the result, before the budget check.
	_ = rt.Append(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Tokens: 300, Answers: []pruneguard.CallID{"pay1"}, Facts: pruneguard.OneTimeSecret,
		Content: []byte(`{"status":"accepted","nonce":"` + nonce + `","credential":"tok_once"}`)}, "retry-if-unconfirmed")
	// The model reads that the payment was accepted and turns to the
	// report: the budget check after its answer is the one that prunes.
	_ = rt.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Tokens: 40, Content: []byte("payment accepted; writing the summary report")})
	o.lines = append(o.lines, rt.Log()...)
	if g, ok := rt.(*guarded); ok {
		for _, c := range g.checks {
			o.Refusals = append(o.Refusals, c.Result.Refused...)
		}
	}

	// The confirmation does not come: the planned retry step runs.
	pr := rt.Prompt()
	r1, kept := pr.message("r1")
	o.Evicted = !kept
	if kept && strings.Contains(string(r1.Content), nonce) {
		o.logf("retry-if-unconfirmed: resubmits with idempotency nonce %s from r1; the server deduplicates", nonce)
	} else {
		charges++
		o.logf("retry-if-unconfirmed: no nonce in the prompt and the server has rotated it; resubmitted under a fresh key: charged again")
	}
	_ = rt.CompleteStep("retry-if-unconfirmed")
	o.Charges = charges
	return o
}

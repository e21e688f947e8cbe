package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// View is what a salience policy sees of one message: the guard's entry
// for it plus its text, for policies that judge relevance by content.
type View struct {
	pruneguard.Entry
	Content string
}

// Salience is the runtime's salience policy. It sees the transcript oldest
// first and the number of tokens to free, and proposes a plan. The plain
// runtime carries the plan out as it stands; the guarded one hands it to
// pruneguard, which disposes.
type Salience func(views []View, need int) pruneguard.Plan

// prompt is what the runtime sends to the model at an invocation.
type prompt struct {
	Messages   []pruneguard.Message
	Schemas    []pruneguard.Tool // tool schemas resident in the prompt
	Tombstones []pruneguard.Tombstone
}

func (p prompt) schema(tool string) (pruneguard.Tool, bool) {
	i := slices.IndexFunc(p.Schemas, func(t pruneguard.Tool) bool { return t.Name == tool })
	if i < 0 {
		return pruneguard.Tool{}, false
	}
	return p.Schemas[i], true
}

func (p prompt) tombstone(tool string) (pruneguard.Tombstone, bool) {
	i := slices.IndexFunc(p.Tombstones, func(t pruneguard.Tombstone) bool { return t.Tool == tool })
	if i < 0 {
		return pruneguard.Tombstone{}, false
	}
	return p.Tombstones[i], true
}

// message returns the message with the given id, if the prompt holds it.
func (p prompt) message(id pruneguard.MessageID) (pruneguard.Message, bool) {
	i := slices.IndexFunc(p.Messages, func(m pruneguard.Message) bool { return m.ID == id })
	if i < 0 {
		return pruneguard.Message{}, false
	}
	return p.Messages[i], true
}

// runtime is the simulated agent runtime. Every Append, Open, Write and
// Close is followed by a budget check, as in the seed incidents.
type runtime interface {
	RegisterTool(t pruneguard.Tool) error
	// Append adds a closed message. The planned steps named in neededBy
	// will read it; they are recorded before the budget check runs.
	Append(m pruneguard.Message, neededBy ...pruneguard.StepID) error
	Open(m pruneguard.Message) error
	Write(id pruneguard.MessageID, chunk string, tokens int) error
	Close(id pruneguard.MessageID) error
	// Propose hands a between-turn pruner's plan to the runtime.
	Propose(p pruneguard.Plan) error
	// RequestTool puts a tool's schema back in the prompt at the model's
	// request and reports whether a tombstone stood in for it.
	RequestTool(name string) (bool, error)
	// PlanStep records a planned step that will read the given messages.
	PlanStep(id pruneguard.StepID, needs ...pruneguard.MessageID) error
	CompleteStep(id pruneguard.StepID) error
	Prompt() prompt
	Tokens() int
	Log() []string
}

func newRuntime(guard bool, cfg pruneguard.Config, budget int, policy Salience) runtime {
	if guard {
		return newGuarded(cfg, budget, policy)
	}
	return &plain{budget: budget, policy: policy, streams: make(map[pruneguard.MessageID]*pruneguard.Message)}
}

// plain is a runtime without pruneguard: its trimmer edits the slice of
// messages directly, exactly as the policy proposes.
type plain struct {
	budget  int
	policy  Salience
	msgs    []*pruneguard.Message
	tools   []*plainTool
	streams map[pruneguard.MessageID]*pruneguard.Message // the stream writer's handles
	log     []string
}

type plainTool struct {
	tool     pruneguard.Tool
	resident bool
}

func (p *plain) logf(format string, args ...any) { p.log = append(p.log, fmt.Sprintf(format, args...)) }

func (p *plain) Log() []string { return p.log }

func (p *plain) Tokens() int {
	n := 0
	for _, m := range p.msgs {
		n += m.Tokens
	}
	return n
}

func (p *plain) RegisterTool(t pruneguard.Tool) error {
	for _, r := range p.tools {
		if r.tool.Name == t.Name {
			r.tool = t // a migration replaces the schema; residency stays
			return nil
		}
	}
	p.tools = append(p.tools, &plainTool{tool: t, resident: true})
	return nil
}

func (p *plain) Append(m pruneguard.Message, _ ...pruneguard.StepID) error {
	x := m
	p.msgs = append(p.msgs, &x)
	p.check("after " + string(m.ID))
	return nil
}

func (p *plain) Open(m pruneguard.Message) error {
	x := m
	p.msgs = append(p.msgs, &x)
	p.streams[m.ID] = &x
	p.check("after opening " + string(m.ID))
	return nil
}

func (p *plain) Write(id pruneguard.MessageID, chunk string, tokens int) error {
	m := p.streams[id]
	if m == nil {
		return fmt.Errorf("no stream %s", id)
	}
	if !slices.Contains(p.msgs, m) {
		// The trimmer took the message out of the array mid-stream. The
		// writer finds nothing to extend and starts the message over at
		// the tail: what was streamed before is gone.
		fresh := &pruneguard.Message{ID: m.ID, Role: m.Role, Answers: m.Answers}
		p.msgs = append(p.msgs, fresh)
		p.streams[id] = fresh
		p.logf("chunk for %s: %s is no longer in the array; the stream writer restarted it at the tail", id, id)
		m = fresh
	}
	m.Content = append(m.Content, chunk...)
	m.Tokens += tokens
	p.check("after a chunk of " + string(id))
	return nil
}

func (p *plain) Close(id pruneguard.MessageID) error {
	delete(p.streams, id)
	p.check("after closing " + string(id))
	return nil
}

func (p *plain) Propose(plan pruneguard.Plan) error {
	evicted, dropped := p.apply(plan)
	if len(evicted) > 0 {
		p.logf("pruner evicted %s", join(evicted))
	}
	if len(dropped) > 0 {
		p.logf("pruner dropped the schema of %s", join(dropped))
	}
	return nil
}

func (p *plain) RequestTool(name string) (bool, error) {
	for _, r := range p.tools {
		if r.tool.Name == name {
			r.resident = true
			return false, nil
		}
	}
	return false, fmt.Errorf("unknown tool %s", name)
}

// The plain runtime keeps a task plan, but nothing connects it to pruning.
func (p *plain) PlanStep(pruneguard.StepID, ...pruneguard.MessageID) error { return nil }
func (p *plain) CompleteStep(pruneguard.StepID) error                      { return nil }

func (p *plain) Prompt() prompt {
	var pr prompt
	for _, m := range p.msgs {
		pr.Messages = append(pr.Messages, *m)
	}
	for _, r := range p.tools {
		if r.resident {
			pr.Schemas = append(pr.Schemas, r.tool)
		}
	}
	return pr
}

// check is the plain budget check: over budget, the policy's plan is
// carried out on the slice as it stands.
func (p *plain) check(after string) {
	n := p.Tokens()
	if n <= p.budget {
		return
	}
	evicted, _ := p.apply(p.policy(p.views(), n-p.budget))
	p.logf("%s: %d > %d tokens; trimmer evicted %s", after, n, p.budget, join(evicted))
}

func (p *plain) apply(plan pruneguard.Plan) (evicted []pruneguard.MessageID, dropped []string) {
	p.msgs = slices.DeleteFunc(p.msgs, func(m *pruneguard.Message) bool {
		if slices.Contains(plan.Evict, m.ID) {
			evicted = append(evicted, m.ID)
			return true
		}
		return false
	})
	for _, r := range p.tools {
		if r.resident && slices.Contains(plan.DropSchemas, r.tool.Name) {
			r.resident = false
			dropped = append(dropped, r.tool.Name)
		}
	}
	return evicted, dropped
}

func (p *plain) views() []View {
	tool := make(map[pruneguard.CallID]string)
	out := make([]View, 0, len(p.msgs))
	for _, m := range p.msgs {
		e := pruneguard.Entry{
			ID: m.ID, Role: m.Role, Tokens: m.Tokens, Unit: pruneguard.UnitID(m.ID),
			Calls: len(m.Calls), Result: len(m.Answers) > 0, Pinned: m.Pinned,
			Open: p.streams[m.ID] == m,
		}
		for _, c := range m.Calls {
			tool[c.ID] = c.Tool
			e.Tools = append(e.Tools, c.Tool)
		}
		for _, a := range m.Answers {
			if t, ok := tool[a]; ok && !slices.Contains(e.Tools, t) {
				e.Tools = append(e.Tools, t)
			}
		}
		out = append(out, View{Entry: e, Content: string(m.Content)})
	}
	return out
}

// guarded is the same runtime with pruneguard between the policy and the
// transcript: events go to a pruneguard.Context, budget checks go through
// pruneguard.Guard.Check, and between-turn plans through Prune and Apply.
type guarded struct {
	ctx    *pruneguard.Context
	guard  pruneguard.Guard
	tombs  []pruneguard.Tombstone // the tombstones the runtime inserted
	asked  []pruneguard.MessageID // what the policy proposed during the current check
	log    []string
	checks []checkRecord // every budget check that had something to do
}

// checkRecord records one budget check of the guarded runtime.
type checkRecord struct {
	After  string
	Result pruneguard.Result
	Err    error
}

func newGuarded(cfg pruneguard.Config, budget int, policy Salience) *guarded {
	g := &guarded{ctx: pruneguard.NewContext(cfg)}
	g.guard = pruneguard.Guard{
		Budget: budget,
		Policy: pruneguard.PolicyFunc(func(es []pruneguard.Entry, need int) pruneguard.Plan {
			views := make([]View, len(es))
			for i, e := range es {
				m, _ := g.ctx.Message(e.ID)
				views[i] = View{Entry: e, Content: string(m.Content)}
			}
			p := policy(views, need)
			g.asked = append(g.asked, p.Evict...)
			return p
		}),
	}
	return g
}

func (g *guarded) logf(format string, args ...any) {
	g.log = append(g.log, fmt.Sprintf(format, args...))
}

func (g *guarded) Log() []string { return g.log }

func (g *guarded) Tokens() int { return g.ctx.Tokens() }

func (g *guarded) RegisterTool(t pruneguard.Tool) error { return g.ctx.RegisterTool(t) }

func (g *guarded) Append(m pruneguard.Message, neededBy ...pruneguard.StepID) error {
	if err := g.ctx.Append(m); err != nil {
		g.logf("append %s refused: %v", m.ID, err)
		return err
	}
	for _, s := range neededBy {
		if err := g.ctx.PlanStep(s, m.ID); err != nil {
			return err
		}
	}
	g.check("after " + string(m.ID))
	return nil
}

func (g *guarded) Open(m pruneguard.Message) error {
	if err := g.ctx.Open(m); err != nil {
		g.logf("open %s refused: %v", m.ID, err)
		return err
	}
	g.check("after opening " + string(m.ID))
	return nil
}

func (g *guarded) Write(id pruneguard.MessageID, chunk string, tokens int) error {
	if err := g.ctx.Write(id, []byte(chunk), tokens); err != nil {
		g.logf("chunk for %s refused: %v", id, err)
		return err
	}
	g.check("after a chunk of " + string(id))
	return nil
}

func (g *guarded) Close(id pruneguard.MessageID) error {
	if err := g.ctx.Close(id); err != nil {
		g.logf("close %s refused: %v", id, err)
		return err
	}
	g.check("after closing " + string(id))
	return nil
}

func (g *guarded) Propose(p pruneguard.Plan) error {
	d, err := g.ctx.Prune(p)
	if err != nil {
		g.logf("plan refused: %s", explain(err))
		return err
	}
	if err := g.ctx.Apply(d); err != nil {
		g.logf("apply refused: %v", err)
		return err
	}
	g.applied(d)
	return nil
}

func (g *guarded) RequestTool(name string) (bool, error) {
	was, err := g.ctx.RequestTool(name)
	if err == nil {
		g.tombs = slices.DeleteFunc(g.tombs, func(t pruneguard.Tombstone) bool { return t.Tool == name })
	}
	return was, err
}

func (g *guarded) PlanStep(id pruneguard.StepID, needs ...pruneguard.MessageID) error {
	return g.ctx.PlanStep(id, needs...)
}

func (g *guarded) CompleteStep(id pruneguard.StepID) error { return g.ctx.CompleteStep(id) }

func (g *guarded) Prompt() prompt {
	pr := prompt{Messages: g.ctx.Messages(), Tombstones: slices.Clone(g.tombs)}
	for _, st := range g.ctx.Tools() { // sorted by name
		if st.Registered && st.Resident {
			pr.Schemas = append(pr.Schemas, st.Tool)
		}
	}
	return pr
}

func (g *guarded) check(after string) {
	g.asked = nil
	res, err := g.guard.Check(g.ctx)
	if res.Outcome == pruneguard.UnderBudget && err == nil {
		return
	}
	g.checks = append(g.checks, checkRecord{After: after, Result: res, Err: err})
	head := fmt.Sprintf("%s: %d > %d tokens; %s", after, res.Before, g.guard.Budget, res.Outcome)
	switch {
	case err != nil:
		g.logf("%s: %v", head, err)
	case res.Outcome == pruneguard.Deferred:
		g.logf("%s (%s)", head, explainResult(res))
	default:
		if res.Reason != nil {
			g.logf("%s; refused on the way: %s", head, explainResult(res))
		} else {
			g.logf("%s", head)
		}
		for _, d := range res.Decisions {
			g.applied(d)
		}
	}
}

// applied logs a decision that was applied and inserts its tombstones.
func (g *guarded) applied(d *pruneguard.Decision) {
	if len(d.Evict) > 0 {
		line := fmt.Sprintf("guard evicted %s: whole units %s, %d tokens", join(d.Evict), join(d.Units), d.Freed)
		var grown []pruneguard.MessageID
		for _, id := range d.Evict {
			if len(g.asked) > 0 && !slices.Contains(g.asked, id) {
				grown = append(grown, id)
			}
		}
		if len(grown) > 0 {
			line += fmt.Sprintf(" (the policy named %s; %s joined to keep units whole)", join(g.asked), join(grown))
		}
		g.logf("%s", line)
	}
	if len(d.DropSchemas) > 0 {
		g.logf("guard withdrew the schema of %s", join(d.DropSchemas))
	}
	for _, t := range d.Tombstones {
		g.tombs = append(g.tombs, t)
		line := fmt.Sprintf("guard inserted a tombstone for %s (mutating=%t", t.Tool, t.Mutating)
		if len(t.Stale) > 0 {
			line += fmt.Sprintf(", stale calls %s", join(t.Stale))
		}
		g.logf("%s): %s", line, t.Text)
	}
}

// explainResult renders the refusals a check met: every violation, or
// the boundary's deferral.
func explainResult(res pruneguard.Result) string {
	var de *pruneguard.DeferredError
	if len(res.Refused) == 0 || errors.As(res.Reason, &de) {
		return explain(res.Reason)
	}
	parts := make([]string, len(res.Refused))
	for i, v := range res.Refused {
		parts[i] = violation(v)
	}
	return strings.Join(parts, "; ")
}

// explain renders a refusal of the guard with its gate, code and ids.
func explain(err error) string {
	var de *pruneguard.DeferredError
	var pe *pruneguard.PruneError
	switch {
	case errors.As(err, &pe):
		parts := make([]string, len(pe.Violations))
		for i, v := range pe.Violations {
			parts[i] = violation(v)
		}
		return strings.Join(parts, "; ")
	case errors.As(err, &de):
		var parts []string
		if len(de.Pending) > 0 {
			parts = append(parts, "pending calls "+join(de.Pending))
		}
		if len(de.Open) > 0 {
			parts = append(parts, "open messages "+join(de.Open))
		}
		if len(de.Units) > 0 {
			parts = append(parts, "units in flight "+join(de.Units))
		}
		return "not at a commit boundary: " + strings.Join(parts, ", ")
	case err == nil:
		return "nothing proposed"
	}
	return err.Error()
}

func violation(v *pruneguard.Violation) string {
	s := fmt.Sprintf("%s gate %s", v.Gate, v.Code)
	if len(v.Messages) > 0 {
		s += " messages " + join(v.Messages)
	}
	if len(v.Calls) > 0 {
		s += " calls " + join(v.Calls)
	}
	if len(v.Tools) > 0 {
		s += " tools " + join(v.Tools)
	}
	return s
}

func join[T ~string](ids []T) string {
	if len(ids) == 0 {
		return "nothing"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ",")
}

// providerError is the 400 a provider returns for a request whose tool
// results and tool calls do not pair up.
type providerError struct {
	Orphans    []pruneguard.CallID // results whose call is not in the request
	Unanswered []pruneguard.CallID // calls whose result is not in the request
	index      int                 // request position of the first offending message
}

// Error gives Anthropic's wording.
func (e *providerError) Error() string {
	if len(e.Orphans) > 0 {
		return fmt.Sprintf("messages.%d.content.0: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", e.index, join(e.Orphans))
	}
	return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", e.index, join(e.Unanswered))
}

// OpenAI gives OpenAI Chat Completions' wording.
func (e *providerError) OpenAI() string {
	if len(e.Orphans) > 0 {
		return fmt.Sprintf("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages.[%d].role)", e.index)
	}
	return fmt.Sprintf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", join(e.Unanswered))
}

// invoke is the provider's structural check of a request: every tool
// result must answer a call made earlier in the request, and every call
// must be answered. System messages travel apart, as in Anthropic's API.
func invoke(pr prompt) error {
	made := make(map[pruneguard.CallID]bool)
	answered := make(map[pruneguard.CallID]bool)
	var e providerError
	first := -1
	i := 0
	for _, m := range pr.Messages {
		if m.Role == pruneguard.RoleSystem {
			continue
		}
		for _, a := range m.Answers {
			answered[a] = true
			if !made[a] {
				e.Orphans = append(e.Orphans, a)
				if first < 0 {
					first = i
				}
			}
		}
		for _, c := range m.Calls {
			made[c.ID] = true
		}
		i++
	}
	if len(e.Orphans) > 0 {
		e.index = first
		return &e
	}
	i = 0
	for _, m := range pr.Messages {
		if m.Role == pruneguard.RoleSystem {
			continue
		}
		for _, c := range m.Calls {
			if !answered[c.ID] {
				if len(e.Unanswered) == 0 {
					e.index = i
				}
				e.Unanswered = append(e.Unanswered, c.ID)
			}
		}
		i++
	}
	if len(e.Unanswered) > 0 {
		return &e
	}
	return nil
}

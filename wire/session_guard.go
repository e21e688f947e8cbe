package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// Report says what a [Session] did to one request. The zero value is a
// request sent as the history stood.
type Report struct {
	// Before and After are the tokens of the whole request body, as
	// Config.Counter counts them, before and after guarding.
	Before, After int
	// Guarded reports that the guard ran: the request was over the
	// trigger, or the guard's Hoard mode acted on hoarded results. Result
	// is what the guard did, with Before and After counting the whole
	// body; a request at or under the trigger has an UnderBudget Result
	// that applied nothing.
	Guarded bool
	Result  pruneguard.Result
	// Evicted and Stubbed are the messages this request's prune removed
	// and stubbed, in the order decided; Withdrawn the tools whose schema
	// it withdrew, Tombstoned those of them that left a tombstone line.
	Evicted    []pruneguard.MessageID
	Stubbed    []pruneguard.MessageID
	Withdrawn  []string
	Tombstoned []string
	// Restored lists the tools whose withdrawn (or lossily compressed)
	// schema the session brought back before guarding: a message fed
	// since requires it (an Anthropic tool_reference block left by tool
	// search), or the model called the tool and no tombstone line may
	// stand for it (see [Session.Request]).
	Restored []string
	// Refusals are what the gates and the provider-rule screen left out,
	// once each. Indexes are positions in the history.
	Refusals []Refusal
	// Summarized lists the summaries this request's compactions wrote
	// (with Guard.Summarizer set), each in the place of the messages it
	// replaced, which Evicted lists too.
	Summarized []Summarized
	// Reset reports that [Session.Sync] was given a history that does not
	// continue the one it held, and started the session over.
	Reset bool
}

// Request returns the request body for the history as it stands,
// guarded: tools the Context reports unsound are repaired first (a
// tombstone line, or the schema back: see [Report].Restored); when the
// body is over the trigger, the guard prunes it to the budget (freeing at
// least MinClear), every decision it applies (its policy's, its furthest
// safe prune's, after a spill too) screened first against the provider's
// rules, and the decisions stay for later requests; at or under the
// trigger the body is sent as the last prune left it (unless Guard.Hoard
// acts on hoarded results). A request the guard cannot
// bring under a positive ceiling is refused with the
// *pruneguard.CeilingError; a policy that names what the Context does not
// hold gives the *pruneguard.InputError. Either way nothing is returned
// but the report.
//
// Request spills, with a Spiller set, with context.Background(); use
// [Session.RequestContext] to bound the spills.
func (s *Session) Request() ([]byte, Report, error) {
	return s.RequestContext(context.Background())
}

// RequestContext is [Session.Request] with a context for the guard's
// I/O: the spills to SessionConfig.Spiller are made with ctx, as in
// [pruneguard.Guard.CheckContext].
func (s *Session) RequestContext(ctx context.Context) ([]byte, Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.request(ctx, Report{})
}

// Check guards the history as [Session.Request] does, without writing
// the request body: tools left unsound are repaired, and when the body
// is over the trigger the guard prunes it behind the provider-rule
// screen; the decisions stay for later requests. A runtime that streams
// the body calls [Session.WriteTo] next. Its cost follows what it adds,
// repairs and prunes, not the length of the history: the body's token
// count is kept as messages are fed and decisions applied, and a
// decision is screened over the messages it edits and those around them
// (a history that is not written message by message, as while a message
// streams, is counted and screened whole). Errors are Request's.
//
// Check spills, with a Spiller set, with context.Background(); use
// [Session.CheckContext] to bound the spills.
func (s *Session) Check() (Report, error) {
	return s.CheckContext(context.Background())
}

// CheckContext is [Session.Check] with a context for the guard's I/O, as
// [Session.RequestContext] has.
func (s *Session) CheckContext(ctx context.Context) (Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rep Report
	err := s.check(ctx, &rep)
	return rep, err
}

// WriteTo writes the request body as the history stands, the bytes
// [Session.Request] would return without guarding, to w. It implements
// io.WriterTo.
func (s *Session) WriteTo(w io.Writer) (int64, error) {
	s.mu.Lock()
	body := s.render()
	s.mu.Unlock()
	n, err := w.Write(body)
	return int64(n), err
}

// Sync brings the session up to body, a whole request of the session's
// dialect whose history continues the one the session holds (the
// messages fed so far, byte for byte, evicted ones included, then new
// ones), and returns the request guarded as [Session.Request] does. The
// body's other fields replace the session's. A history that does not
// continue the session's (edited, shortened, another conversation)
// starts the session over: Report.Reset is set, and earlier decisions are
// forgotten. The body is checked as JSON in one pass that finds where
// each message sits; checking the prefix costs a hash of each message;
// only the new messages are read and fed. It is all or nothing: every
// new message is read, and checked as the Context will check it, before
// the first is fed, so that a body refused (a message that does not
// parse, tools whose annotations are bad input, a result for a call
// given up with [Session.Abandon]) leaves the session as it was, without
// a reset.
//
// Sync spills, with a Spiller set, with context.Background(); use
// [Session.SyncContext] to bound the spills.
func (s *Session) Sync(body []byte) ([]byte, Report, error) {
	return s.SyncContext(context.Background(), body)
}

// SyncContext is [Session.Sync] with a context for the guard's I/O, as
// [Session.RequestContext] has.
func (s *Session) SyncContext(ctx context.Context, body []byte) ([]byte, Report, error) {
	d := s.cfg.Dialect
	top, err := readTop(body)
	if err != nil {
		return nil, Report{}, fmt.Errorf("wire: %s: %w", d, err)
	}
	spans, _, err := historySpans(top, d, s.key)
	if err != nil {
		return nil, Report{}, err
	}
	return s.syncSpans(ctx, top, spans)
}

// historySpans returns where each message of the history sits in the
// body top was read from, and whether the history is a Responses input
// given as a plain string (one message, the string).
func historySpans(top *topLevel, d Dialect, key string) ([]span, bool, error) {
	raw, ok := top.fields[key]
	if !ok || isNull(raw) {
		return nil, false, fmt.Errorf("wire: %s: body has no %q", d, key)
	}
	if d.provider().stringHistory && kindOf(raw) == '"' {
		sp := top.spans[key]
		return []span{{start: sp[0], end: sp[1]}}, true, nil
	}
	elems, ok := top.elems[key]
	if !ok || kindOf(raw) != '[' {
		return nil, false, fmt.Errorf("wire: %s: %s is %s, not an array", d, key, kindName(raw))
	}
	return elems, false, nil
}

// syncSpans is Sync of a body read, with where its messages sit. It is
// all or nothing: every new message is read, its tools checked and its
// pairing checked against the Context before the first is fed, so a
// body refused leaves the session as it was.
func (s *Session) syncSpans(ctx context.Context, top *topLevel, spans []span) ([]byte, Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rep Report
	src := top.src
	continues := s.continuesSpans(src, spans)
	from := len(s.entries)
	if !continues {
		from = 0
	}
	fs, err := s.readSpans(top, spans, from)
	if err != nil {
		return nil, rep, err
	}
	fields := topFieldsOf(top, s.key)
	if _, err := toolDecls(s.p, requestTools(&fields), true); err != nil {
		return nil, rep, fmt.Errorf("wire: %s: tools: %w", s.cfg.Dialect, err)
	}
	if continues {
		if err := s.precheck(fs, from); err != nil {
			return nil, rep, err
		}
	} else {
		rep.Reset = len(s.entries) > 0
		if rep.Reset && s.log != nil {
			s.log.LogAttrs(ctx, slog.LevelInfo, "pruneguard: session reset",
				slog.String("dialect", string(s.cfg.Dialect)), slog.Int("held", len(s.entries)), slog.Int("given", len(spans)))
		}
		s.top = topFields{}
		s.reset()
	}
	s.top = fields
	s.topChanged()
	s.journalTop()
	if err := s.registerTools(); err != nil {
		return nil, rep, err
	}
	for i := range fs {
		sp := spans[from+i]
		if _, err := s.appendRawAs(fs[i], src[sp.start:sp.end]); err != nil {
			return nil, rep, err // it gives the message's index
		}
		s.journalSynced(fs[i].raw, src[sp.start:sp.end])
	}
	return s.request(ctx, rep)
}

// readSpans reads the messages of the body top from index from on, each
// into memory the session owns.
func (s *Session) readSpans(top *topLevel, spans []span, from int) ([]facts, error) {
	inputString := s.p.stringHistory && kindOf(top.fields[s.key]) == '"'
	r := newReader(s.cfg.Dialect)
	fs := make([]facts, 0, len(spans)-from)
	for i := from; i < len(spans); i++ {
		sp := spans[i]
		raw := append([]byte(nil), top.src[sp.start:sp.end]...)
		if inputString {
			// A Responses input given as a plain string is the user message
			// it stands for, written as one: later messages join it in an
			// array.
			raw = jk.marshal(map[string]json.RawMessage{"role": json.RawMessage(`"user"`), "content": raw})
		}
		f, err := r.message(raw, len(raw)-compactLen(raw), false)
		if err != nil {
			return nil, fmt.Errorf("wire: %s: %s[%d]%s", s.cfg.Dialect, s.key, i, err)
		}
		fs = append(fs, f)
	}
	return fs, nil
}

// topFieldsOf copies the top-level fields of a body read, in order, with
// the history as an empty array: it is fed message by message.
func topFieldsOf(top *topLevel, key string) topFields {
	type kv struct {
		k     string
		start int
	}
	var kvs []kv
	for k, sp := range top.spans {
		kvs = append(kvs, kv{k, sp[0]})
	}
	slices.SortFunc(kvs, func(a, b kv) int { return a.start - b.start })
	f := topFields{vals: make(map[string]json.RawMessage, len(kvs))}
	for _, x := range kvs {
		f.keys = append(f.keys, x.k)
		if x.k == key {
			f.vals[x.k] = json.RawMessage(`[]`)
			continue
		}
		f.vals[x.k] = append(json.RawMessage(nil), top.fields[x.k]...)
	}
	return f
}

// continuesSpans reports whether the messages at spans of src start with
// the history the session holds.
func (s *Session) continuesSpans(src []byte, spans []span) bool {
	if len(spans) < len(s.entries) || len(s.streams) > 0 {
		return false
	}
	for i, e := range s.entries {
		raw := src[spans[i].start:spans[i].end]
		if e.ev != nil || len(raw) != e.size || maphash.Bytes(s.seed, raw) != e.hash {
			return false
		}
	}
	return true
}

// request guards and renders the history.
func (s *Session) request(ctx context.Context, rep Report) ([]byte, Report, error) {
	if err := s.check(ctx, &rep); err != nil {
		return nil, rep, err
	}
	return s.render(), rep, nil
}

// render writes the request body as the history stands.
func (s *Session) render() []byte {
	return s.topFor(nil).withHistory(s.key, s.history(nil))
}

// check guards the history as a request does, filling rep. The budget,
// the trigger and the ceiling count the whole body; the Context counts
// the messages, the schemas and the tombstones, and what it does not
// count is taken off what its guard is given, so that the core guard's
// own trigger and minimum to clear decide, as they would on the whole
// body. Every decision the guard applies is screened first (see
// sessionScreen). When the Context comes under its budget and the body
// as written does not (a stub written longer than the Context's estimate
// of it), the guard runs again for the difference, three more times at
// most.
func (s *Session) check(ctx context.Context, rep *Report) error {
	clear(s.recorded)
	s.recorded = s.recorded[:0]
	s.repair(rep)
	rep.Before = s.bodyTokens()
	g := s.cfg.Guard
	budget, ceiling := g.Budget, g.Ceiling
	trigger, minClear := s.trigger(), s.minClear()
	target := min(budget, rep.Before-minClear) // of the whole body, once triggered
	sc := &sessionScreen{s: s, outer: g.Screen}
	if s.cfg.Spiller != nil {
		g.Spill = sessionSpiller{s: s, Spiller: s.cfg.Spiller}
		g.Summarizer = withPointerText(g.Summarizer, s.cfg.Spiller)
	}
	g.Screen = sc
	g.Policy = &sessionPolicy{s: s, inner: g.Policy, protect: sc}
	g.Logger = s.alertLog // the session writes the compaction's records
	res := pruneguard.Result{Before: rep.Before}
	lined, folded := s.spilled, len(s.folds) // the lines that stand: a later state extends them
	var err error
	for try := 0; ; try++ {
		fixed := s.bodyTokens() - s.ctx.Tokens()
		if try == 0 {
			// The whole body's trigger and minimum to clear, as the core
			// guard's: it prunes down to min(budget, before - minClear).
			g.Budget = max(budget-fixed, 1)
			g.Trigger = 0
			if trigger > budget {
				g.Trigger = max(trigger-fixed, g.Budget)
			}
			g.MinClear = minClear
		} else {
			// What the first run left over its target, as written.
			g.Budget, g.Trigger, g.MinClear = max(target-fixed, 1), 0, 0
		}
		if ceiling > 0 {
			g.Ceiling = max(ceiling-fixed, g.Budget, g.Trigger)
		}
		var r pruneguard.Result
		r, err = g.CheckContext(ctx, s.ctx)
		sc.catchUp()
		for _, d := range r.Decisions {
			s.record(d)
		}
		if try == 0 {
			res = r
			rep.Guarded = r.Compaction != ""
		} else {
			res.Decisions = append(res.Decisions, r.Decisions...)
			res.Refused = append(res.Refused, r.Refused...)
			res.Spills = append(res.Spills, r.Spills...)
			res.SpillErrors = append(res.SpillErrors, r.SpillErrors...)
			res.Alerts = append(res.Alerts, r.Alerts...)
			if r.Reason != nil {
				res.Reason = r.Reason
			}
			if !r.Held.IsZero() {
				res.Held = r.Held
			}
			res.Outcome = r.Outcome
		}
		// The core guard stops at its own target: min(Budget, Before -
		// MinClear) of the Context's tokens.
		reached := r.After <= min(g.Budget, r.Before-g.MinClear)
		if err != nil || r.Compaction == "" || s.bodyTokens() <= target || len(r.Decisions) == 0 || !reached || try == 3 {
			break
		}
	}
	if len(res.Decisions) > 0 {
		res.Outcome = pruneguard.Pruned
		s.foldLines(ctx)
		s.fitLines(lined, folded, budget)
	}
	rep.After = s.bodyTokens()
	res.Before, res.After = rep.Before, rep.After
	if rep.After > budget {
		s.heldReport(&res, budget)
	}
	var ce *pruneguard.CeilingError
	if ceiling > 0 && rep.After <= ceiling && errors.As(err, &ce) {
		err = nil // the body as written is within the ceiling
	}
	if errors.As(err, &ce) {
		ce.Tokens = rep.After
		if ceiling > 0 {
			ce.Ceiling = ceiling
		}
		ce.Held = res.Held
	}
	for _, d := range res.Decisions {
		rep.Evicted = append(rep.Evicted, d.Evict...)
		rep.Stubbed = append(rep.Stubbed, d.Stub...)
		rep.Withdrawn = append(rep.Withdrawn, d.DropSchemas...)
		for _, t := range d.Tombstones {
			rep.Tombstoned = append(rep.Tombstoned, t.Tool)
		}
	}
	placed := placeRefused(&res, func(id pruneguard.MessageID) (int, bool) {
		if e := s.byID[id]; e != nil {
			return e.pos, true
		}
		return 0, false
	})
	rep.Result = res
	rep.Refusals = append(s.refusals(res, sc), placed...)
	s.summarized(rep)
	s.logCheck(*rep, err, target)
	return s.indexed(err)
}

// heldReport makes res, a check that ended over the whole body's budget,
// say what fills the prompt as the body holds it: the pointer lines
// counted with the session's Counter as they are written (the Context
// counts each with Config.PointerTokens), and a Reason when the guard
// left none, or its *pruneguard.HeldError, with the body's numbers.
func (s *Session) heldReport(res *pruneguard.Result, budget int) {
	res.Held.Lines = s.pointerLineTokens()
	var he *pruneguard.HeldError
	switch {
	case errors.As(res.Reason, &he):
		he.Tokens, he.Budget, he.Held = res.After, budget, res.Held
	case res.Reason == nil && !res.Held.IsZero():
		res.Reason = &pruneguard.HeldError{Tokens: res.After, Budget: budget, Held: res.Held}
	}
}

// pointerLineTokens counts what the pointer lines that stand add to the
// body, with the session's Counter.
func (s *Session) pointerLineTokens() int {
	lines := s.pointerLines(s.spilled)
	if len(lines) == 0 {
		return 0
	}
	return countJSON(s.count, mustString("\n"+joinLines(lines)))
}

// trigger is the whole body's token count above which a request is
// pruned: SessionConfig.Trigger, or Guard.Trigger, or the budget.
func (s *Session) trigger() int {
	switch {
	case s.cfg.Trigger > 0:
		return s.cfg.Trigger
	case s.cfg.Guard.Trigger > 0:
		return s.cfg.Guard.Trigger
	}
	return s.cfg.Guard.Budget
}

// minClear is the least a triggered prune frees: SessionConfig.MinClear,
// or Guard.MinClear.
func (s *Session) minClear() int {
	switch {
	case s.cfg.MinClear > 0:
		return s.cfg.MinClear
	case s.cfg.Guard.MinClear > 0:
		return s.cfg.Guard.MinClear
	case s.cfg.Spiller != nil:
		return s.cfg.Guard.Budget / spillClearShare
	}
	return 0
}

// spillClearShare is the share of the budget a prune of a session with
// a Spiller frees at least, by default (1/4): every prune that spills
// adds a pointer line, so prunes that each free a little would fill the
// prompt with lines.
const spillClearShare = 4

// repair makes the history sound before it is guarded and written,
// when the Context reports tools whose arguments or requiring messages
// stand behind no schema (see [pruneguard.Context.Unsound]): the model
// called a tool after its schema was withdrawn, or tool search named it
// again. A tool a message requires gets its schema back, as when the
// model asks for it ([pruneguard.Context.RequestTool]); the arguments of
// the others get the tombstone line the Context's next decision carries,
// or, when the gates refuse one (a tool that may change state and
// cannot have a tombstone), the schema back too. While the Context
// defers every prune (calls pending under the strict boundary) the
// tombstones wait for the next request. With nothing unsound it takes
// constant time.
func (s *Session) repair(rep *Report) {
	names := s.ctx.Unsound()
	if len(names) == 0 {
		return
	}
	for _, n := range names {
		if ts, ok := s.ctx.Tool(n); ok && ts.Required > 0 {
			s.restore(n, rep)
		}
	}
	for try := 0; try < 2 && len(s.ctx.Unsound()) > 0; try++ {
		d, err := s.ctx.Prune(pruneguard.Plan{})
		var pe *pruneguard.PruneError
		switch {
		case err == nil:
			if !d.Empty() && s.ctx.Apply(d) == nil {
				s.record(d)
				for _, t := range d.Tombstones {
					rep.Tombstoned = append(rep.Tombstoned, t.Tool)
				}
				s.logDecision(d, "pruneguard: repair")
			}
			return
		case errors.As(err, &pe):
			for _, v := range pe.Violations {
				if v.Gate == pruneguard.GateSchema && len(v.Units) == 0 {
					for _, t := range v.Tools {
						s.restore(t, rep)
					}
				}
			}
		default:
			return
		}
	}
}

// restore brings tool name's schema back into the request, whole: it
// leaves the withdrawn and compressed sets, and its tombstone line goes.
func (s *Session) restore(name string, rep *Report) {
	if _, err := s.ctx.RequestTool(name); err != nil {
		return
	}
	s.restoreState(name)
	if !slices.Contains(rep.Restored, name) {
		rep.Restored = append(rep.Restored, name)
	}
	if s.log != nil {
		s.log.LogAttrs(context.Background(), slog.LevelInfo, "pruneguard: schema restored",
			slog.String("dialect", string(s.cfg.Dialect)), slog.String("tool", name))
	}
}

// restoreState carries a tool's schema brought back whole out on the
// session's state.
func (s *Session) restoreState(name string) {
	s.journal(jop{Op: jRestore, Name: name})
	delete(s.dropped, name)
	delete(s.compressed, name)
	delete(s.tombs, name)
	s.tombOrder = slices.DeleteFunc(s.tombOrder, func(t string) bool { return t == name })
	s.topChanged()
}

// withHistory writes the top-level fields with the history given.
func (f topFields) withHistory(key string, history json.RawMessage) []byte {
	c := f.clone()
	c.set(key, history)
	return c.bytes()
}

// sessionSpiller is the session's Spiller as the core guard's spill
// store: what it stores of each message is the message as the provider
// reads it, its JSON as fed, rather than the Context's text of it.
type sessionSpiller struct {
	s *Session
	pruneguard.Spiller
}

// SpillMessages implements pruneguard.Spiller. Where the request has no
// system prompt for a pointer line, only results, whose stubs show their
// pointer, are spilled (unless a summary may carry it): the others fail
// with ErrNoPointerPlace, and the check reports them as refusals.
func (sp sessionSpiller) SpillMessages(ctx context.Context, ms []pruneguard.Message) (pruneguard.Pointer, error) {
	if sp.s.cfg.Guard.Summarizer == nil && !sp.s.linePlace() {
		for _, m := range ms {
			if len(m.Answers) == 0 {
				return pruneguard.Pointer{}, fmt.Errorf("%w: message %q", ErrNoPointerPlace, m.ID)
			}
		}
	}
	ms = slices.Clone(ms)
	for i := range ms {
		if e := sp.s.byID[ms[i].ID]; e != nil && e.ev == nil && e.raw != nil {
			ms[i].Content = e.raw
		}
	}
	return sp.Spiller.SpillMessages(ctx, ms)
}

// Discard implements pruneguard.Discarder: the session's Spiller takes
// back the segment, when it can.
func (sp sessionSpiller) Discard(ctx context.Context, p pruneguard.Pointer) error {
	return discard(ctx, sp.Spiller, p)
}

// ---- rendering -------------------------------------------------------------

// history writes the history as it stands, or as it would stand once d
// is applied too.
func (s *Session) history(d *pruneguard.Decision) json.RawMessage {
	return joinArray(s.historyPieces(d))
}

// historyPieces writes the messages of the history as it stands, or as
// it would stand once d is applied too.
func (s *Session) historyPieces(d *pruneguard.Decision) []json.RawMessage {
	if d == nil && s.slotUp() {
		if raws, ok := s.slotHistory(); ok {
			return raws
		}
	}
	return s.historyWhole(d)
}

// historyWhole writes the messages of the history from every message
// fed, as historyPieces does without the slots.
func (s *Session) historyWhole(d *pruneguard.Decision) []json.RawMessage {
	var evict, stub map[pruneguard.MessageID]bool
	ptr := map[pruneguard.MessageID]pruneguard.Pointer{}
	if d != nil {
		evict, stub = idSet(d.Evict), idSet(d.Stub)
		for _, n := range d.Pointers {
			ptr[n.Message] = n.Pointer
		}
	}
	var ps []rpiece
	var first *sentry // of a summary's run, written as the summary
	if d != nil && d.Summary != nil {
		first, _, _ = s.summaryEntry(d)
	}
	for _, e := range s.entries {
		if e == first {
			f, _ := summaryFacts(s.p, d.Summary.Text)
			ps = append(ps, rpiece{role: f.role, raw: f.raw, sum: &f})
			continue
		}
		if e.gone || evict[e.id] {
			continue
		}
		if e.stubbed || stub[e.id] {
			ps = append(ps, s.stubPieces(e, ptr[e.id])...)
			continue
		}
		if st, ok := s.streams[e.id]; ok {
			ps = append(ps, synthMessage(s.p, st.message(), st.text.String(), s.callTool)...)
			continue
		}
		if e.ev != nil {
			ps = append(ps, e.pieces...)
			continue
		}
		ps = append(ps, rpiece{role: e.f.role, raw: e.raw})
	}
	ps = joinSummaries(s.p, mergeSynthTurns(s.p, ps))
	// Lines go into the history when the prompt is there (see topFor).
	if s.p.promptInHistory {
		ps = placeLines(s.p, nil, ps, s.lines(d))
	}
	raws := make([]json.RawMessage, 0, len(ps))
	for i := range ps {
		if ps[i].system {
			continue
		}
		raws = append(raws, ps[i].json(s.p))
	}
	return raws
}

func idSet(ids []pruneguard.MessageID) map[pruneguard.MessageID]bool {
	m := make(map[pruneguard.MessageID]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// stubPieces writes a stubbed message: its results hold the stub text,
// or the pointer text when the content was spilled.
func (s *Session) stubPieces(e *sentry, p pruneguard.Pointer) []rpiece {
	if p.IsZero() {
		p = e.stubPtr
	}
	text := s.stubText
	if !p.IsZero() {
		text = pointerTextOf(s.cfg.Spiller)(p)
	}
	if e.ev != nil {
		return synthMessage(s.p, *e.ev, text, s.callTool)
	}
	raw, ok := s.stubRaw(e, text)
	if !ok {
		raw = e.raw
	}
	return []rpiece{{role: e.f.role, raw: raw}}
}

// stubRaw returns a provider message with its results stubbed, or false
// when they cannot be.
func (s *Session) stubRaw(e *sentry, text string) (json.RawMessage, bool) {
	if e.stub != nil && text == s.stubText {
		return e.stub, true
	}
	if e.stubFails || e.raw == nil {
		return nil, false
	}
	raw, err := stubMessage(s.cfg.Dialect, e.raw, text)
	if err == nil {
		_, err = parseMessage(s.cfg.Dialect, raw)
	}
	if err != nil {
		e.stubFails = true
		return nil, false
	}
	if text == s.stubText {
		e.stub = raw
	}
	return raw, true
}

// linePlace reports whether the request has a system prompt for
// tombstone and pointer lines, by the rule a guarded body keeps (see
// promptPlace): the session never adds one.
func (s *Session) linePlace() bool {
	return s.p.promptPlace(func(k string) json.RawMessage { v, _ := s.top.get(k); return v }, s.sysMsg)
}

// lines are the tombstone and pointer lines, as they stand or once d is
// applied too; none where the request has no place for them (the
// screen refuses the decisions that would need one).
func (s *Session) lines(d *pruneguard.Decision) []string {
	if !s.linePlace() {
		return nil
	}
	tombs := s.tombs
	order := s.tombOrder
	spilled := s.spilled
	if d != nil && (len(d.Tombstones) > 0 || len(d.Retire) > 0 || len(d.Pointers) > 0) {
		tombs = make(map[string]string, len(s.tombs))
		for k, v := range s.tombs {
			tombs[k] = v
		}
		order = slices.Clone(s.tombOrder)
		for _, t := range d.Tombstones {
			if _, ok := tombs[t.Tool]; !ok {
				order = append(order, t.Tool)
			}
			tombs[t.Tool] = t.Text
		}
		for _, t := range d.Retire {
			delete(tombs, t)
		}
		evicted := idSet(d.Evict)
		spilled = slices.Clone(s.spilled)
		for _, n := range d.Pointers {
			if evicted[n.Message] && d.Summary == nil { // a summary carries its pointers
				spilled = append(spilled, n)
			}
		}
	}
	var out []string
	for _, t := range order {
		if line, ok := tombs[t]; ok {
			out = append(out, line)
		}
	}
	return append(out, s.pointerLines(spilled)...)
}

// topFor returns the request's other fields as they stand, or once d is
// applied too: withdrawn schemas out of the tools declaration, compressed
// ones in, and (outside Chat) the system prompt with the system messages
// fed as events and the tombstone and pointer lines.
func (s *Session) topFor(d *pruneguard.Decision) topFields {
	top := s.top.clone()
	drop, compress := s.dropped, s.compressed
	if d != nil && (len(d.DropSchemas) > 0 || len(d.Compress) > 0) {
		drop = map[string]bool{}
		for k := range s.dropped {
			drop[k] = true
		}
		for _, t := range d.DropSchemas {
			drop[t] = true
		}
		compress = map[string]json.RawMessage{}
		for k, v := range s.compressed {
			compress[k] = v
		}
		for _, c := range d.Compress {
			compress[c.Tool] = c.Schema
		}
	}
	editDeclarations(s.p, &top, drop, compress)
	if s.p.promptInHistory {
		return top
	}
	var sys []string
	for _, e := range s.sysEntries {
		if !e.gone && e.pieceSystem() {
			sys = append(sys, e.pieces[0].text)
		}
	}
	if len(sys) > 0 {
		placeLines(s.p, &top, nil, []string{strings.Join(sys, "\n\n")})
	}
	placeLines(s.p, &top, nil, s.lines(d))
	return top
}

// ---- decisions ---------------------------------------------------------------

// record carries an applied decision out on the session's state. It may
// be called more than once for one decision.
func (s *Session) record(d *pruneguard.Decision) {
	if !slices.Contains(s.recorded, d) {
		s.recorded = append(s.recorded, d)
		s.journalDecision(d)
	}
	ptr := map[pruneguard.MessageID]pruneguard.Pointer{}
	for _, n := range d.Pointers {
		ptr[n.Message] = n.Pointer
	}
	for _, id := range d.Evict {
		e := s.byID[id]
		if e == nil || e.gone || d.Summary != nil {
			continue // a summary's run: see recordSummary
		}
		s.texts.remove(id)
		e.gone = true
		e.raw, e.stub, e.pieces = nil, nil, nil
		if p, ok := ptr[id]; ok {
			s.spilled = append(s.spilled, pruneguard.SpillNote{Message: id, Pointer: p})
		}
		if s.tail == e {
			s.tail = s.lastPresent()
		}
	}
	for _, id := range d.Stub {
		if e := s.byID[id]; e != nil && !e.stubbed {
			e.stubbed = true
			e.stubPtr = ptr[id]
		}
	}
	for _, t := range d.DropSchemas {
		s.dropped[t] = true
	}
	for _, c := range d.Compress {
		s.compressed[c.Tool] = c.Schema
	}
	for _, t := range d.Tombstones {
		if _, ok := s.tombs[t.Tool]; !ok {
			s.tombOrder = append(s.tombOrder, t.Tool)
		}
		s.tombs[t.Tool] = t.Text
	}
	for _, t := range d.Retire {
		delete(s.tombs, t)
	}
	if len(d.DropSchemas) > 0 || len(d.Compress) > 0 || len(d.Tombstones) > 0 || len(d.Retire) > 0 || len(d.Pointers) > 0 {
		s.topChanged()
	}
	if d.Summary != nil {
		s.recordSummary(d)
		return
	}
	s.recordSlots(d)
}

func (s *Session) lastPresent() *sentry {
	for i := len(s.entries) - 1; i >= 0; i-- {
		if !s.entries[i].gone {
			return s.entries[i]
		}
	}
	return nil
}

// applied reports whether the Context carried decision d out: Apply does
// a decision whole or not at all, so one of its edits tells.
func (s *Session) applied(d *pruneguard.Decision) bool {
	switch {
	case len(d.Evict) > 0:
		_, ok := s.ctx.Message(d.Evict[0])
		return !ok
	case len(d.Stub) > 0:
		m, ok := s.ctx.Message(d.Stub[0])
		return ok && m.Tokens != d.Records()[len(d.Evict)].Tokens
	case len(d.DropSchemas) > 0:
		ts, ok := s.ctx.Tool(d.DropSchemas[0])
		return ok && !ts.Resident
	case len(d.Compress) > 0:
		ts, ok := s.ctx.Tool(d.Compress[0].Tool)
		return ok && string(ts.Compressed) == string(d.Compress[0].Schema)
	case len(d.Retire) > 0:
		ts, ok := s.ctx.Tool(d.Retire[0])
		return ok && !ts.Tombstoned
	case len(d.Tombstones) > 0:
		// A decision of repairing tombstones only: the tool it repairs
		// stood behind none.
		ts, ok := s.ctx.Tool(d.Tombstones[0].Tool)
		return ok && ts.Tombstoned
	}
	return false
}

// ---- the policy and its screen ----------------------------------------------

// CodeActiveTurn is the code of a "wire" refusal by a [Session] or a
// [Guarded] of a unit of the turn it keeps: the last real user
// message's, and in Anthropic a final turn whose server tool call waits,
// which are kept whole; and, once reasoning or signed calls are in the
// history, every unit after the last real user message, which is kept
// from eviction and from a summary's run (the provider asks for the
// reasoning and call items of the turn back, in order) while its results
// may be stubbed. A session's policy never sees the units kept whole,
// nor gets to evict those of the turn, nor, with Guard.Summarizer set,
// the run of a summary; the refusal stands for the other parts of a
// check, such as the furthest safe prune.
const CodeActiveTurn = "active-turn"

// sessionPolicy keeps the protected tail (see [Session.protected]) from
// the inner policy, and so from the guard's own prunes, which leave alone
// what the policy hides through its View. It passes on the inner
// policy's [pruneguard.Keeper].
type sessionPolicy struct {
	s       *Session
	inner   pruneguard.Policy // nil means OldestFirst
	protect *sessionScreen
}

// Propose implements pruneguard.Policy.
func (p *sessionPolicy) Propose(v *pruneguard.View, need int) pruneguard.Plan {
	for u, whole := range p.protect.tail() {
		if whole {
			v.Hide(u)
		}
	}
	inner := p.inner
	if inner == nil {
		inner = pruneguard.OldestFirst{}
	}
	return p.s.outsideTurn(inner.Propose(v, need), p.protect.tail())
}

// Kept implements pruneguard.Keeper: what the inner policy keeps.
func (p *sessionPolicy) Kept(v *pruneguard.View) (pruneguard.MessageID, bool) {
	// With a Summarizer, the guard asks before it compacts (and before
	// the hoarding rule and the furthest safe prune act): the protected
	// tail is hidden from the run of a summary as from the policy.
	if p.s.cfg.Guard.Summarizer != nil {
		for u := range p.protect.tail() {
			v.Hide(u)
		}
	}
	if k, ok := p.inner.(pruneguard.Keeper); ok {
		return k.Kept(v)
	}
	return "", false
}

// protected returns the units the session keeps, true for those it
// keeps whole (never evicted, nothing stubbed): the last real user
// message's and, in Anthropic, a final turn whose server tool call
// waits; false for those it keeps from eviction alone: once reasoning or
// signed calls are in the history, those of every message after the
// last real user message. It costs in proportion to the messages from
// the last real user message on.
func (s *Session) protected() map[pruneguard.UnitID]bool {
	out := map[pruneguard.UnitID]bool{}
	add := func(e *sentry, whole bool) {
		if e == nil || e.gone {
			return
		}
		if u, ok := s.ctx.UnitOf(e.id); ok {
			out[u.ID] = out[u.ID] || whole
		}
	}
	if u := s.lastUser; u != nil {
		add(u, true)
		if s.reasoning {
			for _, e := range s.entries[u.pos:] {
				add(e, false)
			}
		}
	}
	if s.tail != nil && s.tail.paused {
		add(s.tail, true)
	}
	return out
}

// sessionScreen is the pruneguard.Screen a session's check gives the core
// guard. The guard asks it about every decision it is about to apply,
// whichever part of the check made it (the policy's plans, the furthest
// safe prune, spill-then-evict, the hoarding rule), so none reaches the
// body unscreened. It carries out on the session's state the decision it
// passed last, when the guard applied it, so that each decision is
// screened against the body as the decisions before it left it; it
// refuses the units of the protected tail, then what [Session.screen]
// refuses.
type sessionScreen struct {
	s *Session
	// outer is the caller's own Guard.Screen, asked about a decision the
	// session's screen passed; nil for none.
	outer pruneguard.Screen
	last  *pruneguard.Decision
	// protect is the protected tail, found once per check.
	protect map[pruneguard.UnitID]bool
	found   bool
	screenRefusals
}

// tail returns the protected tail, finding it at the first call.
func (sc *sessionScreen) tail() map[pruneguard.UnitID]bool {
	if !sc.found {
		sc.protect, sc.found = sc.s.protected(), true
	}
	return sc.protect
}

// catchUp carries out on the session's state the decision passed last,
// if the guard applied it.
func (sc *sessionScreen) catchUp() {
	if sc.last != nil && sc.s.applied(sc.last) {
		sc.s.record(sc.last)
	}
	sc.last = nil
}

// Screen implements pruneguard.Screen.
func (sc *sessionScreen) Screen(d *pruneguard.Decision) []*pruneguard.Violation {
	sc.catchUp()
	var refs []Refusal
	if protect := sc.tail(); len(protect) > 0 {
		for _, u := range d.Units {
			if _, kept := protect[u]; kept {
				refs = append(refs, sc.s.refusal("wire", CodeActiveTurn, u))
			}
		}
		for _, id := range d.Stub {
			if u, ok := sc.s.ctx.UnitOf(id); ok && protect[u.ID] {
				refs = append(refs, sc.s.refusal("wire", CodeActiveTurn, u.ID, id))
			}
		}
	}
	if len(refs) == 0 {
		refs = sc.s.screen(d)
	}
	if len(refs) > 0 {
		return sc.refuse(refs)
	}
	if sc.outer != nil {
		if vs := sc.outer.Screen(d); len(vs) > 0 {
			return vs
		}
	}
	sc.last = d
	return nil
}

// screen checks what decision d would do to the body. It returns a
// refusal for each stub that cannot be made or would not shrink its
// message, for schema edits that would leave no tool declared, and, when
// the body d leaves breaks a provider rule the body now does not, for the
// schema edits if d has any, else for one unit of d found to break it.
func (s *Session) screen(d *pruneguard.Decision) []Refusal {
	if d.Summary != nil {
		return s.screenSummary(d)
	}
	if refs := s.placeRefusals(d); len(refs) > 0 {
		return refs
	}
	if s.slotUp() {
		if refs, ok := s.screenSlots(d); ok {
			return refs
		}
	}
	return s.screenWhole(d)
}

// placeRefusals refuses, when the request has no system prompt for
// lines (see linePlace), the units of d that would leave a pointer line
// and the tombstones d would add, with CodeNoPointerPlace.
func (s *Session) placeRefusals(d *pruneguard.Decision) []Refusal {
	if (len(d.Pointers) == 0 && len(d.Tombstones) == 0) || s.linePlace() {
		return nil
	}
	if len(d.Tombstones) > 0 {
		return schemaRefusal(d, CodeNoPointerPlace, "the request has no system prompt to carry a tombstone line")
	}
	evicted := idSet(d.Evict)
	var refs []Refusal
	seen := map[pruneguard.UnitID]bool{}
	for _, n := range d.Pointers {
		u, ok := s.ctx.UnitOf(n.Message)
		if !evicted[n.Message] || !ok || seen[u.ID] {
			continue
		}
		seen[u.ID] = true
		refs = append(refs, s.refusal("wire", CodeNoPointerPlace, u.ID, u.Messages...))
	}
	return refs
}

// screenWhole is the screen of a decision on the body written whole:
// for a history the slots do not follow.
func (s *Session) screenWhole(d *pruneguard.Decision) []Refusal {
	refs := s.stubRefusals(d, func(e *sentry) int { return countJSON(s.count, e.raw) })
	if len(refs) > 0 {
		return refs
	}
	schema := len(d.DropSchemas) > 0 || len(d.Compress) > 0
	now := s.topFor(nil)
	then := s.topFor(d)
	if schema && declaredCount(s.p, &then) == 0 && declaredCount(s.p, &now) > 0 {
		return schemaRefusal(d, CodeEmptyTools, "")
	}
	before, _ := Validate(now.withHistory(s.key, s.history(nil)), s.cfg.Dialect)
	after, _ := Validate(then.withHistory(s.key, s.history(d)), s.cfg.Dialect)
	fresh := NewViolations(before, after)
	if len(fresh) == 0 {
		return nil
	}
	if schema {
		return schemaRefusal(d, fresh[0].Rule, fresh[0].Message)
	}
	// Find a unit that breaks the rule on its own, the latest first: the
	// others are tried again without it.
	for i := len(d.Units) - 1; i >= 0; i-- {
		u, ok := s.ctx.UnitOf(pruneguard.MessageID(d.Units[i]))
		if !ok {
			continue
		}
		one, err := s.ctx.Prune(pruneguard.Plan{Evict: u.Messages})
		if err != nil {
			continue
		}
		alone, _ := Validate(now.withHistory(s.key, s.history(one)), s.cfg.Dialect)
		if v := NewViolations(before, alone); len(v) > 0 {
			r := s.refusal("wire", v[0].Rule, u.ID, u.Messages...)
			r.Detail = v[0].Message
			return []Refusal{r}
		}
	}
	// No unit alone: refuse the whole decision's units.
	var out []Refusal
	for _, u := range d.Units {
		r := s.refusal("wire", fresh[0].Rule, u)
		r.Detail = fresh[0].Message
		out = append(out, r)
	}
	for _, id := range d.Stub {
		u, _ := s.ctx.UnitOf(id)
		r := s.refusal("wire", fresh[0].Rule, u.ID, id)
		r.Detail = fresh[0].Message
		out = append(out, r)
	}
	return out
}

// refusal makes a refusal naming a unit and messages, with their
// positions in the history.
func (s *Session) refusal(gate, code string, u pruneguard.UnitID, ids ...pruneguard.MessageID) Refusal {
	r := Refusal{Gate: gate, Code: code, Units: []pruneguard.UnitID{u}}
	for _, id := range ids {
		r.Messages = append(r.Messages, id)
		if e := s.byID[id]; e != nil {
			r.Indexes = append(r.Indexes, e.pos)
		}
	}
	return r
}

// refusals gathers what a check left out: the screen's refusals, those
// the guard met at the gates and at a screen of the caller's, and the
// deferral, once each.
func (s *Session) refusals(res pruneguard.Result, sc *sessionScreen) []Refusal {
	out := slices.Clone(sc.refs)
	for _, v := range res.Refused {
		if sc.own[v] {
			continue // reported from the screen's own refusals
		}
		r := Refusal{Gate: v.Gate.String(), Code: string(v.Code), Units: v.Units, Messages: v.Messages, Tools: v.Tools, Calls: v.Calls}
		for _, c := range v.Calls {
			if id, ok := s.callBy[c]; ok && !slices.Contains(r.Messages, id) {
				r.Messages = append(slices.Clip(r.Messages), id)
			}
		}
		for _, id := range r.Messages {
			if e := s.byID[id]; e != nil {
				r.Indexes = append(r.Indexes, e.pos)
			}
		}
		out = append(out, r)
	}
	var de *pruneguard.DeferredError
	if errors.As(res.Reason, &de) {
		r := Refusal{Gate: "boundary", Code: "deferred", Units: slices.Clone(de.Units), Messages: slices.Clone(de.Open)}
		for _, c := range de.Pending {
			if id, ok := s.callBy[c]; ok && !slices.Contains(r.Messages, id) {
				if e := s.byID[id]; e != nil && !e.gone {
					r.Messages = append(r.Messages, id)
				}
			}
		}
		for _, id := range r.Messages {
			if e := s.byID[id]; e != nil {
				r.Indexes = append(r.Indexes, e.pos)
			}
		}
		out = append(out, r)
	}
	seen := map[string]bool{}
	return slices.DeleteFunc(out, func(r Refusal) bool {
		k := r.Gate + "|" + r.Code + "|" + fmt.Sprint(r.Units, r.Messages, r.Tools, r.Calls)
		if seen[k] {
			return true
		}
		seen[k] = true
		return false
	})
}

// stubRefusals refuses the stubs of d that cannot be made, or would not
// make their message smaller than the tokens written gives.
func (s *Session) stubRefusals(d *pruneguard.Decision, written func(e *sentry) int) []Refusal {
	var refs []Refusal
	for _, id := range d.Stub {
		e := s.byID[id]
		if e == nil || e.ev != nil {
			continue
		}
		u, _ := s.ctx.UnitOf(id)
		raw, ok := s.stubRaw(e, s.stubText)
		switch {
		case !ok:
			refs = append(refs, s.refusal("wire", CodeStubUnsupported, u.ID, id))
		case countJSON(s.count, raw) >= written(e):
			refs = append(refs, s.refusal("wire", CodeStubNotSmaller, u.ID, id))
		}
	}
	return refs
}

// schemaRefusal is the refusal of the schema edits of d, naming their
// tools.
func schemaRefusal(d *pruneguard.Decision, code, detail string) []Refusal {
	r := Refusal{Gate: "wire", Code: code, Detail: detail}
	r.Tools = append(r.Tools, d.DropSchemas...)
	for _, c := range d.Compress {
		r.Tools = append(r.Tools, c.Tool)
	}
	return []Refusal{r}
}

package pruneguard

import (
	"context"
	"log/slog"
	"strconv"
)

// The records a [Guard] writes to its Logger, by message. No record
// carries the content of any message or the arguments of any call: only
// ids, gates, codes, classes, token counts, store keys and error texts
// (which name ids and keys, as every error of this package does).
//
// Every record of one check carries "compaction", the check's
// Result.Compaction, and "status", so that the records map onto the Agent
// Client Protocol's session compaction events (a compaction_update with
// compactionId and status): the records of one check are the updates of
// one compaction, in order.
//
//   - LogDecision, LogRefusal, LogSpill, LogSpillFailed and
//     LogSummaryFailed have status "in_progress": the compaction is
//     under way.
//   - LogCheck ends the check: status "completed" when it pruned
//     (Outcome Pruned), "cancelled" when it ended with nothing done
//     (Deferred, or a check that found nothing to act on), "failed" when
//     Check returned an error (a *CeilingError or *InputError), with the
//     error's text in "error" (ACP's error field).
//   - A check that returns at once (under the trigger, nothing hoarded, a
//     configuration error) writes nothing, and a check that ran, found
//     nothing to do and met nothing (hoarding with nothing to act on)
//     writes nothing either: no compaction took place.
//   - LogRefetch and LogReexpansion are not part of a compaction and
//     carry neither: they are the runtime's diagnostic signals, written
//     by the next check with a Logger (see Guard.Logger). LogRefetch is
//     one record per refetch alert the check took from the Context, at
//     warning level when what was pruned could not be had again (class
//     irreducible, or match false). LogReexpansion is one record per
//     schema the model asked back ([Context.RequestTool]) while it was
//     not shown whole, at warning level when a tombstone stood in for it:
//     pruning took a schema the model still needed.
//
// Attributes, beside compaction and status:
//
//   - LogDecision: source ("policy", "reach" for the guard's furthest safe
//     prune, "hoard" for the hoarding rule), then the decision's own
//     attributes ([Decision.LogValue]: units, evicted, stubbed, freed,
//     classes, spilled, and the schema edits), and tokens, the Context's
//     count once it was applied.
//   - LogRefusal: the violation's attributes ([Violation.LogValue]: gate,
//     code, units, messages, tools, calls, steps), tokens (of the messages
//     named) and class (the highest class among them).
//   - LogSpill: the spill's attributes ([SpillReport.LogValue]: store, key,
//     units, messages, tokens).
//   - LogSpillFailed: units, messages, tokens and error.
//   - LogSummaryFailed: messages (the run the Summarizer was asked to
//     summarize), tokens (what the run holds) and error, at warning
//     level.
//   - LogCheck: outcome, before, after, budget, trigger, target, ceiling,
//     decisions, refused, spills, spill_errors, summary_errors, and
//     reason (the text of
//     Result.Reason), held (Result.Held: [Held.LogValue]) and error when
//     set.
//   - LogRefetch: the alert's attributes ([RefetchAlert.LogValue]: tool,
//     call, result, pruned, stubbed, class, match), never the content or
//     its hashes.
//   - LogReexpansion: tool, tombstoned (a tombstone stood in for the
//     schema) and withdrawn (the schema was out of the prompt; false for
//     a compressed one).
const (
	LogDecision    = "pruneguard: decision"
	LogRefusal     = "pruneguard: refusal"
	LogSpill       = "pruneguard: spill"
	LogSpillFailed = "pruneguard: spill failed"
	// LogSummaryFailed is a Summarizer's error (see Guard.Summarizer).
	LogSummaryFailed = "pruneguard: summary failed"
	LogCheck         = "pruneguard: check"
	LogRefetch       = "pruneguard: refetch"
	LogReexpansion   = "pruneguard: reexpansion"
)

// The statuses of the Agent Client Protocol's compaction_update, as the
// records of a check carry them.
const (
	statusInProgress = "in_progress"
	statusCompleted  = "completed"
	statusCancelled  = "cancelled"
	statusFailed     = "failed"
)

// guardLog writes the records of one check. A nil guardLog writes
// nothing.
type guardLog struct {
	l  *slog.Logger
	id string
}

func newGuardLog(l *slog.Logger, id string) *guardLog {
	if l == nil {
		return nil
	}
	return &guardLog{l: l, id: id}
}

func (g *guardLog) write(level slog.Level, msg, status string, attrs []slog.Attr) {
	all := make([]slog.Attr, 0, len(attrs)+2)
	all = append(all, slog.String("compaction", g.id), slog.String("status", status))
	g.l.LogAttrs(context.Background(), level, msg, append(all, attrs...)...)
}

func (g *guardLog) enabled(level slog.Level) bool {
	return g != nil && g.l.Enabled(context.Background(), level)
}

func (g *guardLog) decision(r *guardRun, d *Decision, from string) {
	if !g.enabled(slog.LevelInfo) {
		return
	}
	attrs := append([]slog.Attr{slog.String("source", from)}, d.logAttrs()...)
	g.write(slog.LevelInfo, LogDecision, statusInProgress, append(attrs, slog.Int("tokens", r.c.Tokens())))
}

func (g *guardLog) refusal(r *guardRun, v *Violation) {
	if !g.enabled(slog.LevelInfo) {
		return
	}
	tokens, class := r.c.weigh(v.Messages)
	attrs := append(v.logAttrs(), slog.Int("tokens", tokens))
	if class != ClassUnset {
		attrs = append(attrs, slog.String("class", class.String()))
	}
	g.write(slog.LevelInfo, LogRefusal, statusInProgress, attrs)
}

func (g *guardLog) spill(r *guardRun, rep SpillReport) {
	if !g.enabled(slog.LevelInfo) {
		return
	}
	g.write(slog.LevelInfo, LogSpill, statusInProgress, rep.logAttrs())
}

func (g *guardLog) spillFailed(r *guardRun, e *SpillError, tokens int) {
	if !g.enabled(slog.LevelWarn) {
		return
	}
	g.write(slog.LevelWarn, LogSpillFailed, statusInProgress, append(e.logAttrs(), slog.Int("tokens", tokens)))
}

func (g *guardLog) summaryFailed(r *guardRun, b *Brief, err error) {
	if !g.enabled(slog.LevelWarn) {
		return
	}
	g.write(slog.LevelWarn, LogSummaryFailed, statusInProgress,
		[]slog.Attr{idsAttr("messages", b.Replace), slog.Int("tokens", b.Tokens), slog.String("error", err.Error())})
}

func (g *guardLog) check(r *guardRun, over bool, err error) {
	res := &r.res
	level, status := slog.LevelInfo, statusCompleted
	switch {
	case err != nil:
		level, status = slog.LevelError, statusFailed
	case res.Outcome == Pruned:
	case !over && len(res.Refused) == 0 && len(res.SpillErrors) == 0 && len(res.SummaryErrors) == 0:
		return // nothing to act on, nothing met: no compaction
	default:
		level, status = slog.LevelWarn, statusCancelled
	}
	if !g.enabled(level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("outcome", res.Outcome.String()),
		slog.Int("before", res.Before), slog.Int("after", res.After),
		slog.Int("budget", r.g.Budget), slog.Int("trigger", r.trigger), slog.Int("target", r.target),
		slog.Int("ceiling", r.ceiling),
		slog.Int("decisions", len(res.Decisions)), slog.Int("refused", len(res.Refused)),
		slog.Int("spills", len(res.Spills)), slog.Int("spill_errors", len(res.SpillErrors)),
		slog.Int("summary_errors", len(res.SummaryErrors)),
	}
	if res.Reason != nil {
		attrs = append(attrs, slog.String("reason", res.Reason.Error()))
	}
	if !res.Held.IsZero() {
		attrs = append(attrs, slog.Any("held", res.Held))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	g.write(level, LogCheck, status, attrs)
}

// logRefetchAlerts takes the Context's refetch alerts and re-expansions
// and logs them, when the guard has a Logger.
func (r *guardRun) logRefetchAlerts() {
	if r.g.Logger != nil {
		r.res.Alerts = logAlerts(r.g.Logger, r.c)
	}
}

// logAlerts takes c's refetch alerts and writes one LogRefetch record
// each: a warning when what was pruned could not be had again (it was
// irreducible, or the new content differs). Then it takes c's
// re-expansions and writes one LogReexpansion record each: a warning
// when a tombstone stood in for the schema.
func logAlerts(l *slog.Logger, c *Context) []RefetchAlert {
	as := c.TakeAlerts()
	for _, a := range as {
		level := slog.LevelInfo
		if a.Class == Irreducible || !a.Match {
			level = slog.LevelWarn
		}
		l.LogAttrs(context.Background(), level, LogRefetch, a.logAttrs()...)
	}
	for _, e := range c.takeReexpansions() {
		level := slog.LevelInfo
		if e.tombstoned {
			level = slog.LevelWarn
		}
		l.LogAttrs(context.Background(), level, LogReexpansion, slog.String("tool", e.tool),
			slog.Bool("tombstoned", e.tombstoned), slog.Bool("withdrawn", e.withdrawn))
	}
	return as
}

// LogValue returns the alert's tool, call, messages, class and whether
// the content matched; not the content, nor its hashes.
func (a RefetchAlert) LogValue() slog.Value { return slog.GroupValue(a.logAttrs()...) }

func (a RefetchAlert) logAttrs() []slog.Attr {
	return []slog.Attr{slog.String("tool", a.Tool), slog.String("call", string(a.Call)), slog.String("result", string(a.Result)),
		slog.String("pruned", string(a.Pruned)), slog.Bool("stubbed", a.Stubbed), slog.String("class", a.Class.String()),
		slog.Bool("match", a.Match)}
}

// weigh returns the tokens of the messages ids names and the highest
// class among them.
func (c *Context) weigh(ids []MessageID) (int, Class) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, k := 0, ClassUnset
	for _, id := range ids {
		if p, ok := c.find(id); ok {
			n += c.tokensOf(p)
			k = max(k, c.classify(p))
		}
	}
	return n, k
}

// ---- LogValue ---------------------------------------------------------------

func idsAttr[T ~string](key string, xs []T) slog.Attr { return slog.Any(key, xs) }

// LogValue returns the decision's ids, classes and counts, never any
// content: units, evicted, stubbed, freed, classes (the messages that go,
// grouped by the class they had), spilled (the pointers of spilled
// messages), dropped_schemas, compressed, tombstones, retired, hoarded
// and refused (a count).
func (d *Decision) LogValue() slog.Value { return slog.GroupValue(d.logAttrs()...) }

func (d *Decision) logAttrs() []slog.Attr {
	attrs := []slog.Attr{idsAttr("units", d.unitTab), idsAttr("evicted", d.Evict), idsAttr("stubbed", d.Stub), slog.Int("freed", d.Freed)}
	var byClass [4][]MessageID
	for _, r := range d.Records() {
		if int(r.Class) < len(byClass) {
			byClass[r.Class] = append(byClass[r.Class], r.Message)
		}
	}
	var classes []slog.Attr
	for k, ms := range byClass {
		if len(ms) > 0 {
			classes = append(classes, idsAttr(Class(k).String(), ms))
		}
	}
	if len(classes) > 0 {
		attrs = append(attrs, slog.Attr{Key: "classes", Value: slog.GroupValue(classes...)})
	}
	if len(d.Pointers) > 0 {
		var sp []slog.Attr
		for _, n := range d.Pointers {
			sp = append(sp, slog.String(string(n.Message), n.Pointer.Store+":"+n.Pointer.Key))
		}
		attrs = append(attrs, slog.Attr{Key: "spilled", Value: slog.GroupValue(sp...)})
	}
	if len(d.DropSchemas) > 0 {
		attrs = append(attrs, slog.Any("dropped_schemas", d.DropSchemas))
	}
	if len(d.Compress) > 0 {
		tools := make([]string, len(d.Compress))
		for i, cs := range d.Compress {
			tools[i] = cs.Tool
		}
		attrs = append(attrs, slog.Any("compressed", tools))
	}
	if len(d.Tombstones) > 0 {
		tools := make([]string, len(d.Tombstones))
		for i, t := range d.Tombstones {
			tools[i] = t.Tool
		}
		attrs = append(attrs, slog.Any("tombstones", tools))
	}
	if len(d.Retire) > 0 {
		attrs = append(attrs, slog.Any("retired", d.Retire))
	}
	if len(d.Hoarded) > 0 {
		attrs = append(attrs, idsAttr("hoarded", d.Hoarded))
	}
	if len(d.Refused) > 0 {
		attrs = append(attrs, slog.Int("refused", len(d.Refused)))
	}
	return attrs
}

// LogValue returns the violation's gate, code and ids.
func (v *Violation) LogValue() slog.Value { return slog.GroupValue(v.logAttrs()...) }

func (v *Violation) logAttrs() []slog.Attr {
	attrs := []slog.Attr{slog.String("gate", v.Gate.String()), slog.String("code", string(v.Code))}
	if len(v.Units) > 0 {
		attrs = append(attrs, idsAttr("units", v.Units))
	}
	if len(v.Messages) > 0 {
		attrs = append(attrs, idsAttr("messages", v.Messages))
	}
	if len(v.Tools) > 0 {
		attrs = append(attrs, slog.Any("tools", v.Tools))
	}
	if len(v.Calls) > 0 {
		attrs = append(attrs, idsAttr("calls", v.Calls))
	}
	if len(v.Steps) > 0 {
		attrs = append(attrs, idsAttr("steps", v.Steps))
	}
	return attrs
}

// LogValue returns the result's outcome, token counts, compaction id and
// the number of decisions, refusals, spills, failed spills and failed
// summaries, with the reason's text.
func (r Result) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("outcome", r.Outcome.String()), slog.Int("before", r.Before), slog.Int("after", r.After),
		slog.Int("decisions", len(r.Decisions)), slog.Int("refused", len(r.Refused)),
		slog.Int("spills", len(r.Spills)), slog.Int("spill_errors", len(r.SpillErrors)),
		slog.Int("summary_errors", len(r.SummaryErrors)),
	}
	if r.Compaction != "" {
		attrs = append(attrs, slog.String("compaction", r.Compaction))
	}
	if r.Reason != nil {
		attrs = append(attrs, slog.String("reason", r.Reason.Error()))
	}
	if !r.Held.IsZero() {
		attrs = append(attrs, slog.Any("held", r.Held))
	}
	return slog.GroupValue(attrs...)
}

// LogValue returns the record's ids, class and tokens.
func (r Record) LogValue() slog.Value {
	return slog.GroupValue(slog.String("message", string(r.Message)), slog.String("unit", string(r.Unit)),
		slog.String("class", r.Class.String()), slog.Int("tokens", r.Tokens), slog.Bool("stubbed", r.Stubbed))
}

// LogValue returns the tombstone's tool, whether it mutates, and the
// calls made under an older schema; not its text.
func (t Tombstone) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("tool", t.Tool), slog.Bool("mutating", t.Mutating)}
	if len(t.Stale) > 0 {
		attrs = append(attrs, idsAttr("stale", t.Stale))
	}
	return slog.GroupValue(attrs...)
}

// LogValue returns the pointer's store and key.
func (p Pointer) LogValue() slog.Value {
	return slog.GroupValue(slog.String("store", p.Store), slog.String("key", p.Key))
}

// LogValue returns the message and its pointer.
func (n SpillNote) LogValue() slog.Value {
	return slog.GroupValue(slog.String("message", string(n.Message)), slog.String("store", n.Pointer.Store), slog.String("key", n.Pointer.Key))
}

// LogValue returns the spill's store, key, units, messages and tokens.
func (s SpillReport) LogValue() slog.Value { return slog.GroupValue(s.logAttrs()...) }

func (s SpillReport) logAttrs() []slog.Attr {
	return []slog.Attr{slog.String("store", s.Pointer.Store), slog.String("key", s.Pointer.Key),
		idsAttr("units", s.Units), idsAttr("messages", s.Messages), slog.Int("tokens", s.Tokens)}
}

// LogValue returns the violations, by their order.
func (e *PruneError) LogValue() slog.Value {
	attrs := make([]slog.Attr, len(e.Violations))
	for i, v := range e.Violations {
		attrs[i] = slog.Attr{Key: strconv.Itoa(i), Value: v.LogValue()}
	}
	return slog.GroupValue(attrs...)
}

// LogValue returns the pending calls, open messages and units in flight.
func (e *DeferredError) LogValue() slog.Value {
	var attrs []slog.Attr
	if len(e.Pending) > 0 {
		attrs = append(attrs, idsAttr("pending", e.Pending))
	}
	if len(e.Open) > 0 {
		attrs = append(attrs, idsAttr("open", e.Open))
	}
	if len(e.Units) > 0 {
		attrs = append(attrs, idsAttr("units", e.Units))
	}
	return slog.GroupValue(attrs...)
}

// LogValue returns the tokens, the ceiling and the cause.
func (e *CeilingError) LogValue() slog.Value {
	attrs := []slog.Attr{slog.Int("tokens", e.Tokens), slog.Int("ceiling", e.Ceiling)}
	if !e.Held.IsZero() {
		attrs = append(attrs, slog.Any("held", e.Held))
	}
	if e.Cause != nil {
		attrs = append(attrs, slog.Any("cause", e.Cause))
	}
	return slog.GroupValue(attrs...)
}

// LogValue returns the tokens, the budget and what is held.
func (e *HeldError) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("tokens", e.Tokens), slog.Int("budget", e.Budget), slog.Any("held", e.Held))
}

// LogValue returns the parts that hold tokens: lines, tools, in_flight,
// unread, pinned, refused and unreached.
func (h Held) LogValue() slog.Value {
	var attrs []slog.Attr
	for _, a := range []struct {
		name string
		n    int
	}{{"lines", h.Lines}, {"tools", h.Tools}, {"in_flight", h.InFlight}, {"unread", h.Unread}, {"pinned", h.Pinned}, {"refused", h.Refused}, {"unreached", h.Unreached}} {
		if a.n > 0 {
			attrs = append(attrs, slog.Int(a.name, a.n))
		}
	}
	return slog.GroupValue(attrs...)
}

// LogValue returns the units that changed and why.
func (e *StaleError) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("reason", e.Reason)}
	if len(e.Units) > 0 {
		attrs = append(attrs, idsAttr("units", e.Units))
	}
	return slog.GroupValue(attrs...)
}

// LogValue returns the operation, the offending id and the error.
func (e *InputError) LogValue() slog.Value {
	return slog.GroupValue(slog.String("op", e.Op), slog.String("id", e.ID), slog.String("error", e.Err.Error()))
}

// LogValue returns the field, its value and the reason.
func (e *ConfigError) LogValue() slog.Value {
	return slog.GroupValue(slog.String("field", e.Field), slog.String("value", e.Value), slog.String("reason", e.Reason))
}

// LogValue returns the units, the messages and the error.
func (e *SpillError) LogValue() slog.Value { return slog.GroupValue(e.logAttrs()...) }

func (e *SpillError) logAttrs() []slog.Attr {
	return []slog.Attr{idsAttr("units", e.Units), idsAttr("messages", e.Messages), slog.String("error", e.Err.Error())}
}

package wire

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"github.com/pruneguard/pruneguard"
)

// A session writes the summary of a decision in the place of the first
// message of the run it replaces, as a Guarded does (see the package
// documentation, "Summaries"): that message's entry becomes the
// summary's, written as the dialect's summary message, under the
// summary's id; the other messages of the run are gone. The entry keeps
// the hash and size of the message it was, so that a history synced
// again, which still holds that message, continues the session's.

// Summarized is one summary a [Session]'s request wrote in the place of
// the messages it replaced. The zero Summarized names no summary.
type Summarized struct {
	// ID is the summary message's id; Index its position in the history,
	// that of the first message it replaced.
	ID    pruneguard.MessageID
	Index int
	// Replaced are the messages it replaced, in order, and Indexes their
	// positions in the history.
	Replaced []pruneguard.MessageID
	Indexes  []int
	// Tokens is what the summary counts, as the Context counts it, and
	// Freed what the body lost with the run.
	Tokens, Freed int
	// Pointers are the spill pointers the summary carries: what it
	// replaced can be read back with them.
	Pointers []pruneguard.Pointer
	// Compaction is the id of the compaction that wrote it (the check's
	// Result.Compaction).
	Compaction string
}

// LogSummary is the message of the record a [Session] with a Logger
// writes for each summary a request wrote, with the Agent Client
// Protocol's compaction fields: "compaction" (the check's
// Result.Compaction) and "status" ("completed": the summary stands),
// then "summary" (its id), "replaced" (the ids), "tokens", "freed",
// "pointers" (the keys it carries), "before" and "after" (the body's
// tokens). No record carries any content.
const LogSummary = "pruneguard: summary"

// sessionTexts gives the Context of a session the text of its messages
// as the model reads them (Config.Text): it is read under the Context's
// lock, from any goroutine, so it holds its own copy of the facts of
// each message given as provider JSON, by id.
type sessionTexts struct {
	p *provider
	m sync.Map // pruneguard.MessageID -> *facts
}

// Text implements pruneguard.TextSource.
func (t *sessionTexts) Text(id pruneguard.MessageID) []byte {
	f, ok := t.m.Load(id)
	if !ok {
		return nil
	}
	return modelText(t.p, f.(*facts))
}

// add records the text of message id, read as f (a copy is kept).
func (t *sessionTexts) add(id pruneguard.MessageID, f *facts) {
	if t == nil {
		return
	}
	c := *f
	t.m.Store(id, &c)
}

// remove forgets the text of message id.
func (t *sessionTexts) remove(id pruneguard.MessageID) {
	if t != nil {
		t.m.Delete(id)
	}
}

// summaryEntry returns the first entry of the run d replaces and the
// summary as written; false when d names an entry the session does not
// hold.
func (s *Session) summaryEntry(d *pruneguard.Decision) (*sentry, *facts, bool) {
	var first *sentry
	for _, id := range d.Evict {
		e := s.byID[id]
		if e == nil {
			return nil, nil, false
		}
		if first == nil || e.pos < first.pos {
			first = e
		}
	}
	f, ok := summaryFacts(s.p, d.Summary.Text)
	if first == nil || !ok {
		return nil, nil, false
	}
	return first, &f, true
}

// placeSummary makes entry e the summary of decision d, written as f.
func (s *Session) placeSummary(d *pruneguard.Decision, e *sentry, f *facts) {
	// The entry keeps its former id too, which no message takes again.
	s.texts.remove(e.id)
	e.id = d.Summary.ID
	s.byID[e.id] = e
	e.gone, e.summary = false, true
	e.raw, e.f, e.ev, e.pieces = f.raw, *f, nil, nil
	e.stub, e.stubbed, e.stubPtr, e.stubFails = nil, false, pruneguard.Pointer{}, false
	e.realUser, e.paused = false, false
	if s.tail == nil || s.tail.pos < e.pos {
		s.tail = e
	}
}

// summarySlots returns the edits of the slots of the summary of d,
// whose run starts with entry first: the first slot first writes is
// written as f, the run's other slots removed; sub is that slot, or -1
// when first has none yet. cut is set when a slot is shared with a
// message outside the run (a merged turn).
func (s *Session) summarySlots(d *pruneguard.Decision, first *sentry, f *facts) (e *edits, sub int32, cut bool) {
	sl := s.sl
	e, sub = sl.seq.newEdits(), -1
	inRun := idSet(d.Evict)
	for _, id := range d.Evict {
		m := s.byID[id]
		if m == nil {
			continue
		}
		s.slotsOf(m, func(i int32) {
			if sl.seq.removed[i] || cut {
				return
			}
			for k := sl.first[i]; k <= sl.last[i]; k++ {
				if x := s.entries[k]; !x.gone && !inRun[x.id] {
					cut = true
					return
				}
			}
			if m == first && sub < 0 {
				sub = i
				return
			}
			e.remove(i)
		})
	}
	if sub >= 0 {
		e.rewrite(sub, f)
	}
	return e, sub, cut
}

// screenSummary screens the decision of a summary: the history with the
// summary in the place of its run must break no provider rule it keeps
// now, and be smaller. It passes whole or is refused whole.
func (s *Session) screenSummary(d *pruneguard.Decision) []Refusal {
	first, f, ok := s.summaryEntry(d)
	if !ok {
		return []Refusal{s.summaryRefusal(d, CodeScreenUnsplit, "")}
	}
	if s.slotUp() {
		if e, sub, cut := s.summarySlots(d, first, f); !cut && sub >= 0 {
			sl := s.sl
			ts, base := s.toolState(nil), map[string]int{}
			delta, after := sl.rules.delta(view{s: sl.seq}, e, ts)
			if nv := sl.rules.fresh(base, delta, after); len(nv) > 0 {
				return []Refusal{s.summaryRefusal(d, nv[0].Rule, nv[0].Message)}
			}
			freed := int(sl.tok[sub])
			for _, i := range e.rm {
				freed += int(sl.tok[i])
			}
			if s.summarySlotCost(sub, f) >= freed {
				return []Refusal{s.summaryRefusal(d, CodeSummaryNotSmaller, "")}
			}
			return nil
		}
	}
	now := s.topFor(nil)
	before, _ := Validate(now.withHistory(s.key, s.history(nil)), s.cfg.Dialect)
	after, _ := Validate(now.withHistory(s.key, s.history(d)), s.cfg.Dialect)
	if nv := NewViolations(before, after); len(nv) > 0 {
		return []Refusal{s.summaryRefusal(d, nv[0].Rule, nv[0].Message)}
	}
	if s.historyCount(d) >= s.historyCount(nil) {
		return []Refusal{s.summaryRefusal(d, CodeSummaryNotSmaller, "")}
	}
	return nil
}

// historyCount counts the history as written, as it stands or once d is
// applied too.
func (s *Session) historyCount(d *pruneguard.Decision) int {
	n := 0
	for _, raw := range s.historyWhole(d) {
		n += countJSON(s.count, raw)
	}
	return n
}

// summarySlotCost is what summary f costs written in slot sub: on its
// own, or what it adds to the user message before it that it joins.
func (s *Session) summarySlotCost(sub int32, f *facts) int {
	n := countFacts(s.count, f)
	sl := s.sl
	prev := sl.seq.prev[sub]
	if !f.joins || prev < 0 {
		return n
	}
	p, ok := s.slotPiece(prev, false)
	if !ok || p.role != "user" {
		return n
	}
	if raw, ok := joinSummary(s.p, p.json(s.p), f); ok {
		return countJSON(s.count, raw) - int(sl.tok[prev])
	}
	return n
}

// summaryRefusal refuses the summary of d whole, naming its units and
// the messages it would replace.
func (s *Session) summaryRefusal(d *pruneguard.Decision, code, detail string) Refusal {
	r := Refusal{Gate: "wire", Code: code, Units: d.Units, Detail: detail}
	for _, id := range d.Evict {
		r.Messages = append(r.Messages, id)
		if e := s.byID[id]; e != nil {
			r.Indexes = append(r.Indexes, e.pos)
		}
	}
	return r
}

// recordSummary carries the applied decision of a summary out: the
// run's messages are gone but its first, which becomes the summary, and
// the slots follow.
func (s *Session) recordSummary(d *pruneguard.Decision) {
	first, f, ok := s.summaryEntry(d)
	if !ok || first.summary && first.id == d.Summary.ID {
		return // recorded already
	}
	if !s.sl.broken {
		if e, sub, cut := s.summarySlots(d, first, f); cut {
			s.sl.broken = true
		} else {
			s.applySummarySlots(e, sub, f, first)
		}
	}
	for _, id := range d.Evict {
		if e := s.byID[id]; e != nil && e != first {
			s.texts.remove(id)
			e.gone = true
			e.raw, e.stub, e.pieces = nil, nil, nil
		}
	}
	s.placeSummary(d, first, f)
	if s.tail != nil && s.tail.gone {
		s.tail = s.lastPresent()
	}
}

// applySummarySlots carries the edits of a summary out on the slots:
// slot sub (when first has one) is the summary's from then on.
func (s *Session) applySummarySlots(e *edits, sub int32, f *facts, first *sentry) {
	sl := s.sl
	for _, i := range e.rm {
		sl.tokens -= int(sl.tok[i])
	}
	if sub < 0 {
		if !e.empty() {
			sl.rules.applyEdits(e, false)
		}
		return
	}
	sl.tokens -= int(sl.tok[sub])
	sl.rules.applyEdits(e, false)
	sl.f[sub] = *f
	sl.tok[sub] = int32(min(countFacts(s.count, f), 1<<31-1))
	sl.tokens += int(sl.tok[sub])
	sl.synth[sub], sl.role[sub] = false, f.role
	sl.first[sub], sl.last[sub] = int32(first.pos), int32(first.pos)
	sl.rules.gmask[sub] = globalsMask(f)
	sl.seq.stubbed[sub] = false
	delete(sl.stubs, sub)
	if !slices.Contains(sl.sums, sub) {
		sl.sums = append(sl.sums, sub)
	}
	sl.seq.version++
}

// summaryJoinTokens is what the summaries that join the user message
// before them (Bedrock) change in the body's tokens, against counting
// each slot on its own as the slots do. It costs in proportion to the
// summaries that stand and the messages they join.
func (s *Session) summaryJoinTokens() int {
	sl := s.sl
	if !s.p.summaryJoins || len(sl.sums) == 0 {
		return 0
	}
	n := 0
	sl.sums = slices.DeleteFunc(sl.sums, func(i int32) bool { return sl.seq.removed[i] || !sl.f[i].joins })
	for _, i := range sl.sums {
		if cost := s.summarySlotCost(i, &sl.f[i]); cost != int(sl.tok[i]) {
			n += cost - int(sl.tok[i])
		}
	}
	return n
}

// joinSummaries writes each summary piece that joins the user message
// before it into that message (see provider.summaryJoins).
func joinSummaries(p *provider, ps []rpiece) []rpiece {
	if !p.summaryJoins {
		return ps
	}
	out := ps[:0:0]
	for _, q := range ps {
		if k := len(out) - 1; q.sum != nil && k >= 0 && !out[k].system && out[k].role == "user" {
			if raw, ok := joinSummary(p, out[k].json(p), q.sum); ok {
				out[k] = rpiece{role: "user", raw: raw}
				continue
			}
		}
		out = append(out, q)
	}
	return out
}

// summarized lists the summaries of a request's decisions, for its
// report, and logs each.
func (s *Session) summarized(rep *Report) {
	for _, d := range rep.Result.Decisions {
		if d.Summary == nil {
			continue
		}
		sm := Summarized{ID: d.Summary.ID, Index: -1, Replaced: d.Evict, Tokens: d.Summary.Tokens, Freed: d.Freed,
			Pointers: d.Summary.Pointers, Compaction: rep.Result.Compaction}
		if e := s.byID[d.Summary.ID]; e != nil {
			sm.Index = e.pos
		}
		for _, id := range d.Evict {
			if e := s.byID[id]; e != nil {
				sm.Indexes = append(sm.Indexes, e.pos)
			}
		}
		rep.Summarized = append(rep.Summarized, sm)
		if s.log == nil {
			continue
		}
		keys := make([]string, len(sm.Pointers))
		for i, p := range sm.Pointers {
			keys[i] = p.Key
		}
		s.log.LogAttrs(context.Background(), slog.LevelInfo, LogSummary,
			slog.String("compaction", sm.Compaction), slog.String("status", "completed"),
			slog.String("dialect", string(s.cfg.Dialect)), slog.String("summary", string(sm.ID)),
			slog.Any("replaced", sm.Replaced), slog.Int("tokens", sm.Tokens), slog.Int("freed", sm.Freed),
			slog.Any("pointers", keys), slog.Int("before", rep.Before), slog.Int("after", rep.After))
	}
}

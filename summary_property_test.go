package pruneguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard/internal/facts"
	"pgregory.net/rapid"
)

// Properties of summary plans: random sessions, random runs, random
// summarizers (faithful, or dropping, altering or padding what they were
// asked to carry), through Context.Prune and through a Guard that
// compacts. Whatever the summarizer writes, a summary that stands
// carries every fact it must or the pointer to it, replaces only whole
// units the model has read and no pinned, streaming or pending one, is
// smaller than its run, and never saw a one-time secret; and, compaction
// after compaction, every fact of what could not be obtained again is
// still in the prompt or behind a pointer the prompt shows.

// secretMark starts every one-time secret's text; no Brief may hold it.
const secretMark = "SECRET-"

// sumWorld is one random session: the Context, a store the summaries'
// pointers and the guard's spills live in, and what the test owes.
type sumWorld struct {
	t     *rapid.T
	c     *Context
	store map[Pointer][]Message
	n     int // ids made so far
	// owed are the facts of the irreducible messages that left the
	// prompt: each must stay in it or behind a pointer it shows.
	owed map[string]MessageID
	// lines are the keys of the pointers evicted messages left behind.
	lines []string
	// briefs are the Briefs every summarizer was handed, as JSON.
	briefs []string
	// seen are the states captured when a summarizer was called, for
	// the checks of the summaries a guard made.
	seen []before
	// known is every message the test saw, as last seen, and its class.
	known map[MessageID]Message
	class map[MessageID]Class
}

func (w *sumWorld) Resolvable(p Pointer) bool { _, ok := w.store[p]; return ok }

func (w *sumWorld) SpillMessages(_ context.Context, ms []Message) (Pointer, error) {
	p := Pointer{Store: "prop", Key: fmt.Sprintf("seg-%04d", len(w.store))}
	w.store[p] = slices.Clone(ms)
	return p, nil
}

func (w *sumWorld) id(prefix string) string {
	w.n++
	return fmt.Sprintf("%s%d", prefix, w.n)
}

// text writes a message text with facts in it, drawn.
func (w *sumWorld) text(label string) string {
	parts := []string{label + " note"}
	for i := range rapid.IntRange(0, 3).Draw(w.t, label+"facts") {
		switch rapid.IntRange(0, 5).Draw(w.t, label+"kind") {
		case 0:
			parts = append(parts, fmt.Sprintf("ticket INC-%d", 1000+w.n*7+i))
		case 1:
			parts = append(parts, fmt.Sprintf("exit %d", 100+w.n+i))
		case 2:
			parts = append(parts, fmt.Sprintf("see /srv/logs/run%d.log", w.n+i))
		case 3:
			parts = append(parts, fmt.Sprintf("The cache at node%d is not the cause.", w.n+i))
		case 4:
			parts = append(parts, fmt.Sprintf("paid $%d.50", 10+w.n+i))
		default:
			parts = append(parts, strings.Repeat("plain words ", 1+i))
		}
	}
	return strings.Join(parts, "; ")
}

func newSumWorld(t *rapid.T) *sumWorld {
	w := &sumWorld{t: t, store: map[Pointer][]Message{}, owed: map[string]MessageID{},
		known: map[MessageID]Message{}, class: map[MessageID]Class{}}
	w.c = NewContext(Config{Resolver: w, TextClass: rapid.SampledFrom([]Class{Irreducible, Reconstructible}).Draw(t, "textClass"),
		Boundary: rapid.SampledFrom([]BoundaryMode{BoundaryStrict, BoundaryRelaxed}).Draw(t, "boundary")})
	pure := Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}
	w.must(w.c.RegisterTool(Tool{Name: "read", Annotations: pure}))
	w.must(w.c.RegisterTool(Tool{Name: "lookup"}))
	w.must(w.c.Append(Message{ID: "sys", Role: RoleSystem, Tokens: 30, Pinned: true, Content: []byte("system prompt")}))
	return w
}

func (w *sumWorld) must(err error) {
	if err != nil {
		w.t.Fatal(err)
	}
}

// turn appends one drawn turn: a user message, a text answer, or calls
// with their results (one perhaps left pending or streaming); some marked
// as one-time secrets, as user constraints, pinned or spilled.
func (w *sumWorld) turn() {
	t := w.t
	switch rapid.IntRange(0, 3).Draw(t, "turn") {
	case 0:
		m := Message{ID: MessageID(w.id("u")), Role: RoleUser, Tokens: rapid.IntRange(5, 80).Draw(t, "tokens"),
			Content: []byte(w.text("user")), Pinned: rapid.IntRange(0, 9).Draw(t, "pin") == 0}
		if rapid.Bool().Draw(t, "constraint") && len(facts.Extract(string(m.Content))) > 0 {
			m.Facts = UserConstraint
		}
		w.must(w.c.Append(m))
	case 1:
		w.must(w.c.Append(Message{ID: MessageID(w.id("a")), Role: RoleAssistant, Tokens: rapid.IntRange(5, 60).Draw(t, "tokens"),
			Content: []byte(w.text("answer"))}))
	default:
		w.calls()
	}
	if rapid.IntRange(0, 4).Draw(t, "spill") == 0 {
		w.spillOne()
	}
}

// calls appends an assistant message with one to three calls and their
// results, the last result perhaps missing (pending) or streaming.
func (w *sumWorld) calls() {
	t := w.t
	if len(w.c.Pending()) > 0 || len(w.c.OpenMessages()) > 0 {
		w.finish()
		return
	}
	var calls []Call
	for range rapid.IntRange(1, 3).Draw(t, "calls") {
		id := CallID(w.id("k"))
		tool := rapid.SampledFrom([]string{"read", "lookup"}).Draw(t, "tool")
		calls = append(calls, Call{ID: id, Tool: tool, Args: json.RawMessage(fmt.Sprintf(`{"q":"Q-%d%d"}`, w.n, w.n))})
	}
	w.must(w.c.Append(Message{ID: MessageID(w.id("a")), Role: RoleAssistant, Tokens: 20, Calls: calls}))
	end := rapid.IntRange(0, 2).Draw(t, "end") // 0: all answered, 1: the last pending, 2: the last streaming
	for i, k := range calls {
		m := Message{ID: MessageID(w.id("r")), Role: RoleTool, Tokens: rapid.IntRange(10, 400).Draw(t, "tokens"),
			Answers: []CallID{k.ID}, Content: []byte(w.text("result"))}
		if rapid.IntRange(0, 5).Draw(t, "secret") == 0 {
			m.Content = []byte(fmt.Sprintf("%s%d token for the deploy", secretMark, w.n))
			m.Facts = OneTimeSecret
		}
		switch {
		case i < len(calls)-1 || end == 0:
			w.must(w.c.Append(m))
		case end == 2:
			w.must(w.c.Open(m))
		}
	}
}

// finish answers the pending calls and closes the streaming messages.
func (w *sumWorld) finish() {
	for _, id := range w.c.OpenMessages() {
		w.must(w.c.Close(id))
	}
	for _, k := range w.c.Pending() {
		w.must(w.c.Append(Message{ID: MessageID(w.id("r")), Role: RoleTool, Tokens: 30, Answers: []CallID{k},
			Content: []byte(w.text("late"))}))
	}
}

// spillOne spills a drawn closed message to the store.
func (w *sumWorld) spillOne() {
	es := w.c.Snapshot()
	e := es[rapid.IntRange(0, len(es)-1).Draw(w.t, "spillAt")]
	if e.Open {
		return
	}
	m, _ := w.c.Message(e.ID)
	p, _ := w.SpillMessages(context.Background(), []Message{m})
	w.must(w.c.Spill(e.ID, p))
}

// run draws a run of present messages: contiguous, from a drawn start.
func (w *sumWorld) run() []MessageID {
	es := w.c.Snapshot()
	i := rapid.IntRange(0, len(es)-1).Draw(w.t, "from")
	j := rapid.IntRange(i, min(len(es)-1, i+12)).Draw(w.t, "to")
	var ids []MessageID
	for _, e := range es[i : j+1] {
		ids = append(ids, e.ID)
	}
	return ids
}

// summarizer draws a summarizer that records its Brief: Digest, or
// Digest then a fault.
func (w *sumWorld) summarizer() Summarizer {
	fault := rapid.IntRange(0, 5).Draw(w.t, "fault")
	return SummarizerFunc(func(ctx context.Context, b *Brief) (string, error) {
		raw, err := json.Marshal(b)
		if err != nil {
			return "", err
		}
		w.briefs = append(w.briefs, string(raw))
		cb := w.capture()
		cb.replace = b.Replace
		w.seen = append(w.seen, cb)
		text, err := Digest{}.Summarize(ctx, b)
		if err != nil || len(b.Facts) == 0 && fault < 4 {
			return text, err
		}
		switch fault {
		case 1: // drops a required fact
			return strings.ReplaceAll(text, b.Facts[len(b.Facts)/2].Text, "(dropped)"), nil
		case 2: // changes a digit of a required fact
			f := b.Facts[0].Text
			return strings.ReplaceAll(text, f, alterDigit(f)), nil
		case 3: // drops the pointers' keys
			for _, p := range b.Pointers {
				text = strings.ReplaceAll(text, p.Key, "(a segment)")
			}
			return text, nil
		case 4: // pads: may grow past the run
			return text + strings.Repeat(" and so on", b.Tokens), nil
		case 5: // writes anything
			return "nothing of note happened", nil
		}
		return text, nil
	})
}

// alterDigit changes the first digit of s, or appends one.
func alterDigit(s string) string {
	for i, r := range s {
		if r >= '0' && r <= '9' {
			return s[:i] + string('0'+(r-'0'+1)%10) + s[i+1:]
		}
	}
	return s + "1"
}

// before is what the test knows of the Context before a prune.
type before struct {
	tokens  int
	entries map[MessageID]Entry
	msgs    map[MessageID]Message
	class   map[MessageID]Class
	units   map[UnitID][]MessageID
	order   []MessageID // the messages, in transcript order
	replace []MessageID // the run of the Brief it was captured for
}

func (w *sumWorld) capture() before {
	b := before{tokens: w.c.Tokens(), entries: map[MessageID]Entry{}, msgs: map[MessageID]Message{},
		class: map[MessageID]Class{}, units: map[UnitID][]MessageID{}}
	for _, e := range w.c.Snapshot() {
		b.entries[e.ID] = e
		b.msgs[e.ID], _ = w.c.Message(e.ID)
		b.class[e.ID], _ = w.c.ClassOf(e.ID)
		b.units[e.Unit] = append(b.units[e.Unit], e.ID)
		b.order = append(b.order, e.ID)
		w.known[e.ID], w.class[e.ID] = b.msgs[e.ID], b.class[e.ID]
	}
	return b
}

// checkSummary checks decision d, a summary that stood, against what
// the Context held before it.
func (w *sumWorld) checkSummary(b before, d *Decision) {
	t, s := w.t, d.Summary
	if i := slices.Index(b.order, d.Evict[0]); i < 0 || i+len(d.Evict) > len(b.order) || !slices.Equal(b.order[i:i+len(d.Evict)], d.Evict) {
		t.Fatalf("summary %s replaced %v, not a run of the transcript %v", s.ID, d.Evict, b.order)
	}
	replaced := 0
	for _, id := range d.Evict {
		e := b.entries[id]
		if e.Pinned || e.Open || e.Pending || e.Unread {
			t.Fatalf("summary %s replaced %s: pinned %v, streaming %v, pending %v, unread %v", s.ID, id, e.Pinned, e.Open, e.Pending, e.Unread)
		}
		for _, other := range b.units[e.Unit] {
			if !slices.Contains(d.Evict, other) {
				t.Fatalf("summary %s replaced %s but not %s of its unit %s", s.ID, id, other, e.Unit)
			}
		}
		replaced += e.Tokens
	}
	if s.Tokens >= replaced {
		t.Fatalf("summary %s holds %d tokens for a run of %d", s.ID, s.Tokens, replaced)
	}
	carrier := facts.NewCarrier(s.Text)
	for _, id := range d.Evict {
		m := b.msgs[id]
		if b.class[id] == Reconstructible {
			continue
		}
		if !m.Pointer.IsZero() && w.Resolvable(m.Pointer) && slices.Contains(s.Pointers, m.Pointer) && strings.Contains(s.Text, m.Pointer.Key) {
			continue
		}
		if m.Facts&OneTimeSecret != 0 {
			t.Fatalf("summary %s replaced the secret %s without its pointer", s.ID, id)
		}
		for _, f := range w.factsOf(m) {
			if !carrier.Carries(f) {
				t.Fatalf("summary %s replaced %s without its fact %q or its pointer:\n%s", s.ID, id, f.Text, s.Text)
			}
		}
	}
}

// factsOf is what a message replaced owes: the facts of its text and
// arguments, or, for a summary, those it owed in turn.
func (w *sumWorld) factsOf(m Message) []facts.Fact {
	if m.Role == RoleSummary {
		var fs []facts.Fact
		for text, from := range w.owed {
			if from == m.ID {
				fs = append(fs, facts.Fact{Text: text})
			}
		}
		return fs
	}
	fs := facts.Extract(string(m.Content))
	for _, k := range m.Calls {
		fs = append(fs, facts.Extract(string(k.Args))...)
	}
	return fs
}

// settle records what decision d took out of the prompt, once applied:
// the facts of its irreducible messages are owed from then on, by the
// summary that stands for them or behind their pointers.
func (w *sumWorld) settle(d *Decision) {
	for _, n := range d.Pointers {
		w.lines = append(w.lines, n.Pointer.Key)
	}
	for _, id := range d.Evict {
		if w.class[id] == Reconstructible {
			continue
		}
		m := w.known[id]
		if slices.ContainsFunc(d.Pointers, func(n SpillNote) bool { return n.Message == id }) ||
			!m.Pointer.IsZero() && d.Summary != nil && slices.Contains(d.Summary.Pointers, m.Pointer) {
			continue // behind its pointer, which the store keeps
		}
		owner := MessageID("")
		if d.Summary != nil {
			owner = d.Summary.ID
		}
		for _, f := range w.factsOf(m) {
			if _, ok := w.owed[f.Text]; !ok || m.Role == RoleSummary {
				w.owed[f.Text] = owner
			}
		}
	}
}

// checkOwed checks that every fact owed is in the prompt, or in a
// segment the prompt's text or pointer lines name (or one those name).
func (w *sumWorld) checkOwed() {
	var prompt strings.Builder
	for _, e := range w.c.Snapshot() {
		m, _ := w.c.Message(e.ID)
		prompt.Write(m.Content)
		prompt.WriteByte('\n')
	}
	texts := []string{prompt.String(), strings.Join(w.lines, "\n")}
	seen := map[Pointer]bool{}
	for i := 0; i < len(texts); i++ {
		for p, ms := range w.store {
			if !seen[p] && strings.Contains(texts[i], p.Key) {
				seen[p] = true
				for _, m := range ms {
					texts = append(texts, string(m.Content))
				}
			}
		}
	}
	all := facts.NewCarrier(strings.Join(texts, "\n"))
	for text, from := range w.owed {
		if !all.Carries(facts.Fact{Text: text}) {
			w.t.Fatalf("the fact %q (owed by %q) is neither in the prompt nor behind a pointer it shows", text, from)
		}
	}
}

// checkBriefs checks that no summarizer saw a one-time secret.
func (w *sumWorld) checkBriefs() {
	for _, b := range w.briefs {
		if strings.Contains(b, secretMark) {
			w.t.Fatalf("a summarizer was handed a one-time secret:\n%s", b)
		}
	}
}

// planSummary proposes a drawn summary of a drawn run, written by a
// drawn summarizer from its Brief (or, a time in four, of a run the test
// draws with no Brief), and checks it if it stands.
func (w *sumWorld) planSummary() {
	t := w.t
	run := w.run()
	var text string
	var ptrs []Pointer
	if rapid.IntRange(0, 3).Draw(t, "briefed") > 0 {
		br, err := w.c.Brief(Plan{Summary: &Summary{Replace: run}, Split: SplitGrow})
		if err != nil || len(br.Replace) == 0 {
			return // the boundary let no run go
		}
		run, ptrs = br.Replace, br.Pointers
		if text, err = w.summarizer().Summarize(context.Background(), br); err != nil {
			t.Fatal(err)
		}
	} else {
		text = rapid.SampledFrom([]string{"a short note", "INC-1007 exit 104", strings.Repeat("long ", 200)}).Draw(t, "text")
	}
	b := w.capture()
	d, err := w.c.Prune(Plan{Summary: &Summary{Replace: run, ID: MessageID(w.id("s")), Text: text, Pointers: ptrs}, Split: SplitGrow})
	var pe *PruneError
	var de *DeferredError
	switch {
	case errors.As(err, &pe) || errors.As(err, &de):
		return
	case err != nil:
		t.Fatalf("prune: %v", err)
	case d.Summary == nil:
		return
	}
	w.checkSummary(b, d)
	w.must(w.c.Apply(d))
	w.settle(d)
}

// check runs a Guard that compacts with a drawn summarizer, spilling or
// not, and checks each summary it applied.
func (w *sumWorld) check() {
	t := w.t
	b := w.capture()
	g := Guard{Budget: max(b.tokens*rapid.IntRange(20, 90).Draw(t, "budget")/100, 1), Policy: OldestFirst{Keep: 2},
		Summarizer: w.summarizer(), Rounds: 8}
	if rapid.Bool().Draw(t, "guardSpills") {
		g.Spill = w
	}
	w.seen = nil
	res, err := g.Check(w.c)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	for _, d := range res.Decisions {
		if d.Summary != nil {
			// The state the summarizer was called in, for this run.
			i := slices.IndexFunc(w.seen, func(b before) bool { return slices.Equal(b.replace, d.Evict) })
			if i < 0 {
				t.Fatalf("summary %s of %v: no summarizer was asked for it", d.Summary.ID, d.Evict)
			}
			w.checkSummary(w.seen[i], d)
		}
		w.settle(d)
	}
	if res.After > b.tokens {
		t.Fatalf("the check grew the prompt from %d to %d tokens", b.tokens, res.After)
	}
}

func checkSummaryPlans(t *rapid.T) {
	w := newSumWorld(t)
	for range rapid.IntRange(1, 60).Draw(t, "steps") {
		switch rapid.IntRange(0, 5).Draw(t, "op") {
		case 0, 1, 2:
			w.turn()
		case 3, 4:
			w.planSummary()
		case 5:
			w.check()
		}
		w.checkOwed()
		w.checkBriefs()
	}
}

func TestPropertySummaryPlans(t *testing.T) {
	rapid.Check(t, checkSummaryPlans)
}

func FuzzSummaryPlans(f *testing.F) {
	f.Fuzz(rapid.MakeFuzz(checkSummaryPlans))
}

package pruneguard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// The twin: two Contexts fed the same events, plans, summaries and guard
// checks, one of them saved and restored every few steps, the other
// never. They must answer every event alike, decide every plan alike,
// check alike (decisions, refusals met and remembered, compaction ids,
// log records) and save the same bytes, step after step. The events are
// drawn from what the Contexts hold, so that they go on meeting the
// parts a restore must carry: summaries and what they carry, what the
// model has not read, tombstones and compressions, scopes and stale
// reads, ghost episodes, schemas asked back and waiting for a logger,
// refusals the guards remember, pruned calls and results, pointer lines.

// twin drives two Contexts alike.
type twin struct {
	src      choiceSource
	a, b     *Context // a is the one restored
	fns      Config   // the functions both take
	live     map[Pointer]bool
	logA     *bytes.Buffer
	logB     *bytes.Buffer
	next     int
	restores int
	log      []string
	// seen counts the states restored that held each part.
	seen map[string]int
}

// twinParts are the parts of a saved state the twin runs look for.
var twinParts = []string{`"holds"`, `"carries"`, `"readThrough"`, `"tombstoned"`, `"compressed"`, `"scope"`,
	`"ghosts"`, `"reexpansions"`, `"refusedUnits"`, `"refusedStubs"`, `"closes"`, `"couplings"`, `"prunedLastCall"`,
	`"stale":true`, `"superseded"`, `"prunedResults"`, `"alerts"`, `"pointerLines"`, `"checks"`, `"stubbed"`,
	`"abandoned"`, `"open":true`, `"counted"`, `},null,{"message"`, `null,{"signature"`}

func newTwin(src choiceSource) *twin {
	w := &twin{src: src, live: map[Pointer]bool{}, logA: new(bytes.Buffer), logB: new(bytes.Buffer), seen: map[string]int{}}
	cfg := Config{
		Boundary: BoundaryMode(src.intn(2)), Regen: RegenMode(src.intn(2)), NoTombstones: src.intn(5) == 0,
		TextClass: []Class{ClassUnset, Reconstructible, Irreducible}[src.intn(3)],
	}
	w.fns.Resolver = ResolverFunc(func(p Pointer) bool { return w.live[p] })
	if src.intn(2) == 0 {
		w.fns.Counter = ApproxCounter{}
	}
	if src.intn(3) == 0 {
		cfg.HoardTokens = 60
	}
	if src.intn(3) == 0 {
		cfg.PointerTokens = 1 + src.intn(20)
	}
	if src.intn(3) == 0 {
		cfg.StubTokens = 1 + src.intn(10)
	}
	cfg.Resolver, cfg.Counter = w.fns.Resolver, w.fns.Counter
	w.a, w.b = NewContext(cfg), NewContext(cfg)
	w.logf("config %+v", cfg)
	return w
}

func (w *twin) logf(format string, args ...any) { w.log = append(w.log, fmt.Sprintf(format, args...)) }

func (w *twin) fail(format string, args ...any) error {
	tail := w.log[max(0, len(w.log)-40):]
	return fmt.Errorf("%s\n--- steps ---\n%s", fmt.Sprintf(format, args...), strings.Join(tail, "\n"))
}

// both runs f on each Context and reports whether they answered alike.
func (w *twin) both(name string, f func(c *Context, log *bytes.Buffer) string) error {
	x, y := f(w.a, w.logA), f(w.b, w.logB)
	w.logf("%s: %s", name, y)
	if x != y {
		return w.fail("%s: restored %s\nnever restored %s", name, x, y)
	}
	return nil
}

func (w *twin) id() MessageID {
	w.next++
	return MessageID(fmt.Sprintf("m%d", w.next))
}

// pick returns one of the messages held, or "".
func (w *twin) pick() MessageID {
	es := w.b.Snapshot()
	if len(es) == 0 {
		return ""
	}
	return es[w.src.intn(len(es))].ID
}

func (w *twin) pointer() Pointer {
	return Pointer{Store: "scratch", Key: fmt.Sprintf("p%d", w.src.intn(4))}
}

func (w *twin) message(role Role) Message {
	m := Message{ID: w.id(), Role: role, Tokens: w.src.intn(120), Content: []byte(fmt.Sprintf("text %d ORD-%d", w.next, 1000+w.src.intn(50)))}
	if w.fns.Counter != nil && w.src.intn(3) == 0 {
		m.Tokens = 0
	}
	switch w.src.intn(12) {
	case 0:
		m.Facts = Facts(1 << w.src.intn(4))
	case 1:
		m.Class = Class(1 + w.src.intn(3))
	case 2:
		m.Pinned = true
	case 3:
		m.Pointer = w.pointer()
	case 4:
		m.Requires = []string{toolPool[w.src.intn(len(toolPool))]}
	case 5:
		m.NeededBy = []StepID{StepID(fmt.Sprint("s", w.src.intn(3)))}
	}
	return m
}

func (w *twin) call() Call {
	if pending := w.b.Pending(); len(pending) > 0 && w.src.intn(8) == 0 {
		return Call{ID: pending[0], Tool: "grep", Args: json.RawMessage(`{}`)} // refused: the id waits
	}
	w.next++
	id := CallID(fmt.Sprintf("k%d", w.next))
	if w.src.intn(6) == 0 && w.next > 3 {
		id = CallID(fmt.Sprintf("k%d", 1+w.src.intn(w.next-1))) // an id again, answered or not
	}
	return Call{ID: id, Tool: toolPool[w.src.intn(len(toolPool))], Args: json.RawMessage(callArgs[w.src.intn(len(callArgs))]), Server: w.src.intn(10) == 0}
}

// event appends, opens or closes a message, or changes one.
func (w *twin) event() error {
	switch op := w.src.intn(14); op {
	case 0, 1:
		m := w.message([]Role{RoleUser, RoleAssistant, RoleSystem, RoleReasoning, RoleTool}[w.src.intn(5)])
		open := w.src.intn(6) == 0
		return w.both("add", func(c *Context, _ *bytes.Buffer) string { return fmt.Sprint(c.add("add", m, open)) })
	case 2, 3:
		m := w.message(RoleAssistant)
		m.Content = nil
		for range 1 + w.src.intn(3) {
			m.Calls = append(m.Calls, w.call())
		}
		open := w.src.intn(5) == 0
		return w.both("calls", func(c *Context, _ *bytes.Buffer) string { return fmt.Sprint(c.add("add", m, open)) })
	case 4, 5:
		return w.result()
	case 6:
		if open := w.b.OpenMessages(); len(open) > 0 {
			id, n := open[w.src.intn(len(open))], w.src.intn(40)
			return w.both("write", func(c *Context, _ *bytes.Buffer) string { return fmt.Sprint(c.Write(id, []byte(" more"), n)) })
		}
	case 7:
		if open := w.b.OpenMessages(); len(open) > 0 {
			id := open[w.src.intn(len(open))]
			var calls []Call
			if w.src.intn(2) == 0 {
				calls = []Call{w.call()}
			}
			return w.both("close", func(c *Context, _ *bytes.Buffer) string { return fmt.Sprint(c.Close(id, calls...)) })
		}
	case 8:
		ids := []MessageID{w.pick(), w.pick()}
		return w.both("couple", func(c *Context, _ *bytes.Buffer) string { return fmt.Sprint(c.Couple(ids...)) })
	case 9:
		id, f := w.pick(), Facts(1<<w.src.intn(4))
		return w.both("mark", func(c *Context, _ *bytes.Buffer) string { return fmt.Sprint(c.Mark(id, f), c.Pin(id) == nil) })
	case 10:
		id, p := w.pick(), w.pointer()
		w.live[p] = w.src.intn(3) != 0
		return w.both("spill", func(c *Context, _ *bytes.Buffer) string { return fmt.Sprint(c.Spill(id, p)) })
	case 11:
		return w.plan()
	case 12:
		return w.tools()
	case 13:
		if pending := w.b.Pending(); len(pending) > 0 {
			id := pending[w.src.intn(len(pending))]
			return w.both("abandon", func(c *Context, _ *bytes.Buffer) string { return fmt.Sprint(c.Abandon(id)) })
		}
	}
	return nil
}

// result answers calls waiting, now and then with an error naming a
// field of a schema.
func (w *twin) result() error {
	pending := w.b.Pending()
	if len(pending) == 0 {
		return nil
	}
	m := w.message(RoleTool)
	m.Pinned, m.Pointer = false, Pointer{}
	m.Content = []byte(fmt.Sprintf("result %d", w.src.intn(3)))
	if w.src.intn(4) == 0 {
		m.IsError, m.Content = true, []byte("validation failed: notify is required; severity must be one of SEV-1")
	}
	m.Answers = []CallID{pending[w.src.intn(len(pending))]}
	if w.src.intn(4) == 0 {
		m.Answers = append(m.Answers, pending[w.src.intn(len(pending))])
	}
	open := w.src.intn(6) == 0
	return w.both("result", func(c *Context, _ *bytes.Buffer) string { return fmt.Sprint(c.add("add", m, open)) })
}

// plan plans, completes or seals steps.
func (w *twin) plan() error {
	step := StepID(fmt.Sprint("s", w.src.intn(3)))
	switch w.src.intn(3) {
	case 0:
		id := w.pick()
		return w.both("plan step", func(c *Context, _ *bytes.Buffer) string { return fmt.Sprint(c.PlanStep(step, id)) })
	case 1:
		return w.both("complete step", func(c *Context, _ *bytes.Buffer) string { return fmt.Sprint(c.CompleteStep(step)) })
	}
	sealed := w.src.intn(2) == 0
	return w.both("seal", func(c *Context, _ *bytes.Buffer) string { c.SealSteps(sealed); return "" })
}

// tools registers, asks back or reports on tools.
func (w *twin) tools() error {
	name := toolPool[w.src.intn(len(toolPool))]
	switch w.src.intn(3) {
	case 0:
		t := Tool{
			Name: name, Version: []string{"", "v1", "v2"}[w.src.intn(3)], Scope: []string{"", "fs", "db"}[w.src.intn(3)],
			Annotations: Annotations{ReadOnlyHint: Bool(w.src.intn(2) == 0), OpenWorldHint: Bool(w.src.intn(3) == 0)},
			NoTombstone: w.src.intn(6) == 0, Family: []string{"", "incident"}[w.src.intn(2)],
		}
		if s := registerSchemas[w.src.intn(len(registerSchemas)-1)]; s != "" {
			t.Schema = json.RawMessage(s)
		}
		return w.both("register", func(c *Context, _ *bytes.Buffer) string { return fmt.Sprint(c.RegisterTool(t)) })
	case 1:
		return w.both("request", func(c *Context, _ *bytes.Buffer) string { return fmt.Sprint(c.RequestTool(name)) })
	}
	var id CallID
	if ks := w.b.Pending(); len(ks) > 0 {
		id = ks[0]
	}
	return w.both("report", func(c *Context, _ *bytes.Buffer) string { return fmt.Sprint(c.ReportValidationError(id, "notify")) })
}

// prune decides and applies a random plan: evictions, stubs, schemas.
func (w *twin) prune() error {
	var p Plan
	es := w.b.Snapshot()
	for range w.src.intn(4) {
		if len(es) > 0 {
			e := es[w.src.intn(len(es))]
			if e.Result && w.src.intn(2) == 0 {
				p.Stub = append(p.Stub, e.ID)
			} else {
				p.Evict = append(p.Evict, e.ID)
			}
		}
	}
	for _, t := range w.b.Tools() {
		switch w.src.intn(6) {
		case 0:
			p.DropSchemas = append(p.DropSchemas, t.Tool.Name)
		case 1:
			if p.CompressSchemas == nil {
				p.CompressSchemas = map[string]json.RawMessage{}
			}
			p.CompressSchemas[t.Tool.Name] = json.RawMessage(compressions[w.src.intn(len(compressions)-1)])
		}
	}
	p.Split = SplitMode(w.src.intn(3))
	return w.both("prune "+planString(p), func(c *Context, _ *bytes.Buffer) string { return decideAndApply(c, p) })
}

// summarize replaces a run of messages with a summary Digest writes.
func (w *twin) summarize() error {
	es := w.b.Snapshot()
	if len(es) < 2 {
		return nil
	}
	from := w.src.intn(len(es) - 1)
	to := from + 1 + w.src.intn(min(6, len(es)-from-1))
	var ids []MessageID
	for _, e := range es[from:to] {
		ids = append(ids, e.ID)
	}
	sid := w.id()
	return w.both("summary", func(c *Context, _ *bytes.Buffer) string {
		b, err := c.Brief(Plan{Summary: &Summary{Replace: ids}})
		if err != nil {
			return "brief: " + err.Error()
		}
		text, err := Digest{}.Summarize(context.Background(), b)
		if err != nil {
			return "digest: " + err.Error()
		}
		return decideAndApply(c, Plan{Summary: &Summary{Replace: b.Replace, ID: sid, Text: text, Pointers: b.Pointers}})
	})
}

// decideAndApply returns what c decides of p, and what applying it did.
func decideAndApply(c *Context, p Plan) string {
	d, err := c.Prune(p)
	if err != nil {
		return "refused: " + err.Error()
	}
	out, _ := json.Marshal([]any{decisionFields(d), d.Summary})
	return string(out) + " apply: " + fmt.Sprint(c.Apply(d))
}

// twinSpill spills to memory under a key made of the ids spilled: the
// same spill of both Contexts gives the same pointer.
type twinSpill struct{ w *twin }

func (s twinSpill) Resolvable(p Pointer) bool { return s.w.live[p] }

func (s twinSpill) SpillMessages(_ context.Context, ms []Message) (Pointer, error) {
	h := sha256.New()
	for _, m := range ms {
		h.Write([]byte(m.ID))
		h.Write([]byte{0})
	}
	p := Pointer{Store: "twin", Key: hex.EncodeToString(h.Sum(nil)[:6])}
	s.w.live[p] = true
	return p, nil
}

// check runs a guard on both Contexts.
func (w *twin) check() error {
	tokens := w.b.Tokens()
	g := Guard{Budget: 1 + tokens*(30+w.src.intn(60))/100, Policy: []Policy{OldestFirst{Keep: w.src.intn(4)}, LargestResultsFirst{Stub: true}}[w.src.intn(2)]}
	if w.src.intn(2) == 0 {
		g.Summarizer = Digest{}
	}
	if w.src.intn(3) == 0 {
		g.Spill = twinSpill{w}
	}
	logged := w.src.intn(2) == 0
	if w.b.Config().HoardTokens > 0 {
		g.Hoard = HoardMode(w.src.intn(3))
	}
	return w.both(fmt.Sprintf("check budget %d", g.Budget), func(c *Context, log *bytes.Buffer) string {
		if logged {
			g.Logger = slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}}))
		}
		res, err := g.Check(c)
		return resultString(res, err)
	})
}

// resultString returns what a check did, as far as it is the Context's.
func resultString(res Result, err error) string {
	var ds []any
	for _, d := range res.Decisions {
		ds = append(ds, decisionFields(d), d.Summary)
	}
	var refused []string
	for _, v := range res.Refused {
		refused = append(refused, v.Error())
	}
	out, _ := json.Marshal([]any{res.Outcome.String(), res.Before, res.After, ds, refused, fmt.Sprint(res.Reason),
		res.Compaction, res.Spills, fmt.Sprint(res.SpillErrors), res.Alerts, fmt.Sprint(err)})
	return string(out)
}

// step draws one step and checks that the twins still agree.
func (w *twin) step() error {
	var err error
	switch w.src.intn(10) {
	case 0, 1, 2, 3:
		err = w.event()
	case 4:
		m := Message{ID: w.id(), Role: RoleAssistant, Tokens: 5, Content: []byte("read")}
		err = w.both("model", func(c *Context, _ *bytes.Buffer) string { return fmt.Sprint(c.Append(m)) })
	case 5, 6:
		err = w.prune()
	case 7:
		err = w.summarize()
	case 8:
		err = w.check()
	case 9:
		switch w.src.intn(3) {
		case 0:
			err = w.both("forget refusals", func(c *Context, _ *bytes.Buffer) string { c.ForgetRefusals(); return "" })
		case 1:
			err = w.both("take alerts", func(c *Context, _ *bytes.Buffer) string { return fmt.Sprint(c.TakeAlerts()) })
		default:
			p := w.pointer()
			w.live[p] = !w.live[p]
		}
	}
	if err != nil {
		return err
	}
	return w.agree()
}

// agree checks that the twins show, remember, log and save the same.
func (w *twin) agree() error {
	if diff := diffState(capture(w.b), capture(w.a)); diff != nil {
		return w.fail("states differ: %v", diff)
	}
	if x, y := fmt.Sprint(w.a.Refusals()), fmt.Sprint(w.b.Refusals()); x != y {
		return w.fail("refusals differ:\n%s\n%s", x, y)
	}
	if !slices.Equal(w.logA.Bytes(), w.logB.Bytes()) {
		return w.fail("logs differ:\n%s\n%s", w.logA, w.logB)
	}
	var sa, sb bytes.Buffer
	if err := w.a.Save(&sa); err != nil {
		return err
	}
	if err := w.b.Save(&sb); err != nil {
		return err
	}
	if !bytes.Equal(sa.Bytes(), sb.Bytes()) {
		return w.fail("saved states differ:\n%s\n%s", sa.Bytes(), sb.Bytes())
	}
	return nil
}

// restore saves a and restores it in its place, which must save the
// same bytes.
func (w *twin) restore() error {
	var s bytes.Buffer
	if err := w.a.Save(&s); err != nil {
		return err
	}
	r, err := Restore(bytes.NewReader(s.Bytes()), w.fns)
	if err != nil {
		return w.fail("restore of what Save wrote: %v\n%s", err, s.Bytes())
	}
	var again bytes.Buffer
	if err := r.Save(&again); err != nil {
		return err
	}
	if !bytes.Equal(s.Bytes(), again.Bytes()) {
		return w.fail("the restored context saves otherwise:\n%s\n%s", s.Bytes(), again.Bytes())
	}
	w.a = r
	w.restores++
	for _, part := range twinParts {
		if bytes.Contains(s.Bytes(), []byte(part)) {
			w.seen[part]++
		}
	}
	w.logf("saved and restored (%d bytes)", s.Len())
	return nil
}

// run takes steps, restoring a every few.
func (w *twin) run(steps, every int) error {
	for i := range steps {
		if err := w.step(); err != nil {
			return err
		}
		if i%every == every-1 {
			if err := w.restore(); err != nil {
				return err
			}
		}
	}
	return nil
}

// A Context saved and restored every few steps answers, decides, checks,
// logs and saves as its twin that never was.
func TestPropertyTwinRestoredDecidesAlike(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		w := newTwin(rapidSource{rt})
		most := 150
		if underRace {
			most = 40
		}
		steps := rapid.IntRange(1, most).Draw(rt, "steps")
		if err := w.run(steps, rapid.IntRange(1, 12).Draw(rt, "every")); err != nil {
			rt.Fatal(err)
		}
	})
}

// Many long twin runs, from seeds, and which parts of the state the
// states they restored held: a change that keeps the runs from meeting a
// part is seen.
func TestTwinRunsMeetEveryPart(t *testing.T) {
	seen := map[string]int{}
	runs := 60
	if testing.Short() || underRace {
		runs = 8
	}
	for seed := range uint64(runs) {
		w := newTwin(randSource{rand.New(rand.NewPCG(seed, 7))})
		if err := w.run(250, 1+int(seed%9)); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for part, n := range w.seen {
			seen[part] += n
		}
	}
	t.Logf("states restored holding each part, in %d runs: %v", runs, seen)
	if runs < 60 {
		return // too few runs to meet every part; CI runs them all without the race detector
	}
	for _, part := range twinParts {
		if seen[part] == 0 {
			t.Errorf("no state restored held %s", part)
		}
	}
}

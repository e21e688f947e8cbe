package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// count is the runtime's tokenizer, and the Context's Counter.
var count = pruneguard.ApproxCounter{}

// runtime is the simulated agent runtime: it feeds the Context what
// happens, runs the guard before each model call, keeps the prompt the
// model reads (the Context's messages, the pointer lines, stubs) and
// answers the model's tool calls, the recall tool among them.
type runtime struct {
	c  *pruneguard.Context
	sp *spill.Spiller
	g  pruneguard.Guard
	w  *trace
	ws *world
	m  *model

	turn int

	// Every message ever appended, as appended: what "identical" is
	// checked against.
	orig  map[pruneguard.MessageID]pruneguard.Message
	calls map[pruneguard.CallID]pruneguard.Call
	// The prompt beyond the Context's messages: one line per segment in
	// the system prompt, and the pointer text in place of each spilled
	// result that was stubbed.
	lines   []pruneguard.Pointer
	inLines map[pruneguard.Pointer]bool
	inPlace map[pruneguard.MessageID]pruneguard.Pointer
	stubbed map[pruneguard.MessageID]bool

	// What left the prompt, each message once, when its content first
	// left: stubbed or evicted.
	left []departure
	// keys shows each segment key as seg-1, seg-2, ... in the order
	// written, so that the trace is the same at every run.
	keys  map[string]string
	names *strings.Replacer

	unpruned   int // tokens the prompt would hold with nothing pruned
	maxPrompt  int // the largest prompt sent to the model
	prunes     int
	overBudget int // prunes that ended over the budget
	overLines  int // of those, the ones the guard had brought to its budget: over by pointer text it does not count
	lastAfter  int // the prompt's tokens after the last prune
	// The first pointer text of each kind is shown whole in the trace.
	shownInPlace, shownLine bool
	recalls                 int
	failures                []string
}

// departure is a message whose content left the prompt.
type departure struct {
	id    pruneguard.MessageID
	turn  int
	class pruneguard.Class
	ptr   pruneguard.Pointer // zero: it went as reconstructible
	redo  string             // for a reconstructible one: how it was obtained again
}

func newRuntime(sp *spill.Spiller, w *trace) *runtime {
	rt := &runtime{
		sp: sp, w: w, ws: newWorld(), m: &model{patchAt: turns - 10},
		orig:    map[pruneguard.MessageID]pruneguard.Message{},
		calls:   map[pruneguard.CallID]pruneguard.Call{},
		inLines: map[pruneguard.Pointer]bool{},
		inPlace: map[pruneguard.MessageID]pruneguard.Pointer{},
		stubbed: map[pruneguard.MessageID]bool{},
		keys:    map[string]string{},
	}
	rt.names = strings.NewReplacer()
	// The spiller is both where the guard spills and the Context's
	// Resolver, so that a pointer it hands out counts. The Context counts
	// the pointer text the runtime shows as PointerTokens: a stubbed
	// result that was spilled shows it in place of the stub text, and
	// evicted spilled messages leave one line per segment.
	rt.c = pruneguard.NewContext(pruneguard.Config{
		Resolver:      sp,
		Counter:       count,
		StubTokens:    count.Count([]byte(pruneguard.DefaultStubText)),
		PointerTokens: pointerTokens(sp),
	})
	for _, t := range tools() {
		rt.c.RegisterTool(t)
	}
	rt.unpruned = rt.c.Tokens() // the tool schemas
	rt.g = pruneguard.Guard{
		Budget:  budget,
		Trigger: window,
		// Clear old tool results as Anthropic's clear_tool_uses does;
		// when that is not enough, the guard evicts whole units, oldest
		// first, spilling what cannot be obtained again.
		Policy: pruneguard.KeepLastToolUses{Keep: 4, Stub: true},
		Spill:  sp,
	}
	return rt
}

// tools are the tools the model may call. The classes of their results
// follow from their MCP annotations.
func tools() []pruneguard.Tool {
	yes, no := pruneguard.Bool(true), pruneguard.Bool(false)
	schema := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
	}
	return []pruneguard.Tool{
		// Pure: read-only and closed-world; their results are
		// reconstructible (until a mutation in their scope).
		{Name: "read_file", Scope: "repo", Schema: schema(`"path":{"type":"string"}`),
			Annotations: pruneguard.Annotations{ReadOnlyHint: yes, OpenWorldHint: no}},
		{Name: "grep", Scope: "repo", Schema: schema(`"pattern":{"type":"string"}`),
			Annotations: pruneguard.Annotations{ReadOnlyHint: yes, OpenWorldHint: no}},
		// Read-only but open-world: flaky tests answer differently each
		// run, so their output is irreducible.
		{Name: "run_tests", Schema: schema(`"package":{"type":"string"}`),
			Annotations: pruneguard.Annotations{ReadOnlyHint: yes, OpenWorldHint: yes}},
		// Mutations: their results are irreducible; calling them again
		// would open a second ticket or post a second comment.
		{Name: "create_ticket", Schema: schema(`"title":{"type":"string"}`),
			Annotations: pruneguard.Annotations{ReadOnlyHint: no, IdempotentHint: no, OpenWorldHint: yes}},
		{Name: "comment_ticket", Schema: schema(`"ticket":{"type":"string"},"text":{"type":"string"}`),
			Annotations: pruneguard.Annotations{ReadOnlyHint: no, IdempotentHint: no, OpenWorldHint: yes}},
		{Name: "apply_patch", Scope: "repo", Schema: schema(`"path":{"type":"string"},"diff":{"type":"string"}`),
			Annotations: pruneguard.Annotations{ReadOnlyHint: no, OpenWorldHint: no}},
		// Read-only and closed-world: what it answers is reconstructible.
		spill.RecallTool(),
	}
}

// isPure says whether the runtime can run a tool again and get the same
// bytes: the check of every message that went as reconstructible.
func isPure(tool string) bool {
	return tool == "read_file" || tool == "grep" || tool == spill.RecallToolName
}

// add appends m to the Context and remembers it as it was.
func (rt *runtime) add(m pruneguard.Message) {
	if err := rt.c.Append(m); err != nil {
		panic(err) // the script is wrong
	}
	got, _ := rt.c.Message(m.ID)
	rt.orig[m.ID] = got
	for _, k := range m.Calls {
		rt.calls[k.ID] = k
	}
	rt.unpruned += got.Tokens
}

// call runs a tool call and returns its result's content.
func (rt *runtime) call(ctx context.Context, k pruneguard.Call) ([]byte, bool) {
	if k.Tool == spill.RecallToolName {
		rt.recalls++
		out, err := rt.sp.HandleRecall(ctx, k.Args)
		if err != nil {
			return []byte(err.Error()), true
		}
		return []byte(out), false
	}
	return rt.ws.run(k.Tool, k.Args)
}

// pointerTokens is what the pointer text of one of sp's segments costs
// where the prompt shows it, at most: a line in the system prompt (the
// pointer text and a line break) at its longest, which is no less than
// any text in place of a stub.
func pointerTokens(sp *spill.Spiller) int {
	return count.Count([]byte(sp.LongestPointerText() + "\n"))
}

// check runs the guard before a model call and reports a prune. The
// Context counts the pointer text the prompt shows, so the guard's budget
// is the prompt's.
func (rt *runtime) check(ctx context.Context) {
	extra, text := rt.extra(), rt.pointerText()
	res, err := rt.g.CheckContext(ctx, rt.c)
	if err != nil {
		rt.fail("turn %d: the guard failed: %v", rt.turn, err)
		return
	}
	switch res.Outcome {
	case pruneguard.Deferred:
		rt.fail("turn %d: the guard deferred at %d tokens: %v", rt.turn, res.Before, res.Reason)
	case pruneguard.Pruned:
		rt.prunes++
		rt.report(ctx, res, extra, text)
	}
	for _, se := range res.SpillErrors {
		rt.fail("turn %d: a spill failed: %v", rt.turn, se)
	}
	rt.maxPrompt = max(rt.maxPrompt, rt.c.Tokens()+rt.extra())
}

// report prints one prune, and puts the pointers where the model reads
// them: one line per segment in the system prompt for what was evicted,
// the pointer text in place of a spilled result that was stubbed.
func (rt *runtime) report(ctx context.Context, res pruneguard.Result, extraBefore, textBefore int) {
	for _, s := range res.Spills {
		rt.keys[s.Pointer.Key] = fmt.Sprint("seg-", len(rt.keys)+1)
	}
	pairs := make([]string, 0, 2*len(rt.keys))
	for k, v := range rt.keys {
		pairs = append(pairs, k, v)
	}
	rt.names = strings.NewReplacer(pairs...)

	var evicted, stubbed, units int
	var evictedBehind, stubBehind, stubText int
	var newLines []pruneguard.Pointer
	inPlace := map[pruneguard.Pointer][]pruneguard.MessageID{}
	var inPlaceOrder []pruneguard.Pointer
	for _, d := range res.Decisions {
		ptr := map[pruneguard.MessageID]pruneguard.Pointer{}
		for _, n := range d.Pointers {
			ptr[n.Message] = n.Pointer
		}
		units += len(d.Units)
		for _, r := range d.Records() {
			p := ptr[r.Message]
			if r.Stubbed {
				stubbed++
				rt.stubbed[r.Message] = true
				if !p.IsZero() {
					stubBehind++
					rt.inPlace[r.Message] = p
					if inPlace[p] == nil {
						inPlaceOrder = append(inPlaceOrder, p)
					}
					inPlace[p] = append(inPlace[p], r.Message)
				} else {
					stubText++
				}
				rt.departed(ctx, r, p)
				continue
			}
			evicted++
			if !p.IsZero() {
				evictedBehind++
			}
			if old, ok := rt.inPlace[r.Message]; ok {
				// Its stub leaves too: the segment needs a line now.
				p = old
				delete(rt.inPlace, r.Message)
			}
			if !p.IsZero() && !rt.inLines[p] {
				rt.inLines[p] = true
				rt.lines = append(rt.lines, p)
				newLines = append(newLines, p)
			}
			if rt.stubbed[r.Message] {
				delete(rt.stubbed, r.Message)
				continue // its content left with the stub
			}
			rt.departed(ctx, r, p)
		}
	}
	extra := rt.extra()
	rt.lastAfter = res.After + extra
	if rt.lastAfter > budget {
		rt.overBudget++
		if res.After <= budget {
			rt.overLines++
		}
	}
	rt.printf("prune %d, before turn %d: prompt %d -> %d tokens (pointer text %d -> %d of it; the Context's count %d -> %d)",
		rt.prunes, rt.turn, res.Before+extraBefore, res.After+extra, textBefore, rt.pointerText(), res.Before, res.After)
	for _, s := range res.Spills {
		what := string(s.Messages[0])
		if n := len(s.Messages); n > 1 {
			what = fmt.Sprintf("%d messages of %d units, %s .. %s", n, len(s.Units), s.Messages[0], s.Messages[n-1])
		}
		rt.printf("  spilled  %s: %s, %d tokens; written, read back, compared", s.Pointer.Key, what, s.Tokens)
	}
	if stubbed > 0 {
		rt.printf("  stubbed  %d results: %d show the stub text (reconstructible), %d their pointer text (spilled)", stubbed, stubText, stubBehind)
	}
	if evicted > 0 {
		rt.printf("  evicted  %d units, %d messages: %d behind a pointer, %d reconstructible", units, evicted, evictedBehind, evicted-evictedBehind)
	}
	for _, p := range inPlaceOrder {
		// Only the stubs still standing: a unit stubbed and then evicted
		// in the same check left a line instead.
		ids := slices.DeleteFunc(inPlace[p], func(id pruneguard.MessageID) bool { return rt.inPlace[id] != p })
		if len(ids) == 0 {
			continue
		}
		if !rt.shownInPlace {
			rt.shownInPlace = true
			rt.printf("  prompt   %s now reads %s", ids[0], rt.sp.PointerText(p))
			ids = ids[1:]
		}
		if len(ids) > 0 {
			rt.printf("  prompt   %s: the pointer text of %s in place", idRange(ids), p.Key)
		}
	}
	if len(newLines) > 0 && !rt.shownLine {
		rt.shownLine = true
		rt.printf("  prompt   the system prompt gains the line %s", rt.sp.PointerText(newLines[0]))
		newLines = newLines[1:]
	}
	if len(newLines) > 0 {
		keys := make([]string, len(newLines))
		for i, p := range newLines {
			keys[i] = p.Key
		}
		rt.printf("  prompt   the system prompt gains %d lines, one per segment: %s", len(keys), strings.Join(keys, " "))
	}
}

func idRange(ids []pruneguard.MessageID) string {
	if len(ids) <= 3 {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = string(id)
		}
		return strings.Join(s, " ")
	}
	return fmt.Sprintf("%s %s .. %s (%d results)", ids[0], ids[1], ids[len(ids)-1], len(ids))
}

// departed records a message whose content has just left the prompt. One
// that went without a pointer went as reconstructible: the runtime
// checks at once that it can obtain it again, identical.
func (rt *runtime) departed(ctx context.Context, r pruneguard.Record, p pruneguard.Pointer) {
	d := departure{id: r.Message, turn: rt.turn, class: r.Class, ptr: p}
	if p.IsZero() {
		d.redo = rt.redo(ctx, r)
	}
	rt.left = append(rt.left, d)
}

// redo obtains a message that went as reconstructible again: a pure
// tool's result by calling the tool again, an assistant message of calls
// to pure tools by those calls. It returns how, or fails.
func (rt *runtime) redo(ctx context.Context, r pruneguard.Record) string {
	m := rt.orig[r.Message]
	if r.Class != pruneguard.Reconstructible {
		rt.fail("%s left the prompt as %s, with no pointer", m.ID, r.Class)
		return ""
	}
	switch {
	case len(m.Answers) == 1 && len(m.Calls) == 0:
		k := rt.calls[m.Answers[0]]
		if !isPure(k.Tool) {
			rt.fail("%s went as reconstructible, but %s is not a pure tool", m.ID, k.Tool)
			return ""
		}
		again, _ := rt.call(ctx, k)
		if k.Tool == spill.RecallToolName {
			rt.recalls-- // not the model's
		}
		if !bytes.Equal(again, m.Content) {
			rt.fail("%s went as reconstructible, but %s%s gives other bytes now", m.ID, k.Tool, k.Args)
			return ""
		}
		return "called " + k.Tool + " again"
	case len(m.Calls) > 0 && len(m.Content) == 0 && len(m.Answers) == 0:
		for _, k := range m.Calls {
			if !isPure(k.Tool) {
				rt.fail("%s went as reconstructible, but calls %s", m.ID, k.Tool)
				return ""
			}
		}
		return "pure calls"
	}
	rt.fail("%s went as reconstructible, but the runtime cannot obtain it again", m.ID)
	return ""
}

// extra is what the pointer text in the prompt takes beyond what the
// Context counts for it (Config.PointerTokens each): the lines in the
// system prompt, and the pointer text in place of a stub. PointerTokens
// is a line's count, so extra is never positive.
func (rt *runtime) extra() int {
	n := 0
	per := rt.c.Config().PointerTokens
	for _, p := range rt.lines {
		n += count.Count([]byte(rt.sp.PointerText(p)+"\n")) - per
	}
	for _, p := range rt.inPlace {
		n += count.Count([]byte(rt.sp.PointerText(p))) - per
	}
	return n
}

// pointerText is what the pointer text in the prompt takes: the lines
// in the system prompt and the pointer text in place of stubs.
func (rt *runtime) pointerText() int {
	n := 0
	for _, p := range rt.lines {
		n += count.Count([]byte(rt.sp.PointerText(p) + "\n"))
	}
	for _, p := range rt.inPlace {
		n += count.Count([]byte(rt.sp.PointerText(p)))
	}
	return n
}

// part is one piece of the prompt the model reads.
type part struct {
	Role pruneguard.Role
	Text string
}

// prompt renders what the model reads at its next call: the system
// prompt with one line per spilled segment, then the messages, each
// stubbed result showing the stub text or, when spilled, its pointer.
func (rt *runtime) prompt() []part {
	var out []part
	for _, m := range rt.c.Messages() {
		text := string(m.Content)
		if p, ok := rt.inPlace[m.ID]; ok {
			text = rt.sp.PointerText(p)
		}
		for _, k := range m.Calls {
			text += fmt.Sprintf("\n<call %s %s>", k.Tool, k.Args)
		}
		if m.Role == pruneguard.RoleSystem && len(rt.lines) > 0 {
			text += "\n\nMoved out of this conversation to save room:"
			for _, p := range rt.lines {
				text += "\n" + rt.sp.PointerText(p)
			}
		}
		out = append(out, part{m.Role, text})
	}
	return out
}

// verify checks, at the end of the session, every message whose content
// ever left the prompt: one that went as reconstructible was obtained
// again when it went (redo); one that went behind a pointer must read
// back from the store, now, identical to what was appended.
func (rt *runtime) verify(ctx context.Context) (reconstructible, spilled int) {
	segs := map[pruneguard.Pointer][]pruneguard.Message{}
	for _, d := range rt.left {
		if d.ptr.IsZero() {
			if d.redo != "" {
				reconstructible++
			}
			continue
		}
		ms, ok := segs[d.ptr]
		if !ok {
			var err error
			ms, err = rt.sp.Recall(ctx, d.ptr)
			if err != nil {
				rt.fail("%s: its pointer does not read back: %v", d.id, err)
				continue
			}
			segs[d.ptr] = ms
		}
		i := slices.IndexFunc(ms, func(m pruneguard.Message) bool { return m.ID == d.id })
		if i < 0 {
			rt.fail("%s: not in the segment its pointer names", d.id)
			continue
		}
		if why := differ(rt.orig[d.id], ms[i]); why != "" {
			rt.fail("%s reads back different: %s", d.id, why)
			continue
		}
		spilled++
	}
	return reconstructible, spilled
}

// differ says how a message read back differs from the message appended,
// or returns "".
func differ(a, b pruneguard.Message) string {
	switch {
	case a.Role != b.Role:
		return "role"
	case !bytes.Equal(a.Content, b.Content):
		return "content"
	case !slices.Equal(a.Answers, b.Answers):
		return "answers"
	case a.Facts != b.Facts:
		return "facts"
	case len(a.Calls) != len(b.Calls):
		return "calls"
	}
	for i := range a.Calls {
		x, y := a.Calls[i], b.Calls[i]
		if x.ID != y.ID || x.Tool != y.Tool || !bytes.Equal(x.Args, y.Args) {
			return "call " + string(x.ID)
		}
	}
	return ""
}

func (rt *runtime) printf(format string, args ...any) {
	rt.w.printf("%s", rt.names.Replace(fmt.Sprintf(format, args...)))
}

func (rt *runtime) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	rt.failures = append(rt.failures, msg)
	rt.printf("FAILED: %s", msg)
}

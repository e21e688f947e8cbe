package pruneguard

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
)

// The reference model of the propHarness: a naive transcript kept beside
// the Context, updated by each event the harness sends, and compared with
// the Context after every step.

type smsg struct {
	m       Message // the reference copy: what the Context should hold
	open    bool
	present bool
	stubbed bool
	seq     int
	calls   []*scall
}

type scall struct {
	id        CallID
	tool      string
	args      json.RawMessage
	caller    *smsg
	result    *smsg
	done      bool
	gone      bool
	server    bool // run by the provider, answered in its caller
	abandoned bool
}

func modelErr(format string, args ...any) error {
	return &invariantError{Kind: kindModel, Msg: fmt.Sprintf(format, args...)}
}

func (h *propHarness) find(id MessageID) MessageID {
	p, ok := h.parent[id]
	if !ok || p == id {
		return id
	}
	r := h.find(p)
	h.parent[id] = r
	return r
}

func (h *propHarness) union(a, b MessageID) {
	ra, rb := h.find(a), h.find(b)
	if ra != rb {
		h.parent[rb] = ra
	}
}

func (h *propHarness) present() []*smsg {
	var out []*smsg
	for _, x := range h.msgs {
		if x.present {
			out = append(out, x)
		}
	}
	return out
}

// unanswered lists the calls that wait for a result, in call order.
func (h *propHarness) unanswered() []*scall {
	var out []*scall
	for _, x := range h.msgs {
		if !x.present {
			continue
		}
		for _, k := range x.calls {
			if !k.done && !k.gone && k.result == nil {
				out = append(out, k)
			}
		}
	}
	return out
}

// predictAdd says which input error Append or Open must return, or nil.
func (h *propHarness) predictAdd(m Message, open bool) error {
	if m.ID == "" {
		return ErrEmptyID
	}
	if _, dup := h.byID[m.ID]; dup {
		return ErrDuplicateMessage
	}
	if m.Tokens < 0 {
		return ErrNegativeTokens
	}
	seen := map[CallID]bool{}
	for _, k := range m.Calls {
		if k.ID == "" {
			return ErrEmptyID
		}
		if h.busy(k.ID) || seen[k.ID] {
			return ErrDuplicateCall
		}
		seen[k.ID] = true
	}
	ans := map[CallID]bool{}
	for _, id := range m.Answers {
		if ans[id] {
			return ErrDuplicateResult
		}
		ans[id] = true
		k := h.calls[id]
		if k != nil && !k.done && !k.gone {
			if k.result != nil {
				return ErrDuplicateResult
			}
			continue
		}
		switch {
		case seen[id]:
			return ErrUnknownCall
		case k == nil:
			return ErrUnknownCall
		case k.gone && h.goneAb[id], !k.gone && k.abandoned:
			return ErrAbandonedCall
		case k.gone:
			return ErrPrunedCall
		default:
			return ErrDuplicateResult
		}
	}
	if open && m.Pointer != (Pointer{}) {
		return ErrOpenMessage
	}
	return nil
}

func (h *propHarness) busy(id CallID) bool {
	k := h.calls[id]
	return k != nil && !k.done && !k.gone
}

// event sends one event. want is the input error it must fail with, or
// nil; ok updates the reference model after a success.
func (h *propHarness) event(name string, want error, do func() error, ok func()) error {
	h.logf("%s (want %v)", name, want)
	before := capture(h.c)
	err := do()
	if want != nil {
		if err == nil {
			return modelErr("%s succeeded, want %v", name, want)
		}
		if !errors.Is(err, ErrInvalidInput) || !errors.Is(err, want) {
			return modelErr("%s: got %v, want %v matching ErrInvalidInput", name, err, want)
		}
		if d := diffState(before, capture(h.c)); d != nil {
			return modelErr("failed %s changed the context: %v", name, d)
		}
		return nil
	}
	if err != nil {
		return modelErr("%s: unexpected error %v", name, err)
	}
	ok()
	return h.consistent()
}

func (h *propHarness) add(m Message, open bool) error {
	op := "append"
	if open {
		op = "open"
	}
	name := fmt.Sprintf("%s %s role=%s tok=%d calls=%v answers=%v facts=%b class=%v pin=%v ptr=%v requires=%v error=%v", op, m.ID, m.Role, m.Tokens, m.Calls, m.Answers, m.Facts, m.Class, m.Pinned, m.Pointer, m.Requires, m.IsError)
	return h.event(name, h.predictAdd(m, open), func() error {
		if open {
			return h.c.Open(m)
		}
		return h.c.Append(m)
	}, func() {
		x := &smsg{m: m, open: open, present: true, seq: len(h.msgs)}
		x.m.Content = slices.Clone(m.Content)
		x.m.Calls = slices.Clone(m.Calls)
		x.m.Answers = slices.Clone(m.Answers)
		h.msgs = append(h.msgs, x)
		h.byID[m.ID] = x
		for _, id := range m.Answers {
			k := h.calls[id]
			k.result = x
			k.done = !open
			h.union(k.caller.m.ID, m.ID)
			h.rec.CallerOf[callKey{m.ID, id}] = k.caller.m.ID
			h.rec.ResultOf[callKey{k.caller.m.ID, id}] = m.ID
		}
		for _, k := range m.Calls {
			h.addCall(x, k)
		}
		h.rec.Facts[m.ID] = m.Facts
		h.rec.Class[m.ID] = m.Class
		h.rec.Pointer[m.ID] = m.Pointer
		if len(m.Requires) > 0 {
			h.rec.Requires[m.ID] = slices.Clone(m.Requires)
			for _, name := range m.Requires {
				h.known[name] = true
			}
		}
		h.rec.Original[m.ID] = slices.Clone(m.Content)
		h.rec.Seq[m.ID] = x.seq
		h.modelWrote(x)
		if m.Pointer != (Pointer{}) {
			h.store(m.Pointer, m.ID, m.Content)
		}
		if !open {
			h.expectRefetches(x)
		}
	})
}

// modelWrote moves the read horizon past message x when it is the
// model's: of role assistant or reasoning, or making calls and answering
// none.
func (h *propHarness) modelWrote(x *smsg) {
	m := x.m
	if (m.Role == RoleAssistant || m.Role == RoleReasoning || len(m.Calls) > 0 && len(m.Answers) == 0) && x.seq >= h.rec.ReadTo {
		h.rec.ReadTo = x.seq + 1
	}
}

// store records what a scratch pointer holds for a message.
func (h *propHarness) store(p Pointer, id MessageID, content []byte) {
	if h.stored[p] == nil {
		h.stored[p] = map[MessageID][]byte{}
	}
	h.stored[p][id] = slices.Clone(content)
}

func (h *propHarness) addCall(x *smsg, k Call) {
	sc := &scall{id: k.ID, tool: k.Tool, args: k.Args, caller: x, server: k.Server, done: k.Server}
	x.calls = append(x.calls, sc)
	h.calls[k.ID] = sc
	h.known[k.Tool] = true
	h.rec.CallTool[callKey{x.m.ID, k.ID}] = k.Tool
	h.rec.Calls = append(h.rec.Calls, callKey{x.m.ID, k.ID})
}

func (h *propHarness) write(id MessageID, chunk []byte, tokens int) error {
	var want error
	x := h.byID[id]
	switch {
	case x == nil:
		want = ErrUnknownMessage
	case !x.open:
		want = ErrClosedMessage
	case tokens < 0:
		want = ErrNegativeTokens
	}
	return h.event(fmt.Sprintf("write %s %q %d", id, chunk, tokens), want, func() error {
		return h.c.Write(id, chunk, tokens)
	}, func() {
		x.m.Content = append(x.m.Content, chunk...)
		x.m.Tokens += tokens
		h.rec.Original[id] = append(h.rec.Original[id], chunk...)
	})
}

func (h *propHarness) close(id MessageID, calls []Call) error {
	var want error
	x := h.byID[id]
	switch {
	case x == nil:
		want = ErrUnknownMessage
	case !x.open:
		want = ErrClosedMessage
	default:
		seen := map[CallID]bool{}
		for _, k := range calls {
			if k.ID == "" {
				want = ErrEmptyID
				break
			}
			if h.busy(k.ID) || seen[k.ID] || slices.ContainsFunc(x.m.Calls, func(c Call) bool { return c.ID == k.ID }) {
				want = ErrDuplicateCall
				break
			}
			seen[k.ID] = true
		}
	}
	return h.event(fmt.Sprintf("close %s %v", id, calls), want, func() error {
		return h.c.Close(id, calls...)
	}, func() {
		x.open = false
		for _, k := range calls {
			x.m.Calls = append(x.m.Calls, k)
			h.addCall(x, k)
		}
		h.modelWrote(x)
		for _, k := range h.calls {
			if k.result == x {
				k.done = true
			}
		}
		// Older calls of reused ids are no longer in h.calls.
		for _, y := range h.msgs {
			for _, k := range y.calls {
				if k.result == x {
					k.done = true
				}
			}
		}
		h.expectRefetches(x)
	})
}

func (h *propHarness) couple(ids []MessageID) error {
	var want error
	for _, id := range ids {
		if h.byID[id] == nil {
			want = ErrUnknownMessage
			break
		}
	}
	return h.event(fmt.Sprintf("couple %v", ids), want, func() error { return h.c.Couple(ids...) }, func() {
		for _, id := range ids[min(1, len(ids)):] {
			h.union(ids[0], id)
		}
	})
}

func (h *propHarness) pin(id MessageID) error {
	var want error
	if h.byID[id] == nil {
		want = ErrUnknownMessage
	}
	return h.event("pin "+string(id), want, func() error { return h.c.Pin(id) }, func() { h.byID[id].m.Pinned = true })
}

func (h *propHarness) mark(id MessageID, f Facts) error {
	var want error
	if h.byID[id] == nil {
		want = ErrUnknownMessage
	}
	return h.event(fmt.Sprintf("mark %s %b", id, f), want, func() error { return h.c.Mark(id, f) }, func() {
		h.byID[id].m.Facts |= f
		h.rec.Facts[id] |= f
	})
}

func (h *propHarness) spill(id MessageID, p Pointer) error {
	var want error
	switch x := h.byID[id]; {
	case x == nil:
		want = ErrUnknownMessage
	case x.open && h.looseSpill:
		// A Context that took pointers on streaming messages.
		h.logf("spill %s %v while it streams", id, p)
		h.c.mu.Lock()
		q, _ := h.c.find(id)
		h.c.side(q).pointer = p
		h.c.mu.Unlock()
		x.m.Pointer = p
		h.rec.Pointer[id] = p
		h.store(p, id, x.m.Content)
		return nil
	case x.open:
		want = ErrOpenMessage
	}
	return h.event(fmt.Sprintf("spill %s %v", id, p), want, func() error { return h.c.Spill(id, p) }, func() {
		h.repoint(h.byID[id], p)
		h.rec.Pointer[id] = p
		if p != (Pointer{}) {
			h.store(p, id, h.byID[id].m.Content)
		}
	})
}

// spillStore spills messages through the harness's Spiller. It fails,
// changing nothing, when one of them is still streaming or the store
// failed a write; otherwise every message carries the new pointer.
func (h *propHarness) spillStore(ids []MessageID) error {
	if h.spiller == nil || len(ids) == 0 {
		return nil
	}
	open := false
	for _, id := range ids {
		open = open || h.byID[id].open
	}
	name := fmt.Sprintf("spill through the store %v", ids)
	h.logf("%s (open %v)", name, open)
	before := capture(h.c)
	p, err := h.spiller.Spill(h.c, ids...)
	failed := h.spiller.Failed()
	switch {
	case open && !errors.Is(err, ErrOpenMessage):
		return modelErr("%s: got %v, want ErrOpenMessage", name, err)
	case !open && failed && err == nil:
		return modelErr("%s: the store failed a write, but the spill succeeded", name)
	case !open && !failed && err != nil:
		return modelErr("%s: unexpected error %v", name, err)
	case err != nil:
		if failed {
			h.storeFails++
		}
		if d := diffState(before, capture(h.c)); d != nil {
			return modelErr("failed %s changed the context: %v", name, d)
		}
		h.logf("  failed: %v", err)
		return nil
	}
	h.logf("  pointer %v", p)
	h.spills++
	h.spilled = append(h.spilled, p)
	for _, id := range ids {
		h.repoint(h.byID[id], p)
		h.rec.Pointer[id] = p
	}
	return h.consistent()
}

// stubTokens is what message x counts once stubbed: PointerTokens when
// it carries a pointer and PointerTokens is set, the stub's otherwise.
func (h *propHarness) stubTokens(x *smsg) int {
	if n := h.c.cfg.PointerTokens; n > 0 && x.m.Pointer != (Pointer{}) {
		return n
	}
	_, n := h.c.cfg.stub()
	return n
}

// repoint gives message x pointer p: a stubbed message's count follows.
func (h *propHarness) repoint(x *smsg, p Pointer) {
	was := h.stubTokens(x)
	x.m.Pointer = p
	if x.stubbed {
		x.m.Tokens += h.stubTokens(x) - was
	}
}

// newLines returns the pointers of the messages ids that have no line
// yet, each once, with Config.PointerTokens set.
func (h *propHarness) newLines(ids []MessageID) []Pointer {
	var out []Pointer
	if h.c.cfg.PointerTokens <= 0 {
		return nil
	}
	for _, id := range ids {
		if p := h.byID[id].m.Pointer; p != (Pointer{}) && !h.lines[p] && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// abandon gives up calls; the harness predicts the error.
func (h *propHarness) abandon(ids []CallID) error {
	if len(ids) == 0 {
		return nil
	}
	var want error
	seen := map[CallID]bool{}
	for _, id := range ids {
		k := h.calls[id]
		switch {
		case id == "":
			want = ErrEmptyID
		case k == nil:
			want = ErrUnknownCall
		case k.gone && h.goneAb[id]:
			want = ErrAbandonedCall
		case k.gone:
			want = ErrPrunedCall
		case seen[id] || k.abandoned:
			want = ErrAbandonedCall
		case k.done:
			want = ErrAnsweredCall
		case k.result != nil:
			want = ErrOpenMessage
		}
		if want != nil {
			break
		}
		seen[id] = true
	}
	return h.event(fmt.Sprintf("abandon %v", ids), want, func() error { return h.c.Abandon(ids...) }, func() {
		h.abandons++
		for _, id := range ids {
			k := h.calls[id]
			k.done, k.abandoned = true, true
			h.rec.Abandoned[callKey{k.caller.m.ID, id}] = true
		}
	})
}

func (h *propHarness) planStep(step StepID, ids []MessageID) error {
	var want error
	if step == "" {
		want = ErrEmptyID
	} else {
		for _, id := range ids {
			if h.byID[id] == nil {
				want = ErrUnknownMessage
				break
			}
		}
	}
	return h.event(fmt.Sprintf("plan step %s %v", step, ids), want, func() error { return h.c.PlanStep(step, ids...) }, func() {
		h.steps[step] = append(h.steps[step], ids...)
		for _, id := range ids {
			h.rec.Refs[id]++
		}
	})
}

func (h *propHarness) completeStep(step StepID) error {
	var want error
	if _, ok := h.steps[step]; !ok {
		want = ErrUnknownStep
	}
	return h.event("complete step "+string(step), want, func() error { return h.c.CompleteStep(step) }, func() {
		for _, id := range h.steps[step] {
			h.rec.Refs[id]--
		}
		delete(h.steps, step)
	})
}

func (h *propHarness) seal(b bool) error {
	return h.event(fmt.Sprintf("seal %v", b), nil, func() error { h.c.SealSteps(b); return nil }, func() { h.rec.Sealed = b })
}

func (h *propHarness) register(t Tool) error {
	var want error
	switch {
	case t.Name == "":
		want = ErrEmptyID
	case len(t.Schema) > 0 && !json.Valid(t.Schema):
		want = ErrBadSchema
	}
	name := fmt.Sprintf("register %s v=%q schema=%s ann=%s out=%v notomb=%v", t.Name, t.Version, t.Schema, annString(t.Annotations), t.Output, t.NoTombstone)
	return h.event(name, want, func() error { return h.c.RegisterTool(t) }, func() {
		h.rec.Tools[t.Name] = t
		h.known[t.Name] = true
	})
}

func annString(a Annotations) string {
	f := func(p *bool) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("ro=%s de=%s id=%s ow=%s", f(a.ReadOnlyHint), f(a.DestructiveHint), f(a.IdempotentHint), f(a.OpenWorldHint))
}

func (h *propHarness) request(name string) error {
	var want error
	if !h.known[name] {
		want = ErrUnknownTool
	}
	return h.event("request tool "+name, want, func() error { _, err := h.c.RequestTool(name); return err }, func() {})
}

// prunedModel is what the model remembers of a pruned result.
type prunedModel struct {
	class   Class
	hash    [16]byte
	msg     MessageID
	stubbed bool
}

// modelSig is the model's signature of a call: the tool, and the
// arguments decoded and encoded again (which sorts the keys of objects),
// or as given when they are not JSON.
func modelSig(tool string, args json.RawMessage) string {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return tool + "\x01" + string(args)
	}
	b, _ := json.Marshal(v)
	return tool + "\x00" + string(b)
}

func modelHash(b []byte) [16]byte {
	s := sha256.Sum256(b)
	return [16]byte(s[:16])
}

// resultCalls lists the calls whose results message x carries: the calls
// it answers, in the order of its Answers, then its own server calls.
func (h *propHarness) resultCalls(x *smsg) []*scall {
	var out []*scall
	for _, id := range x.m.Answers {
		var k *scall
		for _, y := range h.msgs {
			for _, sc := range y.calls {
				if sc.id == id && sc.result == x {
					k = sc
				}
			}
		}
		if k != nil {
			out = append(out, k)
		}
	}
	for _, sc := range x.calls {
		if sc.server {
			out = append(out, sc)
		}
	}
	return out
}

// carriesResult reports whether message m holds a tool's result: it
// answers a call or carries a server call.
func carriesResult(m Message) bool {
	return len(m.Answers) > 0 || slices.ContainsFunc(m.Calls, func(k Call) bool { return k.Server })
}

// remember records, after an applied decision, the results it evicted or
// stubbed, with their content before the decision: the results of the
// calls a message answers, and of the server calls it carries.
func (h *propHarness) remember(x *smsg, content []byte, stubbed bool) {
	for _, k := range h.resultCalls(x) {
		key := modelSig(k.tool, k.args)
		cls := h.rec.class(x.m)
		if old, ok := h.pruned[key]; ok {
			cls = max(cls, old.class)
		}
		h.pruned[key] = prunedModel{class: cls, hash: modelHash(content), msg: x.m.ID, stubbed: stubbed}
	}
}

// expectRefetches predicts the alerts of result x, which has just closed:
// for the calls it answers, then for the server calls it carries.
func (h *propHarness) expectRefetches(x *smsg) {
	for _, k := range h.resultCalls(x) {
		key := modelSig(k.tool, k.args)
		was, ok := h.pruned[key]
		if !ok {
			continue
		}
		delete(h.pruned, key)
		held := false
		for _, y := range h.present() {
			for _, sc := range y.calls {
				r := sc.result
				if sc.server {
					r = sc.caller
				}
				if sc != k && sc.tool == k.tool && sc.done && r != nil && r != x && r.present && !r.stubbed && !r.open &&
					modelSig(sc.tool, sc.args) == key {
					held = true
				}
			}
		}
		if held {
			continue
		}
		now := modelHash(x.m.Content)
		h.refetches++
		h.alerts = append(h.alerts, RefetchAlert{Tool: k.tool, Call: k.id, Result: x.m.ID, Pruned: was.msg, Stubbed: was.stubbed,
			Class: was.class, Match: now == was.hash, Was: was.hash, Now: now})
	}
}

func (h *propHarness) report(id CallID, fields []string) error {
	var want error
	if k := h.calls[id]; k == nil || k.gone {
		// The Context holds no call with the id once the latest call
		// with it was pruned, though an older one may still be in the
		// prompt.
		want = ErrUnknownCall
	}
	return h.event(fmt.Sprintf("report validation error %s %v", id, fields), want, func() error {
		return h.c.ReportValidationError(id, fields...)
	}, func() {})
}

// consistent compares the Context with the reference model.
func (h *propHarness) consistent() error {
	if h.invariantsOnly {
		return nil
	}
	if got := h.c.TakeAlerts(); !reflect.DeepEqual(got, h.alerts) {
		return modelErr("refetch alerts:\ncontext %+v\nmodel   %+v", got, h.alerts)
	}
	h.alerts = nil
	s := capture(h.c)
	want := h.present()
	if len(s.Messages) != len(want) {
		return modelErr("context holds %d messages, model %d", len(s.Messages), len(want))
	}
	total := 0
	for i, m := range s.Messages {
		w := want[i].m
		if m.ID != w.ID || m.Role != w.Role || m.Tokens != w.Tokens || !bytes.Equal(m.Content, w.Content) ||
			!reflect.DeepEqual(normCalls(m.Calls), normCalls(w.Calls)) || !slices.Equal(m.Answers, w.Answers) ||
			m.Pinned != w.Pinned || m.Class != w.Class || m.Facts != w.Facts || m.Pointer != w.Pointer {
			return modelErr("message %d differs:\ncontext %+v\nmodel   %+v", i, m, w)
		}
		total += m.Tokens
		if k, _ := h.c.ClassOf(m.ID); k != h.rec.class(m) {
			return modelErr("class of %s: context %v, model %v", m.ID, k, h.rec.class(m))
		}
	}
	if lines := len(h.lines) * h.c.cfg.PointerTokens; s.Tokens != total+lines {
		return modelErr("Tokens() = %d, sum of messages %d and pointer lines %d", s.Tokens, total, lines)
	}
	var open []MessageID
	var pending []CallID
	for _, x := range want {
		if x.open {
			open = append(open, x.m.ID)
		}
		for _, k := range x.calls {
			if !k.done {
				pending = append(pending, k.id)
			}
		}
	}
	if !slices.Equal(s.Open, open) {
		return modelErr("open messages: context %v, model %v", s.Open, open)
	}
	var unread []MessageID
	for _, x := range want {
		if h.rec.unread(x.m.ID) {
			unread = append(unread, x.m.ID)
		}
	}
	if !slices.Equal(s.Unread, unread) {
		return modelErr("unread messages: context %v, model %v", s.Unread, unread)
	}
	if !slices.Equal(s.Pending, pending) {
		return modelErr("pending calls: context %v, model %v", s.Pending, pending)
	}
	// Units, as the model groups them.
	var units []Unit
	idx := map[MessageID]int{}
	for _, x := range want {
		rep := h.find(x.m.ID)
		i, ok := idx[rep]
		if !ok {
			i = len(units)
			idx[rep] = i
			units = append(units, Unit{ID: UnitID(x.m.ID)})
		}
		u := &units[i]
		u.Messages = append(u.Messages, x.m.ID)
		u.Tokens += x.m.Tokens
		u.Open = u.Open || x.open
		u.Pinned = u.Pinned || x.m.Pinned
		u.Unread = u.Unread || h.rec.unread(x.m.ID)
		for _, k := range x.calls {
			if !k.done {
				u.Pending = append(u.Pending, k.id)
			}
		}
	}
	if !reflect.DeepEqual(s.Units, units) {
		return modelErr("units:\ncontext %+v\nmodel   %+v", s.Units, units)
	}
	args := map[string]int{}
	for _, x := range want {
		for _, k := range x.m.Calls {
			if !k.Server {
				args[k.Tool]++
			}
		}
	}
	for _, t := range s.Tools {
		if !h.known[t.Tool.Name] {
			return modelErr("unknown tool %s in the registry", t.Tool.Name)
		}
		if t.Args != args[t.Tool.Name] {
			return modelErr("tool %s: Args = %d, model %d", t.Tool.Name, t.Args, args[t.Tool.Name])
		}
	}
	if len(s.Tools) != len(h.known) {
		return modelErr("registry holds %d tools, model %d", len(s.Tools), len(h.known))
	}
	return nil
}

func normCalls(cs []Call) []Call {
	out := make([]Call, len(cs))
	for i, c := range cs {
		out[i] = Call{ID: c.ID, Tool: c.Tool, Server: c.Server}
	}
	return out
}

// planFault says whether a plan names what the Context does not hold.
func (h *propHarness) planFault(p Plan) bool {
	for _, id := range p.Evict {
		if h.byID[id] == nil {
			return true
		}
	}
	for _, id := range p.Stub {
		if x := h.byID[id]; x == nil || len(x.m.Answers) == 0 {
			return true
		}
	}
	for _, name := range p.DropSchemas {
		if _, ok := h.rec.Tools[name]; !ok {
			return true
		}
	}
	for name, s := range p.CompressSchemas {
		t, ok := h.rec.Tools[name]
		if !ok || !json.Valid(t.Schema) || !json.Valid(s) {
			return true
		}
	}
	return false
}

func (h *propHarness) settled() bool {
	for _, x := range h.present() {
		if x.open {
			return false
		}
		for _, k := range x.calls {
			if !k.done {
				return false
			}
		}
	}
	return true
}

// unitMembers lists the present members of the unit holding id.
func (h *propHarness) unitMembers(id MessageID) []*smsg {
	rep := h.find(id)
	var out []*smsg
	for _, x := range h.present() {
		if h.find(x.m.ID) == rep {
			out = append(out, x)
		}
	}
	return out
}

package policytest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"

	"github.com/pruneguard/pruneguard"
)

// One ask: a policy's plan for one Context and need, checked against
// the Context as the policy saw it.

// run asks policies about the scenario's Context at each need, then
// behind a guard.
func (sc scenario) run(newPolicy func() pruneguard.Policy) []*Finding {
	// Asks change nothing in a Context: two builds serve every need.
	var b [2]built
	for i := range b {
		b[i].c, b[i].hide = sc.build()
	}
	c, l := b[0].c, layoutOf(b[0].c)
	var out []*Finding
	for _, need := range needs(c) {
		out = append(out, sc.ask(newPolicy, b, l, need)...)
	}
	if !sc.zeroView && c.Len() > 0 {
		out = append(out, sc.underGuard(newPolicy)...)
	}
	return out
}

// needs are the needs a policy is asked for: one token, an eighth of the
// Context, and more than it holds.
func needs(c *pruneguard.Context) []int {
	n := c.Tokens()
	return []int{1, max(2, n/8), 2*n + 100}
}

// view makes the View a policy is handed for c, hiding units.
func (sc scenario) view(c *pruneguard.Context, hide []pruneguard.UnitID) *pruneguard.View {
	if sc.zeroView {
		return &pruneguard.View{}
	}
	v := c.View()
	v.Hide(hide...)
	return v
}

// built is one build of a scenario.
type built struct {
	c    *pruneguard.Context
	hide []pruneguard.UnitID
}

// ask asks a policy for need about the first build of the scenario,
// laid out in l, checks the plan, and asks again, and a new policy about the second
// build, to see that the plan does not change.
func (sc scenario) ask(newPolicy func() pruneguard.Policy, b [2]built, l *layout, need int) []*Finding {
	r := &report{name: sc.name, need: need}
	c, hide := b[0].c, b[0].hide
	pol := newPolicy()
	v := sc.view(c, hide)
	kept, keeps, ok := r.kept(pol, v)
	if !ok {
		return r.out
	}
	p, ok := r.propose(pol, v, need)
	if !ok {
		return r.out
	}
	x := withLayout(l)
	r.plan(x, v, p, kept, keeps)
	r.warnings(x, v, p, kept, keeps)

	// The same policy asked again, and a new one asked about an equal
	// Context, with Views hiding the same units.
	again, ok := r.propose(pol, sc.view(c, hide), need)
	if !ok {
		return r.out
	}
	other, ok := r.propose(newPolicy(), sc.view(b[1].c, b[1].hide), need)
	if !ok {
		return r.out
	}
	for _, q := range []struct {
		who  string
		plan pruneguard.Plan
	}{{"the same policy asked again", again}, {"a new policy asked about an equal Context", other}} {
		if d := differ(p, q.plan); d != "" {
			r.add(ErrUnstable, false, nil, "%s proposed another plan: %s", q.who, d)
		}
	}
	return r.out
}

// report gathers the findings of one ask.
type report struct {
	name string
	need int
	out  []*Finding
}

func (r *report) add(err error, warning bool, ids []pruneguard.MessageID, format string, args ...any) {
	r.out = append(r.out, &Finding{Case: r.name, Need: r.need, Err: err, Warning: warning, Messages: ids, Detail: fmt.Sprintf(format, args...)})
}

// kept calls Kept if pol is a Keeper, recovering a panic.
func (r *report) kept(pol pruneguard.Policy, v *pruneguard.View) (id pruneguard.MessageID, keeps, ok bool) {
	k, is := pol.(pruneguard.Keeper)
	if !is {
		return "", false, true
	}
	defer func() {
		if e := recover(); e != nil {
			r.add(ErrPanic, false, nil, "Kept: %v", e)
			ok = false
		}
	}()
	id, keeps = k.Kept(v)
	return id, keeps, true
}

// propose calls Propose, recovering a panic.
func (r *report) propose(pol pruneguard.Policy, v *pruneguard.View, need int) (p pruneguard.Plan, ok bool) {
	defer func() {
		if e := recover(); e != nil {
			r.add(ErrPanic, false, nil, "Propose: %v", e)
			ok = false
		}
	}()
	return pol.Propose(v, need), true
}

// index is the Context as the suite reads it: every message's place
// and description, the results a View hiding nothing offers to stub, and
// the units the plan names.
type index struct {
	*layout
	units map[pruneguard.MessageID]pruneguard.Unit // by message named
}

// layout is what an index reads once of a Context that does not change.
type layout struct {
	c     *pruneguard.Context
	pos   map[pruneguard.MessageID]int
	entry []pruneguard.Entry
	// anyWhole: the results a View hiding nothing offers to stub.
	anyWhole func() map[pruneguard.MessageID]bool
}

func newIndex(c *pruneguard.Context) *index { return withLayout(layoutOf(c)) }

func withLayout(l *layout) *index {
	return &index{layout: l, units: map[pruneguard.MessageID]pruneguard.Unit{}}
}

func layoutOf(c *pruneguard.Context) *layout {
	es := c.Snapshot()
	l := &layout{c: c, entry: es, pos: make(map[pruneguard.MessageID]int, len(es))}
	for i, e := range es {
		l.pos[e.ID] = i
	}
	l.anyWhole = sync.OnceValue(func() map[pruneguard.MessageID]bool {
		whole := map[pruneguard.MessageID]bool{}
		for w := range c.View().WholeResults() {
			whole[w.ID] = true
		}
		return whole
	})
	return l
}

// unit describes the unit of message id, which the Context holds.
func (x *index) unit(id pruneguard.MessageID) pruneguard.Unit {
	u, ok := x.units[id]
	if !ok {
		u, _ = x.c.UnitOf(id)
		for _, m := range u.Messages {
			x.units[m] = u
		}
	}
	return u
}

// last returns the place of the unit's newest message.
func (x *index) last(u pruneguard.Unit) int {
	n := -1
	for _, m := range u.Messages {
		n = max(n, x.pos[m])
	}
	return n
}

// faults gathers the messages at fault for each check, once each.
type faults map[error][]pruneguard.MessageID

func (f faults) add(err error, id pruneguard.MessageID) {
	if !slices.Contains(f[err], id) {
		f[err] = append(f[err], id)
	}
}

// The requirements a plan's names are checked for, in the order they
// are reported.
var order = []error{ErrUnknown, ErrNotResult, ErrStubbed, ErrPinned, ErrInFlight, ErrUnread, ErrHidden, ErrKept}

// messages says how many messages n is.
func messages(n int) string {
	if n == 1 {
		return "1 message"
	}
	return fmt.Sprintf("%d messages", n)
}

// plan checks what p names against the Context, the View as the policy
// left it, and what the policy keeps.
func (r *report) plan(x *index, v *pruneguard.View, p pruneguard.Plan, kept pruneguard.MessageID, keeps bool) {
	n := &names{x: x, v: v, f: faults{}}
	n.keptAt, n.keeps = x.pos[kept]
	if keeps && !n.keeps {
		r.add(ErrKept, false, []pruneguard.MessageID{kept}, "Kept names a message the Context does not hold")
	}
	n.keeps = n.keeps && keeps
	for _, id := range p.Evict {
		n.evicted(id)
	}
	if p.Summary != nil {
		for _, id := range p.Summary.Replace {
			n.evicted(id)
		}
	}
	for _, id := range p.Stub {
		n.stubbed(id)
	}
	for _, err := range order {
		if ids := n.f[err]; len(ids) > 0 {
			r.add(err, false, ids, "%s", messages(len(ids)))
		}
	}
	if ids := n.f[ErrStubRefused]; len(ids) > 0 {
		r.add(ErrStubRefused, true, ids, "%s", messages(len(ids)))
	}
	if len(n.f[ErrUnknown]) == 0 && len(n.f[ErrNotResult]) == 0 {
		// What the suite does not look at itself: tools, schemas, the
		// form of a summary.
		if _, err := x.c.Prune(p); isInput(err) {
			r.add(ErrUnknown, false, nil, "Prune: %v", err)
		}
	}
}

// names checks the messages a plan names, one by one.
type names struct {
	x      *index
	v      *pruneguard.View
	f      faults
	keeps  bool // the policy keeps the message at keptAt and later ones
	keptAt int
	// whole: the results the View offers to stub, once a stub asks.
	whole map[pruneguard.MessageID]bool
}

// offered reports whether the walk of whole results of the View yields
// result id, and whether that of a View hiding nothing does: those a
// guard remembers as refused a stub are passed over by both.
func (n *names) offered(id pruneguard.MessageID) (here, anywhere bool) {
	if n.whole == nil {
		n.whole = map[pruneguard.MessageID]bool{}
		for w := range n.v.WholeResults() {
			n.whole[w.ID] = true
		}
	}
	return n.whole[id], n.x.anyWhole()[id]
}

// unit checks the unit of message id, which the plan names.
func (n *names) unit(id pruneguard.MessageID, u pruneguard.Unit) {
	switch {
	case u.Pinned:
		n.f.add(ErrPinned, id)
	case u.Open || len(u.Pending) > 0:
		n.f.add(ErrInFlight, id)
	case u.Unread:
		n.f.add(ErrUnread, id)
	}
}

// evicted checks a message the plan evicts, or replaces by a summary.
func (n *names) evicted(id pruneguard.MessageID) {
	if _, ok := n.x.pos[id]; !ok {
		n.f.add(ErrUnknown, id)
		return
	}
	u := n.x.unit(id)
	n.unit(id, u)
	if n.v.Hidden(u.ID) {
		n.f.add(ErrHidden, id)
	}
	if n.keeps && n.x.last(u) >= n.keptAt {
		n.f.add(ErrKept, id)
	}
}

// stubbed checks a result the plan stubs.
func (n *names) stubbed(id pruneguard.MessageID) {
	at, ok := n.x.pos[id]
	if !ok {
		n.f.add(ErrUnknown, id)
		return
	}
	e := n.x.entry[at]
	if !e.Result {
		n.f.add(ErrNotResult, id)
		return
	}
	n.unit(id, n.x.unit(id))
	here, anywhere := n.offered(id)
	switch {
	case e.Stubbed:
		n.f.add(ErrStubbed, id)
	case !anywhere:
		n.f.add(ErrStubRefused, id)
	case !here:
		n.f.add(ErrHidden, id)
	}
	if n.keeps && at >= n.keptAt {
		n.f.add(ErrKept, id)
	}
}

// warnings checks the plan for what is safe but could be better: an
// empty plan while something may go, a plan that goes on past the need.
func (r *report) warnings(x *index, v *pruneguard.View, p pruneguard.Plan, kept pruneguard.MessageID, keeps bool) {
	keptAt, held := x.pos[kept]
	keeps = keeps && held
	if p.Empty() {
		for e := range v.WholeResults() {
			u, ok := v.Unit(e.Unit)
			if !ok || e.Tokens <= pruneguard.DefaultStubTokens || !mayGo(u) || v.Hidden(u.ID) || keeps && x.last(u) >= keptAt {
				continue
			}
			r.add(ErrIdle, true, []pruneguard.MessageID{e.ID}, "the plan is empty, and the View offers the result named here, %d tokens, whose unit may go", e.Tokens)
			break
		}
		return
	}
	freed, largest := proposed(x, p)
	if freed-largest >= r.need {
		r.add(ErrOvershoot, true, nil, "the plan proposes %d tokens, and %d without its largest proposal (%d)", freed, freed-largest, largest)
	}
}

// mayGo reports whether a policy may propose unit u.
func mayGo(u pruneguard.Unit) bool {
	return !u.Pinned && !u.Open && !u.Unread && len(u.Pending) == 0
}

// proposed returns what p proposes to free, and its largest proposal: a
// unit it evicts (or summarizes), or a result it stubs less a default
// stub's size. Messages the Context does not hold count nothing.
func proposed(x *index, p pruneguard.Plan) (freed, largest int) {
	seen := map[pruneguard.UnitID]bool{}
	count := func(n int) {
		freed += n
		largest = max(largest, n)
	}
	evict := slices.Clone(p.Evict)
	if p.Summary != nil {
		evict = append(evict, p.Summary.Replace...)
	}
	for _, id := range evict {
		if _, ok := x.pos[id]; !ok {
			continue
		}
		if u := x.unit(id); !seen[u.ID] {
			seen[u.ID] = true
			count(u.Tokens)
		}
	}
	if p.Summary != nil {
		freed -= p.Summary.Tokens
	}
	for _, id := range p.Stub {
		if at, ok := x.pos[id]; ok && !seen[x.unit(id).ID] {
			count(max(0, x.entry[at].Tokens-pruneguard.DefaultStubTokens))
		}
	}
	return freed, largest
}

// differ describes how plans p and q differ, if they do, as a guard
// would take them: the order of the names does not count.
func differ(p, q pruneguard.Plan) string {
	if d := differIDs("evicts", p.Evict, q.Evict); d != "" {
		return d
	}
	if d := differIDs("stubs", p.Stub, q.Stub); d != "" {
		return d
	}
	switch {
	case !slices.Equal(slices.Sorted(slices.Values(p.DropSchemas)), slices.Sorted(slices.Values(q.DropSchemas))):
		return "it drops other schemas"
	case !maps.EqualFunc(p.CompressSchemas, q.CompressSchemas, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }):
		return "it compresses other schemas"
	case p.Split != q.Split:
		return "its split mode differs"
	case !reflect.DeepEqual(p.Summary, q.Summary):
		return "its summary differs"
	}
	return ""
}

// differIDs describes how lists of ids a and b differ as sets, if they
// do.
func differIDs(verb string, a, b []pruneguard.MessageID) string {
	as, bs := slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	if slices.Equal(as, bs) {
		return ""
	}
	for _, id := range bs {
		if _, found := slices.BinarySearch(as, id); !found {
			return fmt.Sprintf("it %s %d messages where the first plan %s %d, %s among them", verb, len(b), verb, len(a), id)
		}
	}
	for _, id := range as {
		if _, found := slices.BinarySearch(bs, id); !found {
			return fmt.Sprintf("it %s %d messages where the first plan %s %d, not %s", verb, len(b), verb, len(a), id)
		}
	}
	return fmt.Sprintf("it %s %d messages where the first plan %s %d", verb, len(b), verb, len(a))
}

func isInput(err error) bool { return errors.Is(err, pruneguard.ErrInvalidInput) }

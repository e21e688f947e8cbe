package policytest

import (
	"fmt"
	"slices"

	"github.com/pruneguard/pruneguard"
)

// The Contexts the suite asks a policy about. Each is built the same way
// every time, so that two builds are equal Contexts.

// A scenario is one Context the suite asks a policy about, at several
// needs.
type scenario struct {
	name string
	// build makes the Context and returns the units to hide through
	// the View, as a guard hides the units the gates refused in a check.
	build func() (*pruneguard.Context, []pruneguard.UnitID)
	// zeroView: the policy is handed the zero View, whatever build made.
	zeroView bool
}

// The tools of the scenarios: read's results can be read again, search's
// cannot (an open-world tool).
var (
	readTool   = pruneguard.Tool{Name: "read", Annotations: pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}
	searchTool = pruneguard.Tool{Name: "search", Annotations: pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(true)}}
)

// builder appends messages to a Context with ids it numbers. The suite's
// own events are valid: an error is a bug of the suite, and panics.
type builder struct {
	c    *pruneguard.Context
	n    int    // messages appended, for ids
	k    int    // calls made, for ids
	seed uint32 // the state of sizes
}

func newBuilder(cfg pruneguard.Config) *builder {
	b := &builder{c: pruneguard.NewContext(cfg), seed: 1}
	must(b.c.RegisterTool(readTool))
	must(b.c.RegisterTool(searchTool))
	return b
}

func must(err error) {
	if err != nil {
		panic("policytest: building a case: " + err.Error())
	}
}

// size returns the next of a fixed sequence of sizes, from 1 to max.
func (b *builder) size(max int) int {
	b.seed = b.seed*1664525 + 1013904223
	return 1 + int(b.seed>>8)%max
}

func (b *builder) id(prefix string) pruneguard.MessageID {
	b.n++
	return pruneguard.MessageID(fmt.Sprintf("%s%d", prefix, b.n))
}

// add appends m under a new id and returns the id.
func (b *builder) add(prefix string, m pruneguard.Message) pruneguard.MessageID {
	m.ID = b.id(prefix)
	must(b.c.Append(m))
	return m.ID
}

func (b *builder) system() pruneguard.MessageID {
	return b.add("sys", pruneguard.Message{Role: pruneguard.RoleSystem, Tokens: 300, Content: []byte("system"), Pinned: true})
}

func (b *builder) user(tokens int) pruneguard.MessageID {
	return b.add("u", pruneguard.Message{Role: pruneguard.RoleUser, Tokens: tokens, Content: []byte("user")})
}

func (b *builder) say(tokens int) pruneguard.MessageID {
	return b.add("a", pruneguard.Message{Role: pruneguard.RoleAssistant, Tokens: tokens, Content: []byte("assistant")})
}

// calls appends an assistant message calling each tool once and returns
// its id and the calls' ids.
func (b *builder) calls(tools ...string) (pruneguard.MessageID, []pruneguard.CallID) {
	m := pruneguard.Message{Role: pruneguard.RoleAssistant, Tokens: 10 + 5*len(tools)}
	var ids []pruneguard.CallID
	for _, t := range tools {
		b.k++
		id := pruneguard.CallID(fmt.Sprintf("k%d", b.k))
		ids = append(ids, id)
		m.Calls = append(m.Calls, pruneguard.Call{ID: id, Tool: t, Args: []byte(`{}`)})
	}
	return b.add("a", m), ids
}

// result appends a result answering calls.
func (b *builder) result(tokens int, calls ...pruneguard.CallID) pruneguard.MessageID {
	return b.add("r", pruneguard.Message{Role: pruneguard.RoleTool, Tokens: tokens, Content: []byte("result"), Answers: calls})
}

// round appends one call to tool and its result of a size from the
// sequence, up to max tokens.
func (b *builder) round(tool string, max int) (call, result pruneguard.MessageID) {
	call, ks := b.calls(tool)
	return call, b.result(b.size(max), ks...)
}

// loop appends n rounds, a call to search every fourth, a user message
// every tenth.
func (b *builder) loop(n, max int) {
	for i := range n {
		if i%10 == 9 {
			b.user(b.size(200))
		}
		tool := "read"
		if i%4 == 3 {
			tool = "search"
		}
		b.round(tool, max)
	}
}

// start appends the system prompt and the user's first message.
func (b *builder) start() {
	b.system()
	b.user(120)
}

// prunable returns the units of c that may go, oldest first.
func prunable(c *pruneguard.Context) []pruneguard.Unit {
	return slices.DeleteFunc(c.Units(), func(u pruneguard.Unit) bool {
		return u.Pinned || u.Open || u.Unread || len(u.Pending) > 0
	})
}

// largestResult returns the id of the largest whole tool result of c.
func largestResult(c *pruneguard.Context) pruneguard.MessageID {
	var best pruneguard.Entry
	for _, e := range c.Snapshot() {
		if e.Result && !e.Stubbed && e.Tokens > best.Tokens {
			best = e
		}
	}
	return best.ID
}

func unitOf(c *pruneguard.Context, id pruneguard.MessageID) pruneguard.UnitID {
	u, ok := c.UnitOf(id)
	if !ok {
		panic("policytest: building a case: no message " + string(id))
	}
	return u.ID
}

var scenarios = []scenario{
	{name: "empty", build: func() (*pruneguard.Context, []pruneguard.UnitID) {
		return pruneguard.NewContext(pruneguard.Config{}), nil
	}},
	{name: "zero view", zeroView: true, build: func() (*pruneguard.Context, []pruneguard.UnitID) {
		return pruneguard.NewContext(pruneguard.Config{}), nil
	}},
	{name: "conversation", build: conversation},
	{name: "tool loop", build: toolLoop},
	{name: "parallel batches", build: parallelBatches},
	{name: "pinned", build: pinned},
	{name: "in flight", build: inFlight},
	{name: "unread", build: unread},
	{name: "stubbed", build: stubbed},
	{name: "hidden", build: hidden},
	{name: "refused", build: refused},
	{name: "coupled", build: coupled},
}

// conversation: turns of text, no tools.
func conversation() (*pruneguard.Context, []pruneguard.UnitID) {
	b := newBuilder(pruneguard.Config{TextClass: pruneguard.Reconstructible})
	b.start()
	for range 150 {
		b.say(b.size(600))
		b.user(b.size(400))
	}
	b.say(50)
	return b.c, nil
}

// toolLoop: a long run of calls and results of many sizes, all read.
func toolLoop() (*pruneguard.Context, []pruneguard.UnitID) {
	b := newBuilder(pruneguard.Config{})
	b.start()
	b.loop(240, 6000)
	b.say(40)
	return b.c, nil
}

// parallelBatches: batches of two to five calls, answered out of order,
// one result answering two calls at once.
func parallelBatches() (*pruneguard.Context, []pruneguard.UnitID) {
	b := newBuilder(pruneguard.Config{})
	b.start()
	for i := range 60 {
		tools := []string{"read", "search", "read", "read", "search"}[:2+i%4]
		_, ks := b.calls(tools...)
		if i%7 == 3 {
			b.result(b.size(4000), ks[0], ks[1])
			ks = ks[2:]
		}
		for j := len(ks) - 1; j >= 0; j-- {
			b.result(b.size(4000), ks[j])
		}
		if i%5 == 4 {
			b.say(b.size(300))
		}
	}
	b.say(40)
	return b.c, nil
}

// pinned: a tool loop with pinned units, the oldest among them and the
// one with the largest result.
func pinned() (*pruneguard.Context, []pruneguard.UnitID) {
	b := newBuilder(pruneguard.Config{})
	b.system()
	b.add("u", pruneguard.Message{Role: pruneguard.RoleUser, Tokens: 400, Content: []byte("never forget"), Pinned: true})
	for i := range 120 {
		call, res := b.round("read", 5000)
		switch i % 6 {
		case 0:
			must(b.c.Pin(res))
		case 3:
			must(b.c.Pin(call))
		}
	}
	b.say(40)
	must(b.c.Pin(largestResult(b.c)))
	return b.c, nil
}

// inFlight, in the relaxed mode, where a guard asks its policy while
// calls are in flight: a call left pending, a batch answered in part, a
// result streaming, and the model's last message streaming.
func inFlight() (*pruneguard.Context, []pruneguard.UnitID) {
	b := newBuilder(pruneguard.Config{Boundary: pruneguard.BoundaryRelaxed})
	b.start()
	b.loop(20, 3000)
	b.calls("read") // never answered
	b.loop(20, 3000)
	_, ks := b.calls("read", "read", "search")
	b.result(9000, ks[0])
	b.result(8000, ks[2])
	b.loop(20, 3000)
	_, ks = b.calls("read")
	id := b.id("r")
	must(b.c.Open(pruneguard.Message{ID: id, Role: pruneguard.RoleTool, Tokens: 7000, Content: []byte("part"), Answers: ks}))
	must(b.c.Write(id, []byte(" more"), 500))
	b.loop(20, 3000)
	must(b.c.Open(pruneguard.Message{ID: b.id("a"), Role: pruneguard.RoleAssistant, Tokens: 30, Content: []byte("thinking")}))
	return b.c, nil
}

// unread: the model's last message calls three tools whose large
// results came after it, and the user wrote since.
func unread() (*pruneguard.Context, []pruneguard.UnitID) {
	b := newBuilder(pruneguard.Config{})
	b.start()
	b.loop(100, 3000)
	_, ks := b.calls("read", "read", "search")
	for i, k := range ks {
		b.result(9000+i, k)
	}
	b.user(200)
	return b.c, nil
}

// stubbed: a tool loop whose largest results were stubbed.
func stubbed() (*pruneguard.Context, []pruneguard.UnitID) {
	b := newBuilder(pruneguard.Config{})
	b.start()
	for range 150 {
		b.round("read", 6000)
	}
	b.say(40)
	var stub []pruneguard.MessageID
	for _, e := range b.c.Snapshot() {
		if e.Result && e.Tokens > 3000 {
			stub = append(stub, e.ID)
		}
	}
	d, err := b.c.Prune(pruneguard.Plan{Stub: stub})
	must(err)
	must(b.c.Apply(d))
	return b.c, nil
}

// hidden: a tool loop with units hidden through the View, as a guard
// hides those the gates refused: every fourth unit that may go, the
// oldest of them and the one with the largest result.
func hidden() (*pruneguard.Context, []pruneguard.UnitID) {
	b := newBuilder(pruneguard.Config{})
	b.start()
	b.loop(160, 6000)
	b.say(40)
	var hide []pruneguard.UnitID
	for i, u := range prunable(b.c) {
		if i%4 == 0 {
			hide = append(hide, u.ID)
		}
	}
	if u := unitOf(b.c, largestResult(b.c)); !slices.Contains(hide, u) {
		hide = append(hide, u)
	}
	return b.c, hide
}

// refused: a tool loop after a guard's check that met refusals the
// Context remembers: units whose eviction and results whose stub the
// regenerability gate refused (search results cannot be read again).
// Every View passes over them.
func refused() (*pruneguard.Context, []pruneguard.UnitID) {
	b := newBuilder(pruneguard.Config{})
	b.start()
	b.loop(160, 6000)
	b.say(40)
	var evict, stub []pruneguard.MessageID
	n := 0
	for _, e := range b.c.Snapshot() {
		if !e.Result || !slices.Contains(e.Tools, "search") {
			continue
		}
		if n++; n%2 == 0 {
			stub = append(stub, e.ID)
		} else {
			evict = append(evict, e.ID)
		}
	}
	// A policy that proposes them one by one, so that each refusal is
	// met and remembered; the guard then prunes the oldest unit that
	// may go to reach its budget.
	asked := 0
	pol := pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan {
		defer func() { asked++ }()
		switch {
		case asked < len(evict):
			return pruneguard.Plan{Evict: []pruneguard.MessageID{evict[asked]}}
		case asked < len(evict)+len(stub):
			return pruneguard.Plan{Stub: []pruneguard.MessageID{stub[asked-len(evict)]}}
		}
		return pruneguard.Plan{}
	})
	g := pruneguard.Guard{Budget: b.c.Tokens() - 1, Policy: pol, Rounds: len(evict) + len(stub) + 4}
	_, err := g.Check(b.c)
	must(err)
	return b.c, nil
}

// coupled: units tied by Couple across the transcript: an old result
// with a user message near the end, a reasoning item with the calls that
// follow it.
func coupled() (*pruneguard.Context, []pruneguard.UnitID) {
	b := newBuilder(pruneguard.Config{})
	b.start()
	_, old := b.round("read", 4000)
	b.loop(30, 4000)
	why := b.add("t", pruneguard.Message{Role: pruneguard.RoleReasoning, Tokens: 80, Content: []byte("why")})
	call, _ := b.round("read", 4000)
	must(b.c.Couple(why, call))
	b.loop(3, 4000)
	late := b.user(150)
	must(b.c.Couple(old, late))
	b.round("read", 4000)
	b.round("read", 4000)
	b.say(40)
	return b.c, nil
}

package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// Unannotated says how to treat tools that carry no MCP annotations,
// neither in the body nor in a manifest.
//
// The zero Unannotated is UnannotatedIrreducible, as MCP's defaults say.
type Unannotated uint8

const (
	// UnannotatedIrreducible, the default, takes the MCP defaults: such a
	// tool may change the world and its results cannot be obtained again,
	// so they are never evicted or stubbed.
	UnannotatedIrreducible Unannotated = iota
	// UnannotatedRegenerable takes the caller's word that such tools can
	// be called again for the same result: Tool.Output is
	// [pruneguard.Reconstructible].
	UnannotatedRegenerable
)

// String returns "irreducible" or "regenerable", the names the pruneguard
// command's --unannotated flag takes; any other value reads as
// "irreducible", the default.
func (u Unannotated) String() string {
	if u == UnannotatedRegenerable {
		return "regenerable"
	}
	return "irreducible"
}

// Options configure [Body.Bind].
//
// The zero Options reads unannotated tools as irreducible, counts with
// [pruneguard.ApproxCounter], uses no manifest and spills nothing.
type Options struct {
	// Config is the configuration of the pruneguard.Context. Its Counter
	// counts tokens (nil means [pruneguard.ApproxCounter], and the Context
	// is given it): each message once, as its JSON, when the Context is
	// built, and the rest of the body in [Guarded.Tokens]; the Context
	// counts with it the tool schemas it holds and the tombstone lines
	// that stand. When Config.StubTokens is zero it is set to the
	// Counter's count of the stub text plus a small allowance for the
	// result's envelope.
	Config pruneguard.Config
	// Manifest, if set, supplies annotations (and schemas for tools the
	// body declares without one) and scopes by tool name. Its annotations
	// win over those in the body. A manifest that lists a tool twice, or
	// a body whose annotations are bad input (see [AnnotationError]), is
	// refused.
	Manifest *Manifest
	// Unannotated says how tools without annotations are treated, and
	// results whose call is not in the body. It does not reach tools the
	// provider runs: their results are irreducible unless annotated.
	Unannotated Unannotated
	// Spiller, if set, lets [Guarded.CheckContext] spill what only a spill lets
	// go: the guard it runs is given a store (the guard passed must have
	// no Spill of its own) that writes each message as the body held it (its provider
	// JSON, byte for byte, as the Content of the message stored), and
	// the Context's Resolver is the Spiller, so Config.Resolver must be
	// nil. An evicted spilled message leaves one line per pointer in the
	// system prompt, after the tombstone lines, where tombstone lines go;
	// a body with no place for one spills only tool results, whose stub
	// shows the pointer's text instead of the stub text: the Spiller's
	// own ([spill.Spiller.PointerText]) when it has a PointerText method,
	// [spill.PointerText] otherwise. When Config.PointerTokens is zero it
	// is set to the Counter's count of the Spiller's longest pointer line
	// ([spill.Spiller.LongestPointerText]; for another Spiller, a line of
	// the default name and a segment key), so that the guard's rounds
	// count the lines and pointer texts they add. *spill.Spiller is one. Nil means nothing is
	// spilled. The pointer's text tells the model to call the recall tool,
	// which the guard does not add to the body: the runtime declares it
	// among the request's tools ([RecallTool] gives its declaration in
	// each dialect) and answers its calls with
	// [spill.Spiller.HandleRecall]. With a *spill.Spiller, the tool of
	// that name takes the annotations of [spill.RecallTool] (read-only,
	// closed-world) unless the manifest or the body annotates it, so that
	// its answers are reconstructible and never spilled again.
	Spiller pruneguard.Spiller
}

// Unpaired is a call or a result the body's own adjacency rules leave
// without a partner. The Context holds the message, but not the pairing:
// a result without a call carries no Answers (and is classed as an
// unannotated tool's result), and a call without a result (other than the
// trailing, pending batch) stays among the message's Calls and is
// abandoned ([pruneguard.Context.Abandon]) as soon as its message is
// appended, so it never holds up the boundary gate: its unit closes and
// is judged like any other, the message takes the class of its calls as
// any message of calls does, and the call's arguments count for the
// schema gate while the message stays. Not listed: a Responses output
// that answers a call the server holds, and an MCP approval request the
// user left unanswered, which pair with nothing legitimately (such a
// request is abandoned too).
//
// The zero Unpaired names nothing; [Guarded.Unpaired] returns them
// filled in.
type Unpaired struct {
	Index  int    // the message's index in the body as read
	CallID string // the wire call id
	Result bool   // true for a result without a call, false for a call without a result
}

// Refusal is a candidate a prune left out, and why.
//
// The zero Refusal names nothing; the package returns them filled in.
type Refusal struct {
	// Gate is "boundary", "schema", "regen" or "wire". A "wire" refusal
	// means the body, pruned with the candidate, would break a provider
	// rule the input did not break, or empty a tools array; or that the
	// candidate's stub or tombstone would not make the body smaller, or its
	// stub cannot be made.
	Gate string
	// Code is the core's reason code, or for "wire" the provider rule.
	Code string
	// Units and Messages name the candidate; Indexes are the messages'
	// indexes in the body as read. For a boundary "deferred" refusal they
	// name what is in flight: open messages, and the messages whose calls
	// are pending, with their units. A schema refusal of the state of a
	// tool rather than of a candidate (a message requiring a withdrawn
	// schema, arguments standing behind no schema and no tombstone) names
	// no unit: its Messages are the requiring messages, or those making
	// its Calls.
	Units    []pruneguard.UnitID
	Messages []pruneguard.MessageID
	Indexes  []int
	// Tools names the tools, for schema refusals.
	Tools []string
	// Calls names the calls whose arguments stand behind no schema, for a
	// schema refusal with code "ghost-tool".
	Calls []pruneguard.CallID
	// Detail is the provider's wording for "wire", empty otherwise.
	Detail string
}

// Guarded is a request body bound to the pruneguard.Context built from it.
// Decisions applied through it edit both. It is not safe for concurrent
// use. Its cost per decision is in proportion to what the decision
// edits and the messages around it, not to the length of the body (see
// the package documentation, "Guarding a body").
//
// The zero Guarded is not usable; make one with [Body.Bind] or
// [Bind].
type Guarded struct {
	src      *Body
	ctx      *pruneguard.Context
	count    pruneguard.Counter
	tokens   []int32 // each message's tokens, counted once
	unpaired []Unpaired
	inputV   []RuleViolation
	stubText string

	arrays []toolArray // the tools arrays of the body as read
	// serverClass is the class of each server tool's results, by name,
	// for the tools a manifest or the body annotates.
	serverClass map[string]pruneguard.Class
	// serverTools names the tools the provider runs that the body uses,
	// sorted.
	serverTools []string
	// callTools holds the tool of each client call of the body, message
	// by message; message i's are callTools[firstCall[i]:firstCall[i+1]].
	callTools []string
	firstCall []int32

	// The applied edits: messages removed and stubbed, the rules they
	// leave, and the tools state.
	seq    *seqState
	rules  *ruleScreen
	tools  *toolState
	schema schemaState
	// msgTokens is the tokens of the messages the edits keep, as they are
	// written; overhead the rest of the body's, or -1 until counted.
	msgTokens int
	overhead  int
	// sys is the index of the system message that carries the tombstone
	// and pointer lines, for a provider that keeps its prompt in the
	// history (Chat), or -1; sysFacts is it with the lines, when any.
	sys      int
	sysFacts *facts

	stubs map[int]*stubbed
	// turn is the index of the first message of the turn in progress,
	// kept from eviction (see turn.go), or -1 for none.
	turn int
	// vouched is the decision Prune screened last: Apply takes it as it is.
	vouched *pruneguard.Decision
	// journal, while a check runs, holds what each decision carried out
	// changed, so that it can be undone.
	journal []undo
	// screened is the last decision the screen passed whole, with how it
	// changes the rule counts, for carrying it out.
	screened *screened
	// sp is the spilling state, or nil without a Spiller.
	sp *spilling
	// sum is the summaries the applied decisions wrote, or nil before
	// the first (see guard_summary.go); sumUndo takes back, by the index
	// of its entry in the journal, what each summary recorded changed.
	sum     *guardSums
	sumUndo map[int]func()
}

// screened is a decision the screen passed, with the delta it found, on
// the applied state of the given version, and the edits it made of it:
// carried out while no other set of edits was made since (the marks of
// e are its own still), they need not be made again.
type screened struct {
	d       *pruneguard.Decision
	version uint64
	delta   map[string]int
	e       *edits
}

// undo is what carrying out one decision changed.
type undo struct {
	removed   []int32 // in the order removed
	stubbed   []int32
	delta     map[string]int
	glob      globals
	schema    schemaState
	tools     *toolState
	msgTokens int
	sysFacts  *facts
}

// schemaState is what the applied decisions did to the tools arrays and
// the system prompt.
type schemaState struct {
	dropped    map[string]bool
	compressed map[string]json.RawMessage
	tombstones map[string]string
	tombOrder  []string
	spilled    []pruneguard.SpillNote // evicted spilled messages, whose pointer lines stand
}

// stubbed is a message with its results stubbed, or ok false when its
// results cannot be stubbed.
type stubbed struct {
	f      facts
	tokens int
	ok     bool
}

// ID returns the message id the Context gives message i of the body as
// read: "m" followed by i.
func ID(i int) pruneguard.MessageID { return pruneguard.MessageID("m" + strconv.Itoa(i)) }

// indexOf parses an id ID gave. An id of up to nine digits without a
// leading zero is read digit by digit, the digits of one of up to seven
// at once; any other goes through indexOfSlow, which gives the same
// answer for those.
func indexOf(id pruneguard.MessageID, n int) (int, bool) {
	s := string(id)
	if len(s) < 2 || len(s) > 10 || s[0] != 'm' || (s[1] == '0' && len(s) > 2) {
		return indexOfSlow(id, n)
	}
	// d+6 has a bit above the low four for a byte d that is no digit
	// ('0' taken off), and for no digit: bad has one for any no digit.
	var i, bad uint
	switch len(s) {
	case 2:
		d := uint(s[1] - '0')
		i, bad = d, d+6
	case 3:
		d1, d2 := uint(s[1]-'0'), uint(s[2]-'0')
		i, bad = d1*10+d2, (d1+6)|(d2+6)
	case 4:
		d1, d2, d3 := uint(s[1]-'0'), uint(s[2]-'0'), uint(s[3]-'0')
		i, bad = d1*100+d2*10+d3, (d1+6)|(d2+6)|(d3+6)
	case 5:
		d1, d2, d3, d4 := uint(s[1]-'0'), uint(s[2]-'0'), uint(s[3]-'0'), uint(s[4]-'0')
		i, bad = d1*1000+d2*100+d3*10+d4, (d1+6)|(d2+6)|(d3+6)|(d4+6)
	case 6:
		d1, d2, d3, d4, d5 := uint(s[1]-'0'), uint(s[2]-'0'), uint(s[3]-'0'), uint(s[4]-'0'), uint(s[5]-'0')
		i, bad = d1*10000+d2*1000+d3*100+d4*10+d5, (d1+6)|(d2+6)|(d3+6)|(d4+6)|(d5+6)
	case 7:
		d1, d2, d3, d4, d5, d6 := uint(s[1]-'0'), uint(s[2]-'0'), uint(s[3]-'0'), uint(s[4]-'0'), uint(s[5]-'0'), uint(s[6]-'0')
		i, bad = d1*100000+d2*10000+d3*1000+d4*100+d5*10+d6, (d1+6)|(d2+6)|(d3+6)|(d4+6)|(d5+6)|(d6+6)
	case 8:
		d1, d2, d3, d4, d5, d6, d7 := uint(s[1]-'0'), uint(s[2]-'0'), uint(s[3]-'0'), uint(s[4]-'0'), uint(s[5]-'0'), uint(s[6]-'0'), uint(s[7]-'0')
		i, bad = d1*1000000+d2*100000+d3*10000+d4*1000+d5*100+d6*10+d7, (d1+6)|(d2+6)|(d3+6)|(d4+6)|(d5+6)|(d6+6)|(d7+6)
	default:
		for k := 1; k < len(s); k++ {
			d := uint(s[k] - '0')
			i, bad = i*10+d, bad|(d+6)
		}
	}
	if bad > 15 {
		return indexOfSlow(id, n)
	}
	if i >= uint(n) {
		return 0, false
	}
	return int(i), true
}

// indexOfSlow parses an id ID gave, with strconv.
func indexOfSlow(id pruneguard.MessageID, n int) (int, bool) {
	s := string(id)
	if len(s) < 2 || s[0] != 'm' || (s[1] == '0' && len(s) > 2) {
		return 0, false
	}
	i, err := strconv.Atoi(s[1:])
	if err != nil || i < 0 || i >= n || s[1] == '+' || s[1] == '-' {
		return 0, false
	}
	return i, true
}

// Bind builds a pruneguard.Context from the body, one message per body
// message (item, content turn) with the id [ID](index), and returns it
// bound to the body, as a [Guarded]. The body itself is not changed; [Guarded.Body]
// returns the edited copy.
//
// Calls and results are paired by each dialect's adjacency rules, the
// ones [Body.Validate] checks, never by a global id map; the Context's
// call ids are synthesised from positions, so reused and duplicate wire
// ids do no harm. What does not pair is reported by [Guarded.Unpaired].
// Calls of the trailing batch that have no result yet stay pending, and
// under the strict boundary defer every prune; a call without a result
// that is not in the trailing batch (the block or turn it waited in
// ended, or in Responses a later output or user message follows it) can
// no longer be answered in any dialect, and a provider rejects the body
// for it as it stands: the Context abandons it, so its unit closes and is
// judged like any other (see [Unpaired]).
//
// Units follow each dialect's atomic structure: a call with its results
// and its whole parallel batch (the core's own grouping); in Responses,
// consecutive call items, and a reasoning item with the item after it;
// in Anthropic, Gemini and Bedrock, each assistant (model) turn with the
// user turn right after it, so that a cut keeps roles alternating and the
// history starting with a user turn. Pinned: system and developer
// messages; the first real user message (the task, usually; and the start
// of the history), unless an [Options.Spiller] is set and the body has a
// system prompt for its pointer lines, when it may be spilled and
// evicted like any text; the last real user message (not tool results);
// in Responses, outputs answering calls the server holds and item
// references (see [Validate]); in Anthropic, the last assistant turn
// when it holds a server tool call still waiting for its result
// (pause_turn), which goes back unchanged. When the body carries
// reasoning or signed calls, the turn in progress (every message after
// the last real user message) is kept from eviction, not pinned: the
// provider asks for its reasoning and call items back, in order, but not
// for every result's full content, so its results may be stubbed (by a
// policy that stubs, such as pruneguard.LargestResultsFirst with Stub),
// the screen refusing its evictions with code [CodeActiveTurn] and a
// stub the provider would reject as any other.
//
// Tools declared in the body register with their schema and annotations
// (a manifest's annotations win), and so do tools known only from calls.
// Messages the Context cannot class for itself get a Class (see the
// package documentation, "Guarding a body"): results of tools the
// provider runs, results that pair with no call, compaction blocks and
// items. Such a class only ever makes a message stricter than the
// Context's own derivation. An assistant message that makes calls and
// also holds text gives the Context that text as its Content, so that
// the model's words are told from a message of calls alone.
//
// Each message's tokens are counted once, when the Context is built.
//
// When the body has no system prompt that tombstone lines can go into (a
// Chat body without a system or developer message, a Gemini body without
// systemInstruction, a Bedrock body without system), opts.Config gets
// NoTombstones. A Config.StubText that is blank (whitespace only) is an
// error: providers reject blank results.
func (b *Body) Bind(opts Options) (*Guarded, error) {
	if b == nil || b.top == nil {
		return nil, errors.New("wire: context of a body that was not read")
	}
	cfg := opts.Config
	cfg.Counter = counterOf(cfg.Counter)
	if cfg.SummaryCounter == nil {
		cfg.SummaryCounter = summaryCounter{p: b.provider(), count: cfg.Counter}
	}
	stubText := cfg.StubText
	if stubText == "" {
		stubText = pruneguard.DefaultStubText
	}
	if strings.TrimSpace(stubText) == "" {
		return nil, errors.New("wire: the stub text is blank; providers reject blank tool results")
	}
	if cfg.StubTokens <= 0 {
		cfg.StubTokens = countJSON(cfg.Counter, mustString(stubText)) + 8
	}
	n := len(b.facts)
	if !b.hasSystemPrompt() {
		// No tombstone line may go where there is no system prompt to
		// carry it (see setTombstones).
		cfg.NoTombstones = true
	}
	sp, err := newSpilling(opts, &cfg, b.hasSystemPrompt())
	if err != nil {
		return nil, err
	}
	var g *Guarded
	if cfg.Text == nil {
		// The facts a summary must carry are read from the text the
		// model reads (see modelText); a summary has its own.
		cfg.Text = textSource(b.provider(), func(id pruneguard.MessageID) *facts {
			if i, ok := g.Index(id); ok && g.summaryOf(int32(i)) == nil {
				return &g.src.facts[i]
			}
			return nil
		})
	}
	g = &Guarded{sp: sp,
		src: b, ctx: pruneguard.NewContext(cfg), count: cfg.Counter, stubText: stubText,
		tokens: make([]int32, n), arrays: toolArraysOf(b), stubs: map[int]*stubbed{},
		seq: newSeqState(n), tools: b.toolState(), overhead: -1, sys: -1, turn: -1,
		schema: schemaState{dropped: map[string]bool{}, compressed: map[string]json.RawMessage{}, tombstones: map[string]string{}},
	}
	for i := range b.facts {
		t := countFacts(cfg.Counter, &b.facts[i])
		g.tokens[i] = int32(min(t, 1<<31-1))
		g.msgTokens += t
	}
	if b.provider().promptInHistory {
		g.sys = b.systemMessage()
	}
	g.inputV = b.Validate()
	g.rules = newRuleScreen(g)
	if err := g.registerTools(opts); err != nil {
		return nil, err
	}
	if err := g.build(opts.Unannotated); err != nil {
		return nil, err
	}
	return g, nil
}

// Context is [Body.Bind] under its former name.
//
// Deprecated: use [Body.Bind]. Context returns a [*Guarded], not the
// *pruneguard.Context its name suggests ([Guarded.Context] is that).
func (b *Body) Context(opts Options) (*Guarded, error) { return b.Bind(opts) }

// Bind reads a request body of dialect d (Detect when d is empty) and
// binds it to a pruneguard.Context, as [Read] followed by [Body.Bind]
// does, without making the body's Messages: what the guard needs of each
// message is read in one pass, and each message stays a slice of body,
// written back by [Guarded.WriteTo] as it was read. It is the way in for
// a large body read only to be pruned; body must not change while the
// Guarded is in use. The errors are Read's and Body.Bind's.
func Bind(body []byte, d Dialect, opts Options) (*Guarded, error) {
	b, err := readBody(body, d)
	if err != nil {
		return nil, err
	}
	b.top.elems = nil // the facts hold the messages now
	return b.Bind(opts)
}

// build feeds the body's messages to the Context: a first pass of the
// tracker finds the calls that will never be answered, the second appends
// each message with its pairing, class and unit, abandoning those calls
// once their message is in, then the pins.
func (g *Guarded) build(un Unannotated) error {
	ck := &callKeys{}
	abandoned := g.findUnpaired(ck)
	ck.msg = ck.msg[:0]
	if err := g.feed(un, ck, abandoned); err != nil {
		return err
	}
	return g.pinPausedTurn()
}

// callKeys names the calls of a body's messages by key, in order: a
// call's key is its place among the calls of the messages named so far,
// and msg gives the message of each.
type callKeys struct {
	msg []int32
	buf []int32
}

// of names the calls of message i, f, and returns their keys (valid
// until the next call).
func (c *callKeys) of(i int, f *facts) []int32 {
	c.buf = c.buf[:0]
	for range f.ncalls {
		c.buf = append(c.buf, int32(len(c.msg)))
		c.msg = append(c.msg, int32(i))
	}
	return c.buf
}

// findUnpaired runs the tracker over the body to find what stays
// unanswered (and what is stored on the server): it sets g.unpaired, and
// returns, by key, the calls no later message can answer.
func (g *Guarded) findUnpaired(ck *callKeys) (abandoned []bool) {
	b := g.src
	tr := newTracker(b.Dialect, b.continues)
	var closed []int32
	var orphans []Unpaired
	for i := range b.facts {
		f := &b.facts[i]
		st := tr.add(f, ck.of(i, f))
		closed = append(closed, st.closed...)
		r := 0
		for _, p := range f.parts {
			if p.kind != PartResult {
				continue
			}
			if st.answers[r] < 0 && !st.stored {
				orphans = append(orphans, Unpaired{Index: i, CallID: p.id, Result: true})
			}
			r++
		}
	}
	last, report := tr.finish()
	closed = append(closed, last...)
	abandoned = make([]bool, len(ck.msg))
	var calls []Unpaired
	for _, k := range closed {
		abandoned[k] = true
		if report(k) {
			calls = append(calls, Unpaired{Index: int(ck.msg[k]), CallID: g.callPart(k, ck.msg).id})
		}
	}
	g.unpaired = mergeUnpaired(orphans, calls)
	return abandoned
}

// feed appends each message to the Context with its calls, the calls its
// results answer, its class, its pin and its unit, abandoning the calls
// of abandoned once their message is in.
func (g *Guarded) feed(un Unannotated, ck *callKeys, abandoned []bool) error {
	b := g.src
	pv := b.provider()
	g.callTools, g.firstCall = make([]string, 0, len(abandoned)), make([]int32, len(b.facts)+1)
	tr := newTracker(b.Dialect, b.continues)
	cl := &classing{
		p: pv, unannotated: un,
		server: func(name string) (pruneguard.Class, bool) { c, ok := g.serverClass[name]; return c, ok },
		tool: func(name string) (pruneguard.Tool, bool) {
			ts, ok := g.ctx.Tool(name)
			return ts.Tool, ok
		},
		called: func(key int32) string { return g.callPart(key, ck.msg).name },
	}
	pinned := g.pins()
	var prev *facts
	for i := range b.facts {
		f := &b.facts[i]
		ks := ck.of(i, f)
		st := tr.add(f, ks)
		cm := coreMessage(ID(i), f, int(g.tokens[i]))
		var gone []pruneguard.CallID
		g.firstCall[i] = int32(len(g.callTools))
		f.eachCall(func(k int, p *fpart) {
			g.callTools = append(g.callTools, p.name)
			cm.Calls = append(cm.Calls, pruneguard.Call{ID: callID(i, k), Tool: p.name, Args: argsJSON(p.val)})
			if abandoned[ks[k]] {
				gone = append(gone, callID(i, k))
			}
		})
		cm.Calls = appendServerCalls(cm.Calls, f, func(k int, _ string) pruneguard.CallID { return callID(i, int(f.ncalls)+k) })
		for _, a := range st.answers {
			if a >= 0 {
				m := int(ck.msg[a])
				cm.Answers = append(cm.Answers, callID(m, int(a-firstKey(a, ck.msg))))
			}
		}
		cm.Class = cl.class(f, st.answers)
		cm.Pinned = isSystem(f) || st.stored || pinned(i)
		if err := g.ctx.Append(cm); err != nil {
			return fmt.Errorf("wire: %s: %s[%d]: %w", b.Dialect, b.key, i, err)
		}
		// A call no later message of the body can answer closes its unit
		// now; the trailing batch stays pending.
		if len(gone) > 0 {
			if err := g.ctx.Abandon(gone...); err != nil {
				return fmt.Errorf("wire: %s: %s[%d]: %w", b.Dialect, b.key, i, err)
			}
		}
		if coupled(pv, prev, f) {
			if err := g.ctx.Couple(ID(i-1), ID(i)); err != nil {
				return fmt.Errorf("wire: %s: couple: %w", b.Dialect, err)
			}
		}
		prev = f
	}
	g.firstCall[len(b.facts)] = int32(len(g.callTools))
	return nil
}

// pins returns whether message i is pinned for where it stands: the last
// real user message; the first, unless it is the only one or a Spiller
// with a place for its pointer lines may spill it like any text. When
// the body carries reasoning or signed calls, it sets g.turn to the
// message after the last real user message: the turn in progress, kept
// from eviction by the screen, not pinned, so that its results may be
// stubbed.
func (g *Guarded) pins() func(i int) bool {
	b := g.src
	pv := b.provider()
	spillsText := g.sp != nil && g.sp.place
	firstUser, lastUser, reasoning := -1, -1, false
	for i := range b.facts {
		f := &b.facts[i]
		if pv.realUser(f) {
			if firstUser < 0 {
				firstUser = i
			}
			lastUser = i
		}
		reasoning = reasoning || f.reasoning || f.signedCall()
	}
	g.turn = -1
	if reasoning && lastUser >= 0 {
		g.turn = lastUser + 1
	}
	return func(i int) bool {
		return (i == firstUser && firstUser != lastUser && !spillsText) || i == lastUser
	}
}

// pinPausedTurn pins the last assistant turn when it holds a server tool
// call whose result has not come (Anthropic pause_turn): the call is in
// flight, and the turn goes back as it is.
func (g *Guarded) pinPausedTurn() error {
	b := g.src
	if !b.provider().pausedTurns || len(b.facts) == 0 {
		return nil
	}
	last := len(b.facts) - 1
	for last >= 0 && b.facts[last].role != "assistant" {
		last--
	}
	first := last
	for first > 0 && b.facts[first-1].role == "assistant" {
		first--
	}
	if last < 0 {
		return nil
	}
	var parts [][]fpart
	for i := first; i <= last; i++ {
		parts = append(parts, b.facts[i].parts)
	}
	if !waitingServerCall(parts) {
		return nil
	}
	for i := first; i <= last; i++ {
		if err := g.ctx.Pin(ID(i)); err != nil {
			return fmt.Errorf("wire: %s: pin: %w", b.Dialect, err)
		}
	}
	return nil
}

// callPart returns the call a key names, with callMsg the message of each
// key.
func (g *Guarded) callPart(key int32, callMsg []int32) *fpart {
	m := callMsg[key]
	return g.src.facts[m].callAt(int(key - firstKey(key, callMsg)))
}

// firstKey returns the key of the first call of the message of key.
func firstKey(key int32, callMsg []int32) int32 {
	m := callMsg[key]
	for key > 0 && callMsg[key-1] == m {
		key--
	}
	return key
}

// mergeUnpaired lists results and calls without a partner in body order,
// at one index the results first.
func mergeUnpaired(results, calls []Unpaired) []Unpaired {
	out := append(results, calls...)
	slices.SortStableFunc(out, func(a, b Unpaired) int {
		if a.Index != b.Index {
			return a.Index - b.Index
		}
		switch {
		case a.Result && !b.Result:
			return -1
		case !a.Result && b.Result:
			return 1
		}
		return 0
	})
	return out
}

func callID(i, k int) pruneguard.CallID {
	return pruneguard.CallID(strconv.Itoa(i) + "." + strconv.Itoa(k))
}

func (g *Guarded) registerTools(opts Options) error {
	byName, err := opts.Manifest.byName()
	if err != nil {
		return fmt.Errorf("wire: %s: manifest: %w", g.src.Dialect, err)
	}
	decls, err := toolDecls(g.src.provider(), bodyTools(g.src), true)
	if err != nil {
		return fmt.Errorf("wire: %s: tools: %w", g.src.Dialect, err)
	}
	// Tools the provider runs: their results are irreducible unless
	// annotated, whatever opts.Unannotated says.
	server := map[string]bool{}
	for i := range g.src.facts {
		if !g.src.facts[i].server {
			continue
		}
		for _, p := range g.src.facts[i].parts {
			if (p.kind == PartServerCall || p.kind == PartServerResult) && p.name != "" {
				server[p.name] = true
			}
		}
	}
	g.serverClass = map[string]pruneguard.Class{}
	for name := range server {
		g.serverTools = append(g.serverTools, name)
		if mt, ok := byName[name]; ok && mt.Annotations != nil {
			g.serverClass[name] = pruneguard.Tool{Name: name, Annotations: *mt.Annotations}.OutputClass()
		}
	}
	slices.Sort(g.serverTools)
	seen := map[string]bool{}
	register := func(name string, schema json.RawMessage, ann pruneguard.Annotations, annotated bool) error {
		if seen[name] {
			return nil
		}
		seen[name] = true
		scope := ""
		if mt, ok := byName[name]; ok {
			if mt.Annotations != nil {
				ann, annotated = *mt.Annotations, true
			}
			if schema == nil && len(mt.InputSchema) > 0 {
				schema = mt.InputSchema
			}
			scope = mt.Scope
		}
		if rt, ok := recallTool(opts.Spiller); ok && !annotated && name == rt.Name {
			ann, annotated = rt.Annotations, true
		}
		if len(schema) > 0 && !json.Valid(schema) {
			schema = nil
		}
		t := pruneguard.Tool{Name: name, Schema: schema, Annotations: ann, Scope: scope}
		switch {
		case server[name] && annotated:
			g.serverClass[name] = t.OutputClass()
		case server[name]:
			t.Output = pruneguard.Irreducible
		case !annotated && opts.Unannotated == UnannotatedRegenerable:
			t.Output = pruneguard.Reconstructible
		}
		if err := g.ctx.RegisterTool(t); err != nil {
			return fmt.Errorf("wire: %s: tool %q: %w", g.src.Dialect, name, err)
		}
		return nil
	}
	for _, t := range decls {
		if err := register(t.Name, t.Schema, t.Annotations, t.Annotated); err != nil {
			return err
		}
	}
	// Tools known only from calls: registered without a schema, so the
	// unannotated assumption covers their results too.
	for i := range g.src.facts {
		f := &g.src.facts[i]
		if f.ncalls == 0 {
			continue
		}
		var err error
		f.eachCall(func(_ int, p *fpart) {
			if err == nil && p.name != "" {
				err = register(p.name, nil, pruneguard.Annotations{}, false)
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Context returns the pruneguard.Context built from the body.
func (g *Guarded) Context() *pruneguard.Context { return g.ctx }

// Index returns the index, in the body as read, of the message with id.
// A summary's index is that of the message whose place it took.
func (g *Guarded) Index(id pruneguard.MessageID) (int, bool) {
	if i, ok := indexOf(id, len(g.src.facts)); ok {
		return i, true
	}
	if g.sum != nil {
		if i, ok := g.sum.byID[id]; ok {
			return int(i), true
		}
	}
	return 0, false
}

// Unpaired lists the calls and results the body's adjacency rules leave
// without a partner, in body order, at one index the results first.
func (g *Guarded) Unpaired() []Unpaired { return slices.Clone(g.unpaired) }

// InputViolations returns the violations of the body as read.
func (g *Guarded) InputViolations() []RuleViolation { return slices.Clone(g.inputV) }

// StubText is the placeholder stubbed results carry.
func (g *Guarded) StubText() string { return g.stubText }

// Dialect returns the dialect of the body.
func (g *Guarded) Dialect() Dialect { return g.src.Dialect }

// Len returns the number of messages of the body as read.
func (g *Guarded) Len() int { return len(g.src.facts) }

// Tools lists the tools the body as read declares, as [Body.Tools] does.
func (g *Guarded) Tools() []ToolDecl { return g.src.Tools() }

// ServerTools lists, in order, the names of the tools the provider runs
// that the body as read uses (Anthropic server and MCP tool use, Gemini
// code execution, Responses server items).
func (g *Guarded) ServerTools() []string { return slices.Clone(g.serverTools) }

// AppendCalledTools appends to dst the tool name of each client call
// message i of the body as read makes, in order (a name once for each of
// its calls), and returns the extended slice: the Tool of each of the
// Calls the Context was given for the message that the provider does not
// run (not [pruneguard.Call].Server). For an index out of range, or a
// message that makes no client call (server tool calls are not client
// calls), it returns dst as it is. It costs in proportion to the
// calls appended: the names are kept from when the Context was built.
func (g *Guarded) AppendCalledTools(dst []string, i int) []string {
	if i < 0 || i >= len(g.src.facts) {
		return dst
	}
	return append(dst, g.callTools[g.firstCall[i]:g.firstCall[i+1]]...)
}

// Field returns the top-level field key of the body as read (a slice of
// the body), or nil when it has none.
func (g *Guarded) Field(key string) json.RawMessage { return g.src.top.fields[key] }

// stubFacts returns message i with its results stubbed, or false when
// they cannot be.
func (g *Guarded) stubFacts(i int) (*facts, bool) {
	s := g.stub(i)
	return &s.f, s.ok
}

// stub returns message i stubbed, made once.
func (g *Guarded) stub(i int) *stubbed {
	if s, ok := g.stubs[i]; ok {
		return s
	}
	s := &stubbed{f: g.src.facts[i], tokens: int(g.tokens[i])}
	if raw, err := stubMessage(g.src.Dialect, s.f.raw, g.stubTextOf(i)); err == nil {
		if f, err := parseMessage(g.src.Dialect, raw); err == nil {
			s.f, s.ok = f, true
			s.tokens = countFacts(g.count, &f)
		}
	}
	g.stubs[i] = s
	return s
}

// Apply carries out a decision of [Guarded.Prune] (or of the
// [Guarded.Context]'s own Prune) on the Context and, if that succeeds, on
// the body. A decision Guarded.Prune returned last was screened already;
// any other is screened first, and one the screen would not pass whole
// is refused with a [*ScreenError] (errors.Is [ErrScreen]), changing
// nothing. Errors of the Context's Apply (a stale or foreign decision)
// are returned as they are.
func (g *Guarded) Apply(d *pruneguard.Decision) error {
	if d != nil && d != g.vouched {
		if _, refused, _, all := g.screen(d); !all {
			return &ScreenError{Refusals: refused}
		}
	}
	if err := g.ctx.Apply(d); err != nil {
		return err
	}
	g.vouched = nil
	g.record(d)
	return nil
}

// record carries an applied decision out on the body's edit state: the
// schema edits first, then the messages, with the rules they leave
// counted for the next screen.
func (g *Guarded) record(d *pruneguard.Decision) {
	g.notePointers(d)
	var u *undo
	if g.journal != nil {
		g.journal = append(g.journal, undo{glob: g.rules.glob, schema: g.schema, tools: g.tools, msgTokens: g.msgTokens, sysFacts: g.sysFacts, delta: map[string]int{}})
		u = &g.journal[len(g.journal)-1]
	}
	if len(d.DropSchemas) > 0 || len(d.Compress) > 0 || len(d.Tombstones) > 0 || len(d.Retire) > 0 || len(g.spilledWith(d)) > len(g.schema.spilled) {
		next := g.schemaWith(d, nil)
		before := g.sysTokens()
		g.schema = schemaState{dropped: next.dropped, compressed: next.compressed, tombstones: next.tombMap, tombOrder: next.order, spilled: next.spilled}
		ts := g.topWith(next).toolState()
		delta, _ := g.rules.toolDelta(view{s: g.seq}, g.tools, ts)
		g.rules.commit(delta)
		u.add(delta)
		g.tools = ts
		g.setSys(next.tombs)
		g.msgTokens += g.sysTokens() - before
		g.overhead = -1
	}
	if d.Summary != nil {
		g.recordSummary(d, u)
		return
	}
	var e *edits
	var delta map[string]int
	if sc := g.screened; sc != nil && sc.version == g.seq.version && len(d.DropSchemas) == 0 && len(d.Compress) == 0 &&
		len(d.Tombstones) == 0 && len(d.Retire) == 0 && sameDecision(sc.d, d) {
		delta = sc.delta
		if sc.e != nil && sc.e.gen == g.seq.gen {
			// The screen's edits of the whole decision, as the loops below
			// would make them but for stubs already carried out, which
			// change nothing.
			e = sc.e
		}
	}
	if e == nil {
		e = g.seq.newEditsFor(len(d.Evict), len(d.Stub))
		for _, id := range d.Evict {
			if i, ok := g.Index(id); ok && !g.seq.removed[i] {
				e.remove(int32(i))
			}
		}
		for _, id := range d.Stub {
			if i, ok := g.Index(id); ok && !g.seq.removed[i] && !g.seq.stubbed[i] {
				e.stub(int32(i))
			}
		}
	}
	if !e.changes(g.seq) {
		return
	}
	if delta == nil {
		delta, _ = g.rules.delta(view{s: g.seq}, e, g.tools)
	}
	g.screened = nil
	g.rules.commit(delta)
	u.add(delta)
	for _, i := range e.st {
		if !e.removes(i) {
			g.msgTokens += g.stub(int(i)).tokens - g.written(int(i))
		}
	}
	for _, i := range e.rm {
		g.msgTokens -= g.written(int(i))
	}
	removed, stubbed := g.rules.applyEdits(e, u != nil)
	if u != nil {
		u.removed, u.stubbed = removed, stubbed
	}
}

// add adds a delta to what the undo takes back.
func (u *undo) add(delta map[string]int) {
	if u == nil {
		return
	}
	for k, n := range delta {
		u.delta[k] += n
	}
}

// undo takes back every decision the journal holds, latest first.
func (g *Guarded) undo() {
	for k := len(g.journal) - 1; k >= 0; k-- {
		u := &g.journal[k]
		for i := len(u.removed) - 1; i >= 0; i-- {
			g.seq.restore(u.removed[i])
		}
		for _, i := range u.stubbed {
			g.seq.stubbed[i] = false
			g.seq.version++
		}
		neg := make(map[string]int, len(u.delta))
		for key, n := range u.delta {
			neg[key] = -n
		}
		g.rules.commit(neg)
		g.rules.glob, g.schema, g.tools, g.msgTokens, g.sysFacts = u.glob, u.schema, u.tools, u.msgTokens, u.sysFacts
		if f := g.sumUndo[k]; f != nil {
			f() // what a summary changed (see noteSummary)
		}
		g.overhead = -1
	}
	g.journal = g.journal[:0]
	g.sumUndo = nil
}

// written returns the tokens of message i as the applied edits write it
// (a summary on its own: see joinTokens).
func (g *Guarded) written(i int) int {
	switch {
	case i == g.sys && g.sysFacts != nil:
		return countFacts(g.count, g.sysFacts)
	case g.seq.stubbed[i]:
		return g.stub(i).tokens
	}
	if s := g.summaryOf(int32(i)); s != nil {
		return s.tokens
	}
	return int(g.tokens[i])
}

// NewViolations returns the violations of after that before does not
// have: compared by rule and message, as multisets, with message and
// content indexes in the wording ("messages.3", "messages[3]") ignored
// since removals shift them.
func NewViolations(before, after []RuleViolation) []RuleViolation {
	count := map[string]int{}
	for _, v := range before {
		count[violationKey(v)]++
	}
	var out []RuleViolation
	for _, v := range after {
		k := violationKey(v)
		if count[k] > 0 {
			count[k]--
			continue
		}
		out = append(out, v)
	}
	return out
}

var indexInWording = regexp.MustCompile(`(messages|content)([.\[])\d+`)

func violationKey(v RuleViolation) string {
	return v.Rule + "\x00" + indexInWording.ReplaceAllString(v.Message, "$1${2}N")
}

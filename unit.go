package pruneguard

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
)

// MessageID names one message of a [Context]. IDs are chosen by the runtime
// and must be unique among the messages the Context holds.
type MessageID string

// CallID is the id a model gave one tool call (OpenAI's tool_call_id,
// Anthropic's tool_use id, and so on). A call id may be reused after the
// call it named has been answered; two unanswered calls may not share one.
type CallID string

// UnitID names a unit: the ID of the earliest message in it.
type UnitID string

// StepID names a planned step of the runtime's task plan that has declared
// which messages it will read (see [Context.PlanStep]).
type StepID string

// Role is the author of a message. The guard treats roles as opaque labels
// except for [RoleUser], whose unmarked messages are ordinary conversation.
type Role string

// The roles runtimes use. Any other string is accepted as a role.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
	RoleReasoning Role = "reasoning"
)

// Call is one tool call emitted by an assistant message.
type Call struct {
	// ID is the provider's call id; results name it in Message.Answers.
	ID CallID
	// Tool is the name of the tool called.
	Tool string
	// Args holds the call's JSON arguments. The guard never parses them; it
	// only knows that they stay in the prompt while the message does.
	Args json.RawMessage
}

// Message is one entry of the transcript as the runtime hands it to a
// [Context]. The Context copies what it keeps; the caller may reuse m.
type Message struct {
	// ID is unique within the Context. Required.
	ID MessageID
	// Role is the author of the message.
	Role Role
	// Tokens is the message's size as the runtime's tokenizer counts it.
	// It must not be negative.
	Tokens int
	// Content is opaque to the guard. A streamed message grows by chunks.
	Content []byte
	// Calls are the tool calls this message emits. All calls of one message
	// are a parallel batch and belong to one unit with all their results.
	Calls []Call
	// Answers lists the calls this message carries results for. Each must
	// name a call the Context holds and that has no result yet.
	Answers []CallID
	// Pinned messages are never pruned, nor is any unit holding one.
	Pinned bool
	// Class overrides the regenerability class the guard would derive.
	// Facts still win over it: see [Facts].
	Class Class
	// Facts marks what makes the content impossible to obtain again.
	Facts Facts
	// Pointer, when set, says where the content was spilled durably.
	Pointer Pointer
	// NeededBy names planned steps that will read this message, as if
	// [Context.PlanStep] were called for each in the same event, so that
	// no prune can slip in between.
	NeededBy []StepID
}

// Entry describes one message of a [Context] for a salience [Policy]. It is
// a snapshot: later events do not change it.
type Entry struct {
	ID      MessageID
	Role    Role
	Tokens  int
	Unit    UnitID
	Tools   []string // tools called by the message, or answered by it
	Calls   int      // number of calls the message emits
	Result  bool     // the message answers at least one call
	Pinned  bool
	Open    bool // the message is still streaming
	Pending bool // its unit has a call without a complete result
	Stubbed bool // its content was replaced by a stub
}

// Unit describes one unit of a [Context]: the messages tied together by
// calls, their results, parallel batches and explicit coupling.
type Unit struct {
	ID       UnitID
	Messages []MessageID // in transcript order
	Pending  []CallID    // calls still waiting for a complete result
	Open     bool        // some message of the unit is still streaming
	Pinned   bool
	Tokens   int
}

// Context is the live transcript of one agent session, grouped into units,
// plus the tool registry and the task-plan references the gates consult.
//
// The runtime drives it with events ([Context.Append], [Context.Open],
// [Context.Write], [Context.Close], [Context.Couple], ...) as they happen,
// and asks [Context.Prune] whether a proposed eviction is safe; a
// [Decision] is carried out with [Context.Apply]. An event that fails
// returns an error matching [ErrInvalidInput] and leaves the Context
// exactly as it was.
//
// A zero Context is ready to use with a zero [Config]; [NewContext] sets
// another. A Context is safe for concurrent use by multiple goroutines:
// results and chunks may arrive while a budget check runs. It must not be
// copied after first use.
type Context struct {
	mu  sync.RWMutex
	cfg Config

	// pruneMu serializes Prune calls, which share the read lock with each
	// other but write the marks of messages and units.
	pruneMu  sync.Mutex
	pruneGen uint64

	head, tail *msg
	byID       map[MessageID]*msg
	seq        uint64
	tokens     int

	// calls: unanswered (pending) calls by id, and the latest answered call
	// per id, so that a second result can be told from an unknown call.
	pending  map[CallID]*callRec
	answered map[CallID]*callRec
	gone     map[CallID]struct{} // ids of calls that were pruned
	nPending int                 // calls waiting for a closed result
	open     map[*msg]struct{}   // messages still streaming

	tools map[string]*toolRec

	steps  map[StepID]*step
	sealed bool

	large map[*msg]struct{} // messages at or above cfg.HoardTokens

	// cleared maps the calls whose results were pruned or stubbed (tool
	// and arguments) to the class the results had.
	cleared map[string]Class

	epoch    uint64 // bumped when tools, steps or sealing change
	disabled gateMask
}

type msg struct {
	m       Message
	seq     uint64
	unit    *unit
	prev    *msg
	next    *msg
	open    bool
	stubbed bool
	calls   []*callRec // records of m.Calls, same order
	results []*callRec // calls this message answers
	refs    int        // planned steps that reference the message

	// Marks of the Prune in progress (see Context.pruneGen); guarded by
	// Context.pruneMu.
	planMark   uint64
	evictMark  uint64
	stubMark   uint64
	pruneClass Class
}

type callRec struct {
	id       CallID
	tool     string
	caller   *msg
	result   *msg // set when a result message arrives (open or closed)
	done     bool // result arrived and is closed
	ver      uint32
	pendingN bool // counted in the unit's and the Context's pending totals
}

type unit struct {
	members []*msg // in seq order
	pending int
	open    int
	pinned  int
	tokens  int
	version uint64
	dead    bool
	into    *unit // the unit that absorbed this one, when merged

	// Marks of the Prune in progress; guarded by Context.pruneMu.
	namedMark uint64
	named     int
	listMark  uint64
	tab       int32 // the unit's index in the Decision being finished
}

func (u *unit) id() UnitID { return UnitID(u.members[0].m.ID) }

// NewContext returns an empty Context that uses cfg.
func NewContext(cfg Config) *Context {
	c := &Context{cfg: cfg}
	c.init()
	return c
}

func (c *Context) init() {
	if c.byID != nil {
		return
	}
	c.byID = make(map[MessageID]*msg)
	c.pending = make(map[CallID]*callRec)
	c.answered = make(map[CallID]*callRec)
	c.gone = make(map[CallID]struct{})
	c.tools = make(map[string]*toolRec)
	c.steps = make(map[StepID]*step)
	c.large = make(map[*msg]struct{})
	c.open = make(map[*msg]struct{})
}

// Config returns the configuration the Context was made with.
func (c *Context) Config() Config {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cfg
}

// Append adds a complete (closed) message at the end of the transcript.
//
// Calls in m become pending until a closed result names them. Answers in m
// bind m to the unit of each answered call; a message answering calls of
// several units joins those units into one. Append fails, changing
// nothing, on an empty or duplicate ID, a negative token count, an answer
// for a call the Context never saw ([ErrUnknownCall]), a call that was
// pruned ([ErrPrunedCall]) or that already has a result
// ([ErrDuplicateResult]), or a call id that is still pending
// ([ErrDuplicateCall]).
func (c *Context) Append(m Message) error {
	return c.add("append", m, false)
}

// Open adds a message that is still streaming. It stays open, and is
// never pruned, until [Context.Close]. A streaming result keeps its call
// pending until it closes.
func (c *Context) Open(m Message) error {
	return c.add("open", m, true)
}

func (c *Context) add(op string, m Message, open bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if err := c.checkNew(op, m); err != nil {
		return err
	}
	// Copy what the caller may reuse.
	m.Content = slices.Clone(m.Content)
	m.Calls = slices.Clone(m.Calls)
	m.Answers = slices.Clone(m.Answers)
	m.NeededBy = slices.Clone(m.NeededBy)

	c.seq++
	x := &msg{m: m, seq: c.seq, open: open}

	// Results first: find the units this message joins.
	var join []*unit
	for _, id := range m.Answers {
		r := c.pending[id]
		r.result = x
		x.results = append(x.results, r)
		if !slices.Contains(join, r.caller.unit) {
			join = append(join, r.caller.unit)
		}
	}
	var u *unit
	if len(join) == 0 {
		u = &unit{}
	} else {
		u = join[0]
		for _, o := range join[1:] {
			u = c.merge(u, o)
		}
	}
	c.link(x, u)

	for _, call := range m.Calls {
		c.addCall(x, call)
	}
	for _, r := range x.results {
		if !open {
			c.complete(r)
		}
	}
	if open {
		u.open++
		c.open[x] = struct{}{}
	}
	for _, sid := range m.NeededBy {
		c.reference(sid, x)
	}
	if len(m.NeededBy) > 0 {
		c.epoch++
	}
	c.trackLarge(x)
	return nil
}

// checkNew validates a message before anything changes.
func (c *Context) checkNew(op string, m Message) error {
	if m.ID == "" {
		return inputErr(op, "", ErrEmptyID)
	}
	if _, dup := c.byID[m.ID]; dup {
		return inputErr(op, string(m.ID), ErrDuplicateMessage)
	}
	if m.Tokens < 0 {
		return inputErr(op, string(m.ID), ErrNegativeTokens)
	}
	if slices.Contains(m.NeededBy, "") {
		return inputErr(op, string(m.ID), ErrEmptyID)
	}
	seen := make(map[CallID]bool, len(m.Calls)+len(m.Answers))
	for _, call := range m.Calls {
		if call.ID == "" {
			return inputErr(op, string(m.ID), ErrEmptyID)
		}
		if _, busy := c.pending[call.ID]; busy || seen[call.ID] {
			return inputErr(op, string(call.ID), ErrDuplicateCall)
		}
		seen[call.ID] = true
	}
	ans := make(map[CallID]bool, len(m.Answers))
	for _, id := range m.Answers {
		if ans[id] {
			return inputErr(op, string(id), ErrDuplicateResult)
		}
		ans[id] = true
		if r, ok := c.pending[id]; ok {
			if r.result != nil {
				return inputErr(op, string(id), ErrDuplicateResult)
			}
			continue
		}
		if seen[id] {
			// A message may not answer its own call.
			return inputErr(op, string(id), ErrUnknownCall)
		}
		if _, ok := c.answered[id]; ok {
			return inputErr(op, string(id), ErrDuplicateResult)
		}
		if _, ok := c.gone[id]; ok {
			return inputErr(op, string(id), ErrPrunedCall)
		}
		return inputErr(op, string(id), ErrUnknownCall)
	}
	return nil
}

func (c *Context) addCall(x *msg, call Call) {
	t := c.tool(call.Tool)
	r := &callRec{id: call.ID, tool: call.Tool, caller: x, ver: t.ver, pendingN: true}
	x.calls = append(x.calls, r)
	c.pending[call.ID] = r
	x.unit.pending++
	c.nPending++
	t.args++
	if t.live == nil {
		t.live = make(map[*callRec]struct{})
	}
	t.live[r] = struct{}{}
	if !t.resident || t.tombstoned {
		t.ghostCalls++
	}
	if len(c.cleared) > 0 {
		if k, ok := c.cleared[callSig(call.Tool, call.Args)]; ok {
			t.refetches++
			if k == Irreducible {
				t.irreducibleRefetches++
			}
		}
	}
}

// callSig identifies a call by tool and arguments, whitespace aside, to
// notice a model calling again for a result that was pruned.
func callSig(tool string, args json.RawMessage) string {
	var b bytes.Buffer
	b.WriteString(tool)
	b.WriteByte(0)
	if json.Compact(&b, args) != nil {
		b.Write(args)
	}
	return b.String()
}

// forget records that the results of x's calls left the prompt, with the
// class they had, for refetch detection.
func (c *Context) forget(r *callRec, k Class) {
	if c.cleared == nil {
		c.cleared = make(map[string]Class)
	}
	var args json.RawMessage
	for _, call := range r.caller.m.Calls {
		if call.ID == r.id {
			args = call.Args
			break
		}
	}
	key := callSig(r.tool, args)
	c.cleared[key] = max(c.cleared[key], k)
}

// complete marks a call's result closed.
func (c *Context) complete(r *callRec) {
	r.done = true
	delete(c.pending, r.id)
	c.answered[r.id] = r
	if r.pendingN {
		r.pendingN = false
		r.caller.unit.pending--
		c.nPending--
	}
}

// link appends x to the transcript and to unit u.
func (c *Context) link(x *msg, u *unit) {
	x.prev = c.tail
	if c.tail != nil {
		c.tail.next = x
	} else {
		c.head = x
	}
	c.tail = x
	c.byID[x.m.ID] = x
	x.unit = u
	u.members = append(u.members, x) // x has the highest seq
	u.tokens += x.m.Tokens
	if x.m.Pinned {
		u.pinned++
	}
	u.version++
	c.tokens += x.m.Tokens
}

// merge joins units a and b and returns the survivor. The absorbed unit
// is marked dead so that decisions naming it go stale.
func (c *Context) merge(a, b *unit) *unit {
	if a == b {
		return a
	}
	if len(a.members) < len(b.members) {
		a, b = b, a
	}
	for _, x := range b.members {
		x.unit = a
	}
	a.members = append(a.members, b.members...)
	slices.SortFunc(a.members, func(p, q *msg) int { return cmpSeq(p.seq, q.seq) })
	a.pending += b.pending
	a.open += b.open
	a.pinned += b.pinned
	a.tokens += b.tokens
	a.version++
	b.dead = true
	b.into = a
	b.members = nil
	return a
}

func cmpSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Write appends a chunk to an open message and adds tokens to its count.
// It fails with [ErrClosedMessage] if the message is not open and with
// [ErrUnknownMessage] if the Context does not hold it (for example because
// an unguarded prune removed it mid-stream).
func (c *Context) Write(id MessageID, chunk []byte, tokens int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	x, err := c.lookup("write", id)
	switch {
	case err != nil:
		return err
	case !x.open:
		return inputErr("write", string(id), ErrClosedMessage)
	case tokens < 0:
		return inputErr("write", string(id), ErrNegativeTokens)
	}
	x.m.Content = append(x.m.Content, chunk...)
	x.m.Tokens += tokens
	x.unit.tokens += tokens
	x.unit.version++
	c.tokens += tokens
	c.trackLarge(x)
	return nil
}

// Close ends the stream of an open message. Calls whose ids arrived only
// at the end of the stream may be given here; they become pending like
// the calls of an appended message. Closing a streamed result completes
// the calls it answers.
func (c *Context) Close(id MessageID, calls ...Call) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	x, err := c.lookup("close", id)
	switch {
	case err != nil:
		return err
	case !x.open:
		return inputErr("close", string(id), ErrClosedMessage)
	}
	seen := make(map[CallID]bool, len(calls))
	for _, call := range calls {
		if call.ID == "" {
			return inputErr("close", string(id), ErrEmptyID)
		}
		if _, busy := c.pending[call.ID]; busy || seen[call.ID] || slices.ContainsFunc(x.m.Calls, func(k Call) bool { return k.ID == call.ID }) {
			return inputErr("close", string(call.ID), ErrDuplicateCall)
		}
		seen[call.ID] = true
	}
	for _, call := range calls {
		x.m.Calls = append(x.m.Calls, call)
		c.addCall(x, call)
	}
	x.open = false
	x.unit.open--
	delete(c.open, x)
	for _, r := range x.results {
		c.complete(r)
	}
	x.unit.version++
	return nil
}

// Couple ties messages into one unit, so that they are kept or pruned
// together: a reasoning item with the calls that follow it, a user
// message with the tool results it carries alongside. Units already
// holding any of the messages are merged.
func (c *Context) Couple(ids ...MessageID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	xs := make([]*msg, 0, len(ids))
	for _, id := range ids {
		x, err := c.lookup("couple", id)
		if err != nil {
			return err
		}
		xs = append(xs, x)
	}
	if len(xs) < 2 {
		return nil
	}
	// Read each message's unit when merging it, not before: an id given
	// twice, or two ids of one unit, would otherwise merge a unit already
	// absorbed and count its tokens, pins and pending calls twice.
	u := xs[0].unit
	for _, x := range xs[1:] {
		u = c.merge(u, x.unit)
	}
	return nil
}

// Pin marks a message as never to be pruned (a system prompt, a user's
// one-time instruction). A unit holding a pinned message is never pruned.
func (c *Context) Pin(id MessageID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	x, err := c.lookup("pin", id)
	if err != nil {
		return err
	}
	if !x.m.Pinned {
		x.m.Pinned = true
		x.unit.pinned++
		x.unit.version++
	}
	return nil
}

// lookup returns the message with id, or the InputError of op naming it.
func (c *Context) lookup(op string, id MessageID) (*msg, error) {
	x, ok := c.byID[id]
	if !ok {
		return nil, inputErr(op, string(id), ErrUnknownMessage)
	}
	return x, nil
}

// Tokens reports the total token count of the messages the Context holds.
// It takes constant time and does not allocate.
func (c *Context) Tokens() int {
	c.mu.RLock()
	n := c.tokens
	c.mu.RUnlock()
	return n
}

// Len reports how many messages the Context holds.
func (c *Context) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.byID)
}

// Message returns a copy of the message with the given id.
func (c *Context) Message(id MessageID) (Message, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	x, ok := c.byID[id]
	if !ok {
		return Message{}, false
	}
	return x.copy(), true
}

func (x *msg) copy() Message {
	m := x.m
	m.Content = slices.Clone(m.Content)
	m.Calls = slices.Clone(m.Calls)
	m.Answers = slices.Clone(m.Answers)
	m.NeededBy = slices.Clone(m.NeededBy)
	return m
}

// Messages returns a copy of the transcript in order.
func (c *Context) Messages() []Message {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Message, 0, len(c.byID))
	for x := c.head; x != nil; x = x.next {
		out = append(out, x.copy())
	}
	return out
}

// Snapshot describes every message in transcript order, for a [Policy].
func (c *Context) Snapshot() []Entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Entry, 0, len(c.byID))
	for x := c.head; x != nil; x = x.next {
		out = append(out, x.entry())
	}
	return out
}

func (x *msg) entry() Entry {
	e := Entry{
		ID:      x.m.ID,
		Role:    x.m.Role,
		Tokens:  x.m.Tokens,
		Unit:    x.unit.id(),
		Calls:   len(x.m.Calls),
		Result:  len(x.results) > 0,
		Pinned:  x.m.Pinned,
		Open:    x.open,
		Pending: x.unit.pending > 0,
		Stubbed: x.stubbed,
	}
	for _, r := range x.calls {
		e.Tools = append(e.Tools, r.tool)
	}
	for _, r := range x.results {
		if !slices.Contains(e.Tools, r.tool) {
			e.Tools = append(e.Tools, r.tool)
		}
	}
	return e
}

// UnitOf describes the unit that holds message id.
func (c *Context) UnitOf(id MessageID) (Unit, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	x, ok := c.byID[id]
	if !ok {
		return Unit{}, false
	}
	return x.unit.describe(), true
}

// Units describes every unit in the order of its first message.
func (c *Context) Units() []Unit {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []Unit
	for x := c.head; x != nil; x = x.next {
		if x.unit.members[0] == x {
			out = append(out, x.unit.describe())
		}
	}
	return out
}

func (u *unit) describe() Unit {
	d := Unit{ID: u.id(), Open: u.open > 0, Pinned: u.pinned > 0, Tokens: u.tokens}
	for _, x := range u.members {
		d.Messages = append(d.Messages, x.m.ID)
		for _, r := range x.calls {
			if !r.done {
				d.Pending = append(d.Pending, r.id)
			}
		}
	}
	return d
}

// Pending returns the ids of calls still waiting for a complete result, in
// the order the calls were made.
func (c *Context) Pending() []CallID {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.pendingIDs()
}

func (c *Context) pendingIDs() []CallID {
	if c.nPending == 0 {
		return nil
	}
	rs := make([]*callRec, 0, len(c.pending))
	for _, r := range c.pending {
		if !r.done {
			rs = append(rs, r)
		}
	}
	return sortedCallIDs(rs)
}

// sortedCallIDs sorts calls in the order they were made and returns their
// ids.
func sortedCallIDs(rs []*callRec) []CallID {
	slices.SortFunc(rs, func(a, b *callRec) int {
		if d := cmpSeq(a.caller.seq, b.caller.seq); d != 0 {
			return d
		}
		return slices.Index(a.caller.calls, a) - slices.Index(b.caller.calls, b)
	})
	ids := make([]CallID, len(rs))
	for i, r := range rs {
		ids[i] = r.id
	}
	return ids
}

// OpenMessages returns the ids of messages still streaming, in order.
func (c *Context) OpenMessages() []MessageID {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.openIDs()
}

func (c *Context) openIDs() []MessageID {
	if len(c.open) == 0 {
		return nil
	}
	xs := make([]*msg, 0, len(c.open))
	for x := range c.open {
		xs = append(xs, x)
	}
	slices.SortFunc(xs, func(a, b *msg) int { return cmpSeq(a.seq, b.seq) })
	ids := make([]MessageID, len(xs))
	for i, x := range xs {
		ids[i] = x.m.ID
	}
	return ids
}

// Settled reports whether the Context is at a commit boundary: no call is
// pending and no message is streaming. It takes constant time.
func (c *Context) Settled() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.nPending == 0 && len(c.open) == 0
}

func (c *Context) trackLarge(x *msg) {
	if c.cfg.HoardTokens <= 0 {
		return
	}
	if x.m.Tokens >= c.cfg.HoardTokens && !x.stubbed {
		c.large[x] = struct{}{}
	} else {
		delete(c.large, x)
	}
}

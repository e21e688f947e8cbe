package pruneguard

import (
	"cmp"
	"sync"
)

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

	epoch uint64 // bumped when tools, steps or sealing change
	// shape is bumped when messages leave, results are stubbed or units
	// merge: the walks of a View stop when it changes under them.
	shape uint64

	// The tool results in transcript order, those not stubbed, and those
	// not stubbed by size, largest first: the orders a View walks.
	results, whole, bySize btree[*msg]

	// pipeline is what Prune runs; nil means the full one. Only tests
	// set it, to run the gates alone or without one of them.
	pipeline []stage
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
	evictMark  uint64
	stubMark   uint64
	classMark  uint64
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
	bySeq := func(a, b *msg) int { return cmpSeq(a.seq, b.seq) }
	c.results.cmp, c.whole.cmp = bySeq, bySeq
	c.bySize.cmp = func(a, b *msg) int {
		if a.m.Tokens != b.m.Tokens {
			return cmp.Compare(b.m.Tokens, a.m.Tokens)
		}
		return bySeq(a, b)
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

// Settled reports whether the Context is at a commit boundary: no call is
// pending and no message is streaming. It takes constant time.
func (c *Context) Settled() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.nPending == 0 && len(c.open) == 0
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

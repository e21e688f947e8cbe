package pruneguard

import (
	"cmp"
	"hash/maphash"
	"math"
	"slices"
	"sync"

	"github.com/pruneguard/pruneguard/internal/arena"
	"github.com/pruneguard/pruneguard/internal/btree"
	"github.com/pruneguard/pruneguard/internal/hashindex"
	"github.com/pruneguard/pruneguard/internal/lru"
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
// A Context keeps little beside what the caller gave it: a few dozen
// bytes per message beyond its id, content and call arguments, and the
// memory of a message that leaves is reused. Of the calls pruned it
// remembers only the 4,096 most recent (for [ErrPrunedCall] and
// [RefetchAlert]); it keeps the 1,024 latest refetch alerts until
// [Context.TakeAlerts] takes them, and the 64 latest ghost-tool episodes
// ([Context.Ghosts]).
//
// A Context also remembers the refusals the guards that check it met, so
// that later checks pass over them ([Context.Refusals]): the memory is the
// Context's, shared by every [Guard] on it, and [Context.Save] keeps it.
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
	pruneGen uint32 // the generation of the marks of messages
	tick     uint32 // the stamp of a pass over units

	// The transcript in order: messages by position, the calls they
	// emit, the units they form (linked oldest first from uhead), and the
	// bytes of ids, contents and arguments.
	msgs         arena.Arena[mrec]
	calls        arena.Arena[crec]
	units        arena.Arena[urec]
	text         arena.Slab
	uhead, utail int32
	live         int             // messages held
	dead         int             // message records of messages gone, until compaction
	tokens       int             // tokens held
	compactions  int             // compactions so far: older decisions are stale
	byID         hashindex.Index // message id -> position
	byCall       hashindex.Index // call id -> the latest call with it
	sides        []side
	freeSide     int32
	roles        []Role
	roleIdx      map[Role]uint8

	// readEnd is the position after the model's last message (an
	// assistant or reasoning message): the messages from there on have
	// not been shown to the model yet (see Context.Unread).
	readEnd int32

	gone     lru.Map[bool] // ids of the calls pruned last: abandoned?
	nPending int           // calls waiting for a closed result
	pend     []int32       // those calls
	open     []int32       // messages still streaming
	pins     []int32       // messages pinned

	tools   []toolRec
	toolIdx map[string]int32

	steps  map[StepID]*step
	sealed bool

	large map[int32]struct{} // messages at or above cfg.HoardTokens

	// cleared maps the signatures of the calls whose results were pruned
	// or stubbed last (see sigKey) to what the results were.
	cleared lru.Map[prunedResult]
	sigBuf  []byte // scratch for signatures, under mu
	ledger  ledger // what Apply pruned, not yet in gone and cleared

	// into names the unit that absorbed a unit merged away, until the
	// next compaction.
	into map[int32]int32

	epoch uint64 // bumped when tools, steps or sealing change
	// shape is bumped when messages leave, results are stubbed or units
	// merge: the walks of a View stop when it changes under them.
	shape uint64

	// The tool results by position, those not stubbed, and those not
	// stubbed by size, largest first: the orders a View walks.
	results, whole btree.Tree[int32]
	bySize         btree.Tree[sizeKey]

	// pipeline is what Prune runs; nil means the full one. Only tests
	// set it, to run the gates alone or without one of them.
	pipeline []stage

	// unsound lists the tools whose arguments or requiring messages stand
	// behind no schema (see toolRec.isUnsound); unsoundGen counts the
	// times a tool joined it, so that a decision made before goes stale.
	unsound    []int32
	unsoundGen uint64
	// toolTokens is what schemas and tombstones add to the tokens held.
	toolTokens int
	// lines holds, with Config.PointerTokens set, the distinct pointers
	// of the messages evicted: the pointer lines the runtime keeps.
	// lineTokens is what they add to the tokens held.
	lines      map[Pointer]struct{}
	lineTokens int
	// alerts waits for TakeAlerts; ghostLog holds the last ghost
	// episodes, openGhosts how many of them are open.
	alerts     []RefetchAlert
	ghostLog   []*ghostEpisode
	openGhosts int
	// reexp holds the schemas asked back, waiting for a Guard with a
	// Logger (LogReexpansion).
	reexp []reexpansion

	// mem is the Context's memory of the refusals its guards met
	// (guard_memory.go).
	mem refusalMemory
	// The marks of the latest mutating calls (regen_scope.go): of any
	// scope, of the empty scope, and per scope; those that touched all of
	// their scope (mut) and those that named their resources (res), with
	// the marks of the paths they named (resources.go).
	mutAny, mutAll int64
	resAny, resAll int64
	scopes         []scopeRec
	scopeIdx       map[string]int32
	paths          map[pathKey]pathMarks
}

// none marks a missing record in an int32 link.
const none = hashindex.None

// recentBound is how many pruned calls a Context remembers, by id for
// results that arrive too late and by signature for refetches.
const recentBound = 4096

// mrec is the record of one message: 48 bytes.
type mrec struct {
	text   arena.Ref // the id, then the content (in a side record while open)
	idLen  uint32    // the length of the id
	tokens int32     // or, with mBig, in the side record
	unit   int32
	nextM  int32  // the next member of the unit, in transcript order
	call   int32  // the first call the message emits, or none
	ans    int32  // the first call it answers, or none
	side   int32  // its side record plus one, or zero
	mark   uint32 // the marks of the prune in progress (see pruneRun)
	role   uint8  // in Context.roles; roleSide: in the side record
	class  Class  // the explicit class
	facts  Facts
	flags  uint8
}

// Flags of a message.
const (
	mDead        uint8 = 1 << iota // gone: the record waits for compaction
	mOpen                          // still streaming
	mStubbed                       // its content is the stub
	mPinned                        // pinned
	mBig                           // tokens beyond int32, in the side record
	mEmpty                         // its content is empty but not nil
	mLarge                         // in Context.large
	mNilNeededBy                   // NeededBy was given empty, not nil
)

// roleSide marks a role kept in the side record: the role table is full.
const roleSide = math.MaxUint8

// side holds the rare fields of a message.
type side struct {
	pointer  Pointer
	neededBy []StepID
	refs     int32  // planned steps that reference the message
	buf      []byte // the content of an open message
	tokens   int    // the token count, when it does not fit an int32
	role     Role
	next     int32      // the next free side record, plus one
	requires []int32    // the tools the message requires, by index
	isError  bool       // the message reports a failed call
	carries  []Pointer  // a summary's: the pointers it carries
	holds    []heldFact // a summary's: the facts of its run it carries
	counted  bool       // opened with no token count: the Counter counts it
}

// crec is the record of one call: 48 bytes.
type crec struct {
	text     arena.Ref // the id, then the arguments
	idLen    uint32    // the length of the id
	tool     int32
	caller   int32 // the message that emits the call
	result   int32 // the message that answers it (open or closed), or none
	sib      int32 // the caller's next call, or none
	nextAns  int32 // the next call its result answers, or none
	nextTool int32 // the next call to the same tool (by index), or none
	ver      uint32
	flags    uint8
}

// Flags of a call.
const (
	cDone     uint8 = 1 << iota // its result arrived and is closed
	cPending                    // counted in the unit's and the Context's pending totals
	cArgsNil                    // its arguments were nil
	cArgsMade                   // it counts in its tool's Args
	cGhost                      // made while its tool's schema was not shown whole
	cServer                     // the provider ran it; its result is in its caller
	cAbandon                    // declared never to be answered (with cDone)
)

// urec is the record of one unit: 40 bytes. A dead unit has no head.
type urec struct {
	head, tail int32 // its first and last members
	prev, next int32 // the units before and after it, by first member
	pending    int32
	open       int32
	pinned     int32
	version    uint32
	// Scratch of the Prune in progress, under Context.pruneMu: the stamp
	// of the pass and what the pass counts.
	mark uint32
	aux  int32
}

// NewContext returns an empty Context that uses cfg.
func NewContext(cfg Config) *Context {
	c := &Context{cfg: cfg}
	c.init()
	return c
}

func (c *Context) init() {
	if c.roleIdx != nil {
		return
	}
	seed := maphash.MakeSeed()
	c.byID = hashindex.New(seed, c.heldID)
	c.byCall = hashindex.New(seed, c.heldCallID)
	c.gone = lru.New[bool](recentBound)
	c.cleared = lru.New[prunedResult](recentBound)
	c.roles = []Role{""}
	c.roleIdx = map[Role]uint8{"": 0}
	c.toolIdx = make(map[string]int32)
	c.steps = make(map[StepID]*step)
	c.uhead, c.utail = none, none
	c.results = btree.New(cmp.Compare[int32])
	c.whole = btree.New(cmp.Compare[int32])
	c.bySize = btree.New(bySizeOrder)
}

// Config returns the configuration the Context was made with.
func (c *Context) Config() Config {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cfg
}

func (c *Context) msg(p int32) *mrec  { return c.msgs.At(p) }
func (c *Context) call(k int32) *crec { return c.calls.At(k) }
func (c *Context) unit(u int32) *urec { return c.units.At(u) }

// heldID returns the id of message p, or nil once it is gone. The hashindex.Index
// by id reads ids through it: after a decision whose compaction waits for
// the next Apply, the index still holds the messages it removed (see
// Context.Apply), and nil never matches an id.
func (c *Context) heldID(p int32) []byte {
	if c.msg(p).flags&mDead != 0 {
		return nil
	}
	return c.msgID(p)
}

// heldCallID returns the id of call k, or nil once the message that made
// it is gone: what heldID is to the index by id, for the index by call id.
func (c *Context) heldCallID(k int32) []byte {
	if r := c.call(k); r.caller == none || c.msg(r.caller).flags&mDead != 0 {
		return nil
	}
	return c.callID(k)
}

func (c *Context) msgID(p int32) []byte {
	x := c.msg(p)
	return c.text.Bytes(x.text)[:x.idLen]
}
func (c *Context) callID(k int32) []byte {
	r := c.call(k)
	return c.text.Bytes(r.text)[:r.idLen]
}

// id returns the id of message p.
func (c *Context) id(p int32) MessageID { return MessageID(c.msgID(p)) }

// unitID returns the id of unit u: the id of its first message.
func (c *Context) unitID(u int32) UnitID { return UnitID(c.msgID(c.unit(u).head)) }

// content returns the content of message p, not copied. A stubbed
// message keeps no content of its own but the chunks a stream wrote after
// its stub (only without the boundary gate).
func (c *Context) content(p int32) []byte {
	x := c.msg(p)
	if x.flags&mOpen != 0 {
		return c.sideOf(p).buf
	}
	b := c.text.Bytes(x.text)[x.idLen:]
	if len(b) == 0 && x.flags&mStubbed != 0 {
		b, _ = c.cfg.stub()
	}
	return b
}

// args returns the arguments of call k, not copied.
func (c *Context) args(k int32) []byte {
	r := c.call(k)
	if r.flags&cArgsNil != 0 {
		return nil
	}
	b := c.text.Bytes(r.text)[r.idLen:]
	if b == nil {
		b = []byte{}
	}
	return b
}

// tokensOf returns the token count of message p.
func (c *Context) tokensOf(p int32) int {
	x := c.msg(p)
	if x.flags&mBig != 0 {
		return c.sideOf(p).tokens
	}
	return int(x.tokens)
}

// setTokens sets the token count of message p, which must not be a tool
// result in Context.bySize.
func (c *Context) setTokens(p int32, n int) {
	x := c.msg(p)
	if n <= math.MaxInt32 {
		x.tokens = int32(n)
		x.flags &^= mBig
		return
	}
	x.tokens = math.MaxInt32 // for the order by size
	x.flags |= mBig
	c.side(p).tokens = n
}

// side returns the side record of message p, making one if needed.
func (c *Context) side(p int32) *side {
	x := c.msg(p)
	if x.side == 0 {
		if c.freeSide != 0 {
			x.side = c.freeSide
			c.freeSide = c.sides[x.side-1].next
			c.sides[x.side-1] = side{}
		} else {
			c.sides = append(c.sides, side{})
			x.side = int32(len(c.sides))
		}
	}
	return &c.sides[x.side-1]
}

// sideOf returns the side record of message p, or nil.
func (c *Context) sideOf(p int32) *side {
	if s := c.msg(p).side; s != 0 {
		return &c.sides[s-1]
	}
	return nil
}

// freeSideOf releases the side record of message p.
func (c *Context) freeSideOf(p int32) {
	x := c.msg(p)
	if x.side == 0 {
		return
	}
	c.sides[x.side-1] = side{next: c.freeSide}
	c.freeSide = x.side
	x.side = 0
}

// role returns the role of message p.
func (c *Context) role(p int32) Role {
	x := c.msg(p)
	if x.role == roleSide {
		return c.sideOf(p).role
	}
	return c.roles[x.role]
}

// internRole returns the index of r in the role table, or roleSide when
// the table is full.
func (c *Context) internRole(r Role) uint8 {
	if i, ok := c.roleIdx[r]; ok {
		return i
	}
	if len(c.roles) == roleSide {
		return roleSide
	}
	c.roles = append(c.roles, r)
	c.roleIdx[r] = uint8(len(c.roles) - 1)
	return uint8(len(c.roles) - 1)
}

// pointer returns the spill pointer of message p.
func (c *Context) pointer(p int32) Pointer {
	if s := c.sideOf(p); s != nil {
		return s.pointer
	}
	return Pointer{}
}

// refs returns how many planned steps reference message p.
func (c *Context) refs(p int32) int32 {
	if s := c.sideOf(p); s != nil {
		return s.refs
	}
	return 0
}

// result reports whether message p answers a call.
func (c *Context) isResult(p int32) bool { return c.msg(p).ans != none }

// carriesResult reports whether message p holds a tool's result: it
// answers a call, or carries a server call, whose result is inside it.
func (c *Context) carriesResult(p int32) bool {
	if c.isResult(p) {
		return true
	}
	for k := range c.callsOf(p) {
		if c.call(k).flags&cServer != 0 {
			return true
		}
	}
	return false
}

// find returns the position of the message with id.
func (c *Context) find(id MessageID) (int32, bool) { return c.byID.Find(string(id)) }

// lookup returns the message with id, or the InputError of op naming it.
func (c *Context) lookup(op string, id MessageID) (int32, error) {
	p, ok := c.find(id)
	if !ok {
		return none, inputErr(op, string(id), ErrUnknownMessage)
	}
	return p, nil
}

// Tokens reports the total token count of the messages the Context
// holds, plus, when Config.Counter is set, the tool schemas in the prompt
// and the tombstones that stand (see [ToolState.Tokens]), and, when
// Config.PointerTokens is set, one pointer line per distinct pointer of
// the messages evicted. It takes constant time and does not allocate.
func (c *Context) Tokens() int {
	c.mu.RLock()
	n := c.heldTokens()
	c.mu.RUnlock()
	return n
}

// heldTokens returns the tokens held, under a lock.
func (c *Context) heldTokens() int { return c.tokens + c.toolTokens + c.lineTokens }

// Len reports how many messages the Context holds: those in the prompt,
// not those evicted.
func (c *Context) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.live
}

// Settled reports whether the Context is at a commit boundary: no call is
// pending and no message is streaming. It takes constant time.
func (c *Context) Settled() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.nPending == 0 && len(c.open) == 0
}

// trackLarge keeps message p in Context.large while it may be hoarded:
// closed, at or above cfg.HoardTokens, neither stubbed nor pinned, and
// reconstructible as it is classed now ([Context.ClassOf]). It is called
// whenever one of these may change for p: when p is appended, closed,
// grows, is pinned, marked or stubbed, and when a registration changes
// how results are classed (retrackLarge). A message a later mutating call
// makes stale stays in until then; the walks of Context.large classify
// each message again and pass over what is no longer reconstructible.
func (c *Context) trackLarge(p int32) {
	if c.cfg.HoardTokens <= 0 {
		return
	}
	x := c.msg(p)
	in := x.flags&(mStubbed|mDead|mPinned|mOpen) == 0 && x.facts == 0 && c.tokensOf(p) >= c.cfg.HoardTokens &&
		(x.class == ClassUnset || x.class == Reconstructible) && c.classify(p) == Reconstructible
	switch {
	case in && x.flags&mLarge == 0:
		if c.large == nil {
			c.large = make(map[int32]struct{})
		}
		c.large[p] = struct{}{}
		x.flags |= mLarge
	case !in && x.flags&mLarge != 0:
		delete(c.large, p)
		x.flags &^= mLarge
	}
}

// retrackLarge judges every message again for Context.large, once a
// registration changed how the results of calls already made are
// classed. It costs time in proportion to the Context.
func (c *Context) retrackLarge() {
	if c.cfg.HoardTokens <= 0 {
		return
	}
	for u := c.uhead; u != none; u = c.unit(u).next {
		for p := range c.members(u) {
			c.trackLarge(p)
		}
	}
}

// callsOf walks the calls message p emits, in order.
func (c *Context) callsOf(p int32) func(func(int32) bool) {
	return func(yield func(int32) bool) {
		for k := c.msg(p).call; k != none; k = c.call(k).sib {
			if !yield(k) {
				return
			}
		}
	}
}

// answersOf walks the calls message p answers, in order.
func (c *Context) answersOf(p int32) func(func(int32) bool) {
	return func(yield func(int32) bool) {
		for k := c.msg(p).ans; k != none; k = c.call(k).nextAns {
			if !yield(k) {
				return
			}
		}
	}
}

// pendingCalls walks the calls waiting for a closed result.
func (c *Context) pendingCalls() func(func(int32) bool) {
	return func(yield func(int32) bool) {
		for _, k := range c.pend {
			if !yield(k) {
				return
			}
		}
	}
}

// unpend takes call k out of the pending totals.
func (c *Context) unpend(k int32) {
	r := c.call(k)
	if r.flags&cPending == 0 {
		return
	}
	r.flags &^= cPending
	c.unit(c.msg(r.caller).unit).pending--
	c.nPending--
	if i := slices.Index(c.pend, k); i >= 0 {
		c.pend[i] = c.pend[len(c.pend)-1]
		c.pend = c.pend[:len(c.pend)-1]
	}
}

package einoguard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/sessions"
)

// ErrBudget is returned by [New] for a configuration without a positive
// budget: a guard with no budget would prune everything it may.
var ErrBudget = errors.New("einoguard: budget must be positive")

// Config sets up a [Session]. It is a plain value, copied by [New].
// The zero Config is refused: Guard.Budget must be set.
type Config struct {
	// Guard is the guard run before each model call. Its Budget
	// (required), Trigger and Ceiling count the list the model is sent,
	// as Tokens counts it: stubs, pointer texts and the note included.
	// Policy nil means pruneguard.OldestFirst{}. Spill, when set, is
	// where the guard stores content before it evicts or stubs it: each
	// message as the eino message's JSON. A stubbed result whose content
	// was spilled carries the pointer's text, never the stub text, and
	// content spilled and evicted leaves a line with its pointer in the
	// note (see [Session]); the pointer texts are the Spiller's own when
	// it words them (a *spill.Spiller does), else spill.PointerText's.
	// With Spill set the model reads its content back with the recall
	// tool: declare [RecallTool] among the agent's tools (the session
	// registers its annotations itself when Tools does not name it). New
	// refuses a Guard that Guard.ValidateFor refuses.
	Guard pruneguard.Guard
	// Context configures the gates of the Context the session keeps (and
	// of each one it rebuilds): boundary and regenerability modes, stub
	// text. An empty StubText means pruneguard.DefaultStubText. A nil
	// Resolver means Guard.Spill, when set. A zero StubTokens is set to
	// what Tokens counts for a stubbed result, and, with Guard.Spill set,
	// a zero PointerTokens to what Tokens counts for the longest pointer
	// text, as a stubbed result's content or as a line of the note. A nil
	// Text gives the Context each message's text (its content and the
	// text of its parts), for the facts a summary must carry. A nil
	// SummaryCounter counts a summary as Tokens counts the message it is
	// sent as.
	Context pruneguard.Config
	// Tools are registered with the Context, for example from [Tools],
	// [ToolsWith], [ToolOf] or [ToolWith]. A tool the model calls that is
	// not among them takes MCP's defaults: it counts as mutating, with a
	// scope of everything, and its results are never cleared.
	Tools []pruneguard.Tool
	// Tokens counts a message's tokens; nil means [ApproxTokens]. It is
	// called once for each message when the session takes it in, and for
	// each stub, summary and note the session makes.
	Tokens func(*schema.Message) int
	// Facts, when set, marks what a message records that no re-run can
	// give back (a negative result, a one-time secret); such messages are
	// never pruned.
	Facts func(*schema.Message) pruneguard.Facts
	// OnReport, when set, is called after every pass of a hook with what
	// the session did, including errors a hook without an error result
	// (a MessageModifier) cannot return. It is called with the session's
	// lock held and must not call back into the session.
	OnReport func(context.Context, Report)
	// Sessions, when set, keeps the session's state in a store the
	// replicas of a fleet share, under SessionID, so that any replica
	// can serve the conversation's next call: each pass loads the state,
	// guards the list, and saves the state with the version it loaded
	// (see [Session.Prune]). New refuses Sessions without a valid
	// SessionID (sessions.ID makes one of a tenant and a conversation).
	Sessions sessions.Store
	// SessionID names the conversation in Sessions.
	SessionID string
	// Retries bounds the passes redone after another replica saved the
	// conversation first: the pass reloads its state and runs again. Zero
	// means [DefaultRetries]; a negative value redoes none.
	Retries int
	// FailOpen lets a pass whose store failed (down, holding state that
	// does not restore, or lost to other replicas past Retries) send a
	// list all the same: guarded by this session as it stands (or, when
	// the list does not continue it, rebuilt from the list), and not
	// saved; the store's error goes to Report.StoreErr and OnReport, and
	// the next pass loads the stored state again. The default, false,
	// fails such a pass closed: no list, a *[StoreError].
	FailOpen bool
}

// Report says what one pass of a [Session] did. Sessions make them; the
// zero Report describes a pass that took nothing in and did nothing.
type Report struct {
	// Taken is how many messages of the list were new to the session.
	Taken int
	// Rebuilt reports that the list did not extend what the session had
	// seen (it shrank, or a message before its end changed), so the
	// session started a new Context from the whole list.
	Rebuilt bool
	// Result is what the guard did: the tokens of the list as it would
	// have been sent before the check and as it is sent (Before and
	// After, counted with Config.Tokens), the decisions applied and the
	// refusals met on the way.
	Result pruneguard.Result
	// Evicted are the messages that left the model's view in this pass,
	// and Stubbed those whose content was replaced by a placeholder, as
	// the runtime gave them, each in transcript order.
	Evicted, Stubbed []*schema.Message
	// Refused pairs each refusal the guard met (Result.Refused, in the
	// same order) with the messages it named, as the runtime gave them.
	Refused []Refusal
	// Sent is the length of the list returned, note included.
	Sent int
	// Err is the error of the pass, if any (as Session.Prune returns it).
	Err error
	// StoreErr is the *StoreError of a pass that Config.FailOpen let
	// send a list the store did not keep; nil otherwise.
	StoreErr error
}

// Refusal is one refusal of the guard with the messages it kept in the
// prompt: a unit held back by the commit boundary, content the
// regenerability gate found irreducible, the latest user message under
// its planned step. Sessions make them in a [Report]; the zero Refusal
// names nothing.
type Refusal struct {
	Violation *pruneguard.Violation
	// Messages are the messages the violation names that the session
	// still holds, in the violation's order.
	Messages []*schema.Message
}

// Session keeps a pruneguard Context in step with the message list an
// eino runtime passes before each model call, guards it, and answers with
// the list to send: evicted messages gone, stubbed tool results carrying
// the stub text (or, spilled, their pointer's text), a summary in place
// of the run it replaces, and one note for the tombstones and pointer
// lines that stand.
//
// The session takes in only what is new. A list is new messages after
// one of two lists the session knows: every message it took in so far,
// evicted ones included (the raw history, as a MessageModifier and an adk
// agent at the start of a Run see it), or the list it last returned (its
// own answer, as a MessageRewriter or an adk middleware sees it). Each
// message of the known list must be the same *schema.Message or one of
// equal content (role, content, reasoning, parts, name, tool calls, call
// id, tool name and Extra: eino hands back copies), and the tool results
// of one parallel batch may come in another order; a copy then takes the
// place of the message it equals. Any other list (shorter, or with a
// message changed anywhere before its end) makes the session start a new
// Context from the whole list and prune it afresh, so the model is never
// sent a message as it was rather than as it is. Messages a runtime
// hands over are treated as immutable: a message edited in place after
// the session took it in is not seen again.
//
// Results pair with calls as in eino's lists: the tool messages right
// after an assistant message answer its calls, by ToolCallID (calls and
// results without ids in order). A call whose turn ended without its
// result is abandoned, so that it does not hold up every later prune;
// a result that answers no call waiting is kept, answering nothing, as
// the result of a tool nobody described.
//
// Every system message is pinned, and the latest user message is
// protected by a planned step until the next user message arrives, so the
// task the model is working on is never pruned.
//
// The note is one message the session adds for what stands in for
// content that left: a tombstone line for each tool whose schema a
// policy withdrew, and a line with the pointer of each spill whose
// content was evicted. It is a system message after the leading system
// messages, or, in a list that does not start with one, a user message
// put first: the session never adds a system message to a list that has
// none, which some models refuse. It counts toward the budget.
//
// A pass costs the messages it takes in, a comparison of the known list
// with the list given (a pointer each, and a hash of each copy), the
// guard's check, and one copy of the list it returns. A rebuild costs the
// whole list. The session keeps every message it took in, evicted ones
// included, to recognise the history.
//
// A Session is safe for concurrent use; passes are serialised. Sessions
// of several processes follow one conversation through a session store
// (Config.Sessions): each pass loads, guards and saves with
// compare-and-swap, so they take turns as one session would. One
// session follows one conversation: to share an agent between
// conversations, give each its own session with [WithSession].
// Create sessions with [New]; the zero Session is not usable.
type Session struct {
	cfg         Config
	seed        maphash.Seed
	stub        string                          // the stub text
	pointerText func(pruneguard.Pointer) string // how spill pointers are worded
	recall      bool                            // "recall" is the spill's recall tool

	mu  sync.Mutex
	c   *pruneguard.Context
	seq uint64
	// hist is every message taken in since the last reset, hist[k] the
	// message numbered k+1, and histHash the hash of each.
	hist     []*schema.Message
	histHash []uint64
	// shown is the model's view, in order, each message as sent, and live
	// what the session knows of each.
	shown  []*schema.Message
	live   []slot
	broken bool
	user   pruneguard.StepID               // the step protecting the latest user message
	wait   []waiting                       // the calls of the last assistant turn still waiting for a result
	sums   map[pruneguard.MessageID]uint64 // summary messages, by the number of their slot
	recent map[pruneguard.CallID]bool      // recall calls waiting for their result

	tombs    map[string]string    // tool name -> tombstone text
	lines    []pruneguard.Pointer // pointers of spilled content evicted, each once
	note     *schema.Message
	noteHash uint64
	noteTok  int
	lead     int // the leading system messages of the view
	sent     int // the tokens of the list as sent

	evicted, stubbed []seqMsg // what the pass under way took

	// With Config.Sessions: whether the state above is the stored
	// version, and which.
	held    bool
	version sessions.Version
}

// slot is what the session knows of one message of the model's view
// besides the message as sent: its number, the hash and tokens of the
// message as sent, and whether it is a summary. It holds no pointer, so
// that the garbage collector need not scan the view twice.
type slot struct {
	seq  uint64
	hash uint64
	tok  int
	sum  bool
}

// orig is the message at index i of the view as the runtime gave it (the
// one sent differs once stubbed), or the summary it is.
func (s *Session) orig(i int) *schema.Message {
	if s.live[i].sum {
		return s.shown[i]
	}
	return s.hist[s.live[i].seq-1]
}

// seqMsg is a message the runtime gave, with its number.
type seqMsg struct {
	seq uint64
	m   *schema.Message
}

// New returns a session for one conversation. It fails with [ErrBudget]
// when cfg.Guard.Budget is not positive, with the Context's error when a
// tool cannot be registered (an error matching [ErrToolInfo] for a tool
// named recall that is not read-only and closed-world while Guard.Spill
// is set), and with the *pruneguard.ConfigError of a guard or Context
// configuration that Guard.ValidateFor refuses.
func New(cfg Config) (*Session, error) {
	if cfg.Guard.Budget <= 0 {
		return nil, ErrBudget
	}
	if cfg.Sessions != nil && !sessions.ValidID(cfg.SessionID) {
		return nil, fmt.Errorf("%w: %q", ErrSessionID, cfg.SessionID)
	}
	if cfg.Tokens == nil {
		cfg.Tokens = ApproxTokens
	}
	cfg.Tools = slices.Clone(cfg.Tools)
	s := &Session{cfg: cfg, seed: maphash.MakeSeed(), stub: cfg.Context.StubText}
	if s.stub == "" {
		s.stub = pruneguard.DefaultStubText
	}
	if err := s.configureSpill(); err != nil {
		return nil, err
	}
	s.configureCounts()
	s.configureSummaries()
	if err := s.reset(); err != nil {
		return nil, err
	}
	if err := s.cfg.Guard.ValidateFor(s.c); err != nil {
		return nil, err
	}
	return s, nil
}

// SetBudget changes the budget of the guard the session runs, from its
// next pass on, for a runtime whose allowance changes as a conversation
// goes (another model, a window that grows with the turns). It fails with
// [ErrBudget], changing nothing, when budget is not positive, or when the
// guard would refuse it (above its Trigger or its Ceiling): then the
// error wraps the guard's *pruneguard.ConfigError too.
func (s *Session) SetBudget(budget int) error {
	if budget <= 0 {
		return ErrBudget
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.cfg.Guard
	g.Budget = budget
	if err := g.ValidateFor(s.c); err != nil {
		return fmt.Errorf("%w: %w", ErrBudget, err)
	}
	s.cfg.Guard.Budget = budget
	return nil
}

// reset starts a new, empty Context with the configured tools.
func (s *Session) reset() error {
	c := pruneguard.NewContext(s.cfg.Context)
	for _, t := range s.cfg.Tools {
		if err := c.RegisterTool(t); err != nil {
			return err
		}
	}
	s.c = c
	s.seq = 0
	clear(s.hist)
	s.hist, s.histHash = s.hist[:0], s.histHash[:0]
	clear(s.shown)
	s.shown = s.shown[:0]
	clear(s.live)
	s.live = s.live[:0]
	s.broken = false
	s.user = ""
	s.wait = s.wait[:0]
	clear(s.sums)
	clear(s.recent)
	clear(s.tombs)
	s.lines = nil
	s.note, s.noteTok, s.lead, s.sent = nil, 0, 0, 0
	return nil
}

// Tokens reports the tokens of the list the session last sent, as
// Config.Tokens counts them.
func (s *Session) Tokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// Tool returns the guard's record of a tool: whether its schema is still
// in the prompt, how often the model called it after it left, how often
// a cleared result was fetched again.
func (s *Session) Tool(name string) (pruneguard.ToolState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Tool(name)
}

// ResidentTools returns the tools of infos whose schema is still in the
// prompt, in their order. eino binds tools when an agent is built, so a
// runtime that passes tools per call (model.WithTools) filters them with
// this; the built-in policies withdraw no schema.
func (s *Session) ResidentTools(infos []*schema.ToolInfo) []*schema.ToolInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*schema.ToolInfo, 0, len(infos))
	for _, t := range infos {
		if st, ok := s.c.Tool(t.Name); ok && !st.Resident {
			continue
		}
		out = append(out, t)
	}
	return out
}

// Prune takes in what is new in msgs, brings the conversation under the
// budget if it safely can, and returns the list to send: a new slice that
// belongs to the caller. Neither msgs nor its messages are modified. A
// tool result that already carries the stub text (the session's own
// answer, passed back) counts as a stub. ctx governs the guard's spills,
// when Config.Guard has a Spill store (see pruneguard.Guard.CheckContext).
//
// Errors: an error matching pruneguard.ErrInvalidInput when msgs cannot
// be taken in (a nil message), with msgs returned as given; the next
// pass then rebuilds. A list a provider would refuse is guarded all the
// same (see [Session] for how results pair with calls). Otherwise the error is the guard's,
// with the list pruned as far as it went: a *pruneguard.CeilingError
// (its Tokens and Ceiling those of the list as sent), or the
// *pruneguard.InputError of a policy that named what the session does
// not hold.
//
// With Config.Sessions the pass runs on the conversation's stored state
// and is saved with the version loaded, redone on the state another
// replica saved first (see [DefaultRetries]). When the store fails, or
// its state does not restore, Prune sends nothing: it returns no list
// and a *[StoreError] (or, with Config.FailOpen, the list the session
// guards, unsaved, the error in Report.StoreErr); the session reloads
// on its next pass. Read the
// session's state (Tokens, Tool) after a pass: between passes another
// replica may have moved the conversation on.
func (s *Session) Prune(ctx context.Context, msgs []*schema.Message) ([]*schema.Message, Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var (
		r   Report
		out []*schema.Message
		err error
	)
	if s.cfg.Sessions != nil {
		out, err = s.stored(ctx, msgs, &r)
	} else {
		out, err = s.pass(ctx, msgs, &r)
	}
	r.Err = err
	r.Sent = len(out)
	if s.cfg.OnReport != nil {
		s.cfg.OnReport(ctx, r)
	}
	return out, r, err
}

func (s *Session) pass(ctx context.Context, msgs []*schema.Message, r *Report) ([]*schema.Message, error) {
	fresh, ok := s.match(msgs)
	if !ok {
		r.Rebuilt = true
		if err := s.reset(); err != nil {
			return msgs, err
		}
		fresh = msgs
	}
	s.evicted, s.stubbed = s.evicted[:0], s.stubbed[:0]
	if err := s.take(fresh, r); err != nil {
		s.broken = true
		return msgs, err
	}
	s.fixNote()
	res, err := s.guard(ctx)
	r.Result = res
	r.Stubbed, r.Evicted = inOrder(s.stubbed), inOrder(s.evicted)
	for _, v := range res.Refused {
		rf := Refusal{Violation: v}
		for _, id := range v.Messages {
			if i, ok := s.find(id); ok {
				rf.Messages = append(rf.Messages, s.orig(i))
			}
		}
		r.Refused = append(r.Refused, rf)
	}
	return s.view(), err
}

// inOrder returns the messages of ms in transcript order, or nil.
func inOrder(ms []seqMsg) []*schema.Message {
	if len(ms) == 0 {
		return nil
	}
	slices.SortStableFunc(ms, func(a, b seqMsg) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]*schema.Message, len(ms))
	for i, x := range ms {
		out[i] = x.m
	}
	return out
}

// take appends fresh messages to the Context and the view, pairing
// results with calls as the list's order says (see pair).
func (s *Session) take(fresh []*schema.Message, r *Report) error {
	for _, m := range fresh {
		if m == nil {
			return &pruneguard.InputError{Op: "einoguard: nil message", Err: pruneguard.ErrEmptyID}
		}
		s.seq++
		id := messageID(s.seq)
		tokens := s.cfg.Tokens(m)
		counted := tokens
		if m.Role == schema.Tool && m.Content == s.stub {
			counted = min(tokens, s.cfg.Context.StubTokens)
		}
		e := Event(m, id, counted)
		if s.cfg.Facts != nil {
			e.Facts = s.cfg.Facts(m)
		}
		if err := s.pair(m, &e); err != nil {
			return err
		}
		s.recallClass(&e)
		var step pruneguard.StepID
		if m.Role == schema.User {
			step = pruneguard.StepID("user:" + string(id))
			e.NeededBy = []pruneguard.StepID{step}
		}
		if err := s.c.Append(e); err != nil {
			return err
		}
		if step != "" {
			if s.user != "" {
				if err := s.c.CompleteStep(s.user); err != nil {
					return err
				}
			}
			s.user = step
		}
		h := hashMessage(s.seed, m)
		s.hist, s.histHash = append(s.hist, m), append(s.histHash, h)
		s.shown = append(s.shown, m)
		s.live = append(s.live, slot{seq: s.seq, hash: h, tok: tokens})
		s.sent += tokens
		r.Taken++
	}
	return nil
}

// findSeq locates the slot of number n.
func (s *Session) findSeq(n uint64) (int, bool) {
	return slices.BinarySearchFunc(s.live, n, func(sl slot, n uint64) int { return cmp.Compare(sl.seq, n) })
}

// find locates a message of the view by id.
func (s *Session) find(id pruneguard.MessageID) (int, bool) {
	if n, ok := s.sums[id]; ok {
		i, ok := s.findSeq(n)
		return i, ok && s.live[i].sum
	}
	n, ok := seqOf(id)
	if !ok {
		return 0, false
	}
	i, ok := s.findSeq(n)
	return i, ok && !s.live[i].sum
}

package einoguard

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
)

// ErrBudget is returned by [New] for a configuration without a positive
// budget: a guard with no budget would prune everything it may.
var ErrBudget = errors.New("einoguard: budget must be positive")

// Config sets up a [Session]. It is a plain value, copied by [New].
// The zero Config is refused: Guard.Budget must be set.
type Config struct {
	// Guard is the guard run before each model call: its Budget
	// (required), Ceiling, Policy (nil means pruneguard.OldestFirst{}) and
	// Split. With its Summarizer set, a pass compacts before it evicts:
	// the summary is a user message in the place of the messages it
	// replaces (see Report.Summaries), and the facts it must carry are
	// read from those messages' content, unless Context.Text is set.
	Guard pruneguard.Guard
	// Context configures the gates of the Context the session keeps (and
	// of each one it rebuilds): boundary and regenerability modes, spill
	// resolver, stub text. An empty StubText means
	// pruneguard.DefaultStubText.
	Context pruneguard.Config
	// Tools are registered with the Context, for example from [Tools] or
	// [ToolOf]. A tool the model calls that is not among them takes MCP's
	// defaults: it counts as mutating and its results are never cleared.
	Tools []pruneguard.Tool
	// Tokens counts a message's tokens; nil means [ApproxTokens]. It is
	// called once for each message, when the session takes it in.
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
	// Result is what the guard's check did: tokens before and after, the
	// decisions applied and the refusals met on the way.
	Result pruneguard.Result
	// Evicted are the messages that left the model's view in this pass,
	// and Stubbed those whose content was replaced by a placeholder, as
	// the runtime gave them, each in transcript order.
	Evicted, Stubbed []*schema.Message
	// Summaries are the summary messages this pass put in the view, with
	// Config.Guard.Summarizer set: each a user message holding the
	// summary's text, in the place of the first of the messages it
	// replaced (which Evicted lists).
	Summaries []*schema.Message
	// Refused pairs each refusal the guard met (Result.Refused, in the
	// same order) with the messages it named, as the runtime gave them.
	Refused []Refusal
	// Sent is the length of the list returned, tombstone note included.
	Sent int
	// Err is the error of the pass, if any (as Session.Prune returns it).
	Err error
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

// slot is one message of the model's view: the message as sent, the one
// the runtime gave (they differ once stubbed) and its number.
type slot struct {
	seq  uint64
	sent *schema.Message
	orig *schema.Message
}

// mark remembers a list the session has aligned with: its length and its
// first and last messages.
type mark struct {
	n           int
	first, last *schema.Message
}

func markOf(msgs []*schema.Message) mark {
	if len(msgs) == 0 {
		return mark{}
	}
	return mark{n: len(msgs), first: msgs[0], last: msgs[len(msgs)-1]}
}

// prefixOf reports whether msgs extends the list k remembers. The first
// message may be a new pointer to an equal system message, as eino's adk
// agents build the instruction afresh on each run.
func (k mark) prefixOf(msgs []*schema.Message) bool {
	if k.n == 0 || len(msgs) < k.n || msgs[k.n-1] != k.last {
		return false
	}
	f := msgs[0]
	return f == k.first || (f != nil && f.Role == schema.System && k.first.Role == schema.System &&
		f.Content == k.first.Content && len(f.MultiContent) == 0 && len(k.first.MultiContent) == 0 &&
		len(f.UserInputMultiContent) == 0 && len(k.first.UserInputMultiContent) == 0)
}

// Session keeps a pruneguard Context in step with the message list an
// eino runtime passes before each model call, guards it, and answers with
// the list to send: evicted messages gone, stubbed tool results carrying
// the stub text, and tombstones (when a policy withdraws schemas) in one
// system message after the leading system messages.
//
// The session takes in only what is new. A list that extends the last
// list it was given (the raw history, as a MessageModifier sees it) or the
// last list it returned (its own pruned view plus new messages, as a
// MessageRewriter or an adk middleware sees it) is recognised in constant
// time by its length and its first and last *schema.Message pointers; any
// other list (shorter, or changed before its end) makes the session start
// a new Context from the whole list and prune it afresh. Messages a
// runtime hands over are treated as immutable: a message edited in place
// after the session took it in is not seen again.
//
// Every system message is pinned, and the latest user message is
// protected by a planned step until the next user message arrives, so the
// task the model is working on is never pruned. The tombstone note is not
// counted toward the budget.
//
// A pass costs the messages it takes in, the guard's check, and one copy
// of the list it returns. A rebuild costs the whole list. eino's adk
// agents build their state afresh on each Run from the history the caller
// passes, and their events carry copies of tool results, so a session
// behind an adk middleware rebuilds once at the start of each Run and then
// follows the Run incrementally.
//
// A Session is safe for concurrent use; passes are serialised. One
// session follows one conversation: to share an agent between
// conversations, give each its own session with [WithSession].
// Create sessions with [New]; the zero Session is not usable.
type Session struct {
	cfg Config

	mu      sync.Mutex
	c       *pruneguard.Context
	seq     uint64
	live    []slot
	in, out mark
	broken  bool
	user    pruneguard.StepID // the step protecting the latest user message
	anon    []pruneguard.CallID
	tombs   map[string]string // tool name -> tombstone text
	note    *schema.Message
	// sums holds the number of each summary's place in the view, by the
	// summary's id.
	sums map[pruneguard.MessageID]uint64

	stub       string // the stub text and its tokens
	stubTokens int
}

// New returns a session for one conversation. It fails with [ErrBudget]
// when cfg.Guard.Budget is not positive, and with the Context's error when
// a tool cannot be registered.
func New(cfg Config) (*Session, error) {
	if cfg.Guard.Budget <= 0 {
		return nil, ErrBudget
	}
	if cfg.Tokens == nil {
		cfg.Tokens = ApproxTokens
	}
	cfg.Tools = slices.Clone(cfg.Tools)
	s := &Session{cfg: cfg, stub: cfg.Context.StubText, stubTokens: cfg.Context.StubTokens}
	if cfg.Guard.Summarizer != nil && cfg.Context.Text == nil {
		// The guard sees no content (see Event): the facts a summary
		// must carry are read from the messages the session holds.
		s.cfg.Context.Text = pruneguard.TextFunc(s.text)
	}
	if s.stub == "" {
		s.stub = pruneguard.DefaultStubText
	}
	if s.stubTokens <= 0 {
		s.stubTokens = pruneguard.DefaultStubTokens
	}
	if err := s.reset(); err != nil {
		return nil, err
	}
	return s, nil
}

// SetBudget changes the budget of the guard the session runs, from its
// next pass on, for a runtime whose allowance changes as a conversation
// goes (another model, a window that grows with the turns). It fails with
// [ErrBudget], changing nothing, when budget is not positive.
func (s *Session) SetBudget(budget int) error {
	if budget <= 0 {
		return ErrBudget
	}
	s.mu.Lock()
	s.cfg.Guard.Budget = budget
	s.mu.Unlock()
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
	s.live = s.live[:0]
	s.in, s.out = mark{}, mark{}
	s.broken = false
	s.user = ""
	s.anon = s.anon[:0]
	clear(s.tombs)
	clear(s.sums)
	s.note = nil
	return nil
}

// Tokens reports the tokens of the session's current view, as its Context
// counts them.
func (s *Session) Tokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Tokens()
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
// Errors: an error matching pruneguard.ErrInvalidInput when msgs is not a
// well-formed conversation (a nil message, a tool result for a call it
// does not hold, a second result for one call), with msgs returned as
// given; the next pass then rebuilds. Otherwise the error is the guard's,
// with the list pruned as far as it went: a *pruneguard.CeilingError, or
// the *pruneguard.InputError of a policy that named what the session does
// not hold.
func (s *Session) Prune(ctx context.Context, msgs []*schema.Message) ([]*schema.Message, Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r Report
	out, err := s.pass(ctx, msgs, &r)
	r.Err = err
	r.Sent = len(out)
	if s.cfg.OnReport != nil {
		s.cfg.OnReport(ctx, r)
	}
	return out, r, err
}

func (s *Session) pass(ctx context.Context, msgs []*schema.Message, r *Report) ([]*schema.Message, error) {
	var fresh []*schema.Message
	switch {
	case s.broken:
	case len(s.live) == 0 && s.in.n == 0 && s.out.n == 0:
		fresh = msgs
	case s.in.prefixOf(msgs):
		fresh = msgs[s.in.n:]
	case s.out.prefixOf(msgs):
		fresh = msgs[s.out.n:]
	default:
		s.broken = true
	}
	if s.broken {
		if err := s.reset(); err != nil {
			return msgs, err
		}
		r.Rebuilt = true
		fresh = msgs
	}
	s.in = markOf(msgs)
	if err := s.take(fresh, r); err != nil {
		s.broken = true
		return msgs, err
	}
	res, err := s.cfg.Guard.CheckContext(ctx, s.c)
	r.Result = res
	s.apply(res.Decisions, r)
	for _, v := range res.Refused {
		rf := Refusal{Violation: v}
		for _, id := range v.Messages {
			if i, ok := s.find(id); ok {
				rf.Messages = append(rf.Messages, s.live[i].orig)
			}
		}
		r.Refused = append(r.Refused, rf)
	}
	out := s.view()
	s.out = markOf(out)
	return out, err
}

// take appends fresh messages to the Context and the view. Calls without
// an id get one made from the message's; tool results without a call id
// answer the oldest such call still unanswered.
func (s *Session) take(fresh []*schema.Message, r *Report) error {
	for _, m := range fresh {
		if m == nil {
			return &pruneguard.InputError{Op: "einoguard: nil message", Err: pruneguard.ErrEmptyID}
		}
		s.seq++
		id := messageID(s.seq)
		tokens := s.cfg.Tokens(m)
		if m.Role == schema.Tool && m.Content == s.stub {
			tokens = min(tokens, s.stubTokens)
		}
		e := Event(m, id, tokens)
		if s.cfg.Facts != nil {
			e.Facts = s.cfg.Facts(m)
		}
		var anon []pruneguard.CallID
		for i := range e.Calls {
			if e.Calls[i].ID == "" {
				e.Calls[i].ID = pruneguard.CallID(string(id) + "." + strconv.Itoa(i))
				anon = append(anon, e.Calls[i].ID)
			}
		}
		popped := m.Role == schema.Tool && m.ToolCallID == "" && len(s.anon) > 0
		if popped {
			e.Answers[0] = s.anon[0]
		}
		var step pruneguard.StepID
		if m.Role == schema.User {
			step = pruneguard.StepID("user:" + string(id))
			e.NeededBy = []pruneguard.StepID{step}
		}
		if err := s.c.Append(e); err != nil {
			return err
		}
		if popped {
			s.anon = s.anon[1:]
		}
		s.anon = append(s.anon, anon...)
		if step != "" {
			if s.user != "" {
				if err := s.c.CompleteStep(s.user); err != nil {
					return err
				}
			}
			s.user = step
		}
		s.live = append(s.live, slot{seq: s.seq, sent: m, orig: m})
		r.Taken++
	}
	return nil
}

// apply mirrors applied decisions in the view and lists in r what they
// took.
func (s *Session) apply(ds []*pruneguard.Decision, r *Report) {
	var stubbed, evicted []int
	var replaced map[int]*schema.Message // where a summary went, what was there
	for _, d := range ds {
		if d.Summary != nil {
			if replaced == nil {
				replaced = map[int]*schema.Message{}
			}
			evicted = s.summarize(d, evicted, replaced, r)
			continue
		}
		for _, id := range d.Stub {
			if i, ok := s.find(id); ok {
				sl := &s.live[i]
				sl.sent = Stub(sl.orig, s.stub)
				stubbed = append(stubbed, i)
			}
		}
		for _, id := range d.Evict {
			if i, ok := s.find(id); ok {
				evicted = append(evicted, i)
			}
		}
		for _, t := range d.Tombstones {
			if s.tombs == nil {
				s.tombs = make(map[string]string)
			}
			s.tombs[t.Tool] = t.Text
			s.note = nil
		}
		for _, t := range d.Retire {
			delete(s.tombs, t)
			s.note = nil
		}
	}
	for t := range s.tombs {
		if st, ok := s.c.Tool(t); !ok || !st.Tombstoned {
			delete(s.tombs, t)
			s.note = nil
		}
	}
	if len(stubbed) > 0 {
		slices.Sort(stubbed)
		r.Stubbed = make([]*schema.Message, len(stubbed))
		for k, i := range stubbed {
			r.Stubbed[k] = s.live[i].orig
		}
	}
	s.evict(evicted, replaced, r)
}

// evict takes the messages at evicted out of the view and lists in
// r.Evicted, in transcript order, what left: those, and what was where
// a summary stands now (replaced).
func (s *Session) evict(evicted []int, replaced map[int]*schema.Message, r *Report) {
	gone := make(map[int]bool, len(evicted))
	for _, i := range evicted {
		gone[i] = true
	}
	all := slices.Clone(evicted)
	for i := range replaced {
		if !gone[i] {
			all = append(all, i)
		}
	}
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	all = slices.Compact(all)
	r.Evicted = make([]*schema.Message, len(all))
	for k, i := range all {
		r.Evicted[k] = s.live[i].orig
		if orig, ok := replaced[i]; ok {
			r.Evicted[k] = orig
		}
		if gone[i] {
			s.live[i].sent = nil
		}
	}
	if len(evicted) > 0 {
		cut := slices.Min(evicted)
		kept := slices.DeleteFunc(s.live[cut:], func(sl slot) bool { return sl.sent == nil })
		s.live = s.live[:cut+len(kept)]
	}
}

// summarize puts the summary of decision d in the place of the first
// message it replaces, as a user message, and returns evicted with the
// others it replaces added.
func (s *Session) summarize(d *pruneguard.Decision, evicted []int, replaced map[int]*schema.Message, r *Report) []int {
	first := -1
	var gone []int
	for _, id := range d.Evict {
		if i, ok := s.find(id); ok {
			gone = append(gone, i)
			if first < 0 || i < first {
				first = i
			}
		}
	}
	if first < 0 {
		return evicted
	}
	for _, i := range gone {
		if i != first {
			evicted = append(evicted, i)
		}
	}
	sl := &s.live[first]
	if _, ok := replaced[first]; !ok {
		replaced[first] = sl.orig
	}
	msg := schema.UserMessage(d.Summary.Text)
	sl.sent, sl.orig = msg, msg
	for id, n := range s.sums {
		if n == sl.seq {
			delete(s.sums, id)
		}
	}
	if s.sums == nil {
		s.sums = make(map[pruneguard.MessageID]uint64)
	}
	s.sums[d.Summary.ID] = sl.seq
	r.Summaries = append(r.Summaries, msg)
	return evicted
}

// text returns the text of the message with id as the model reads it:
// its content and the text of its multimodal parts, one line apart. The
// guard calls it during a pass, with the session's lock held.
func (s *Session) text(id pruneguard.MessageID) []byte {
	i, ok := s.find(id)
	if !ok {
		return nil
	}
	m := s.live[i].orig
	parts := []string{m.Content}
	for _, p := range m.MultiContent {
		parts = append(parts, p.Text)
	}
	for _, p := range m.UserInputMultiContent {
		parts = append(parts, p.Text)
	}
	for _, p := range m.AssistantGenMultiContent {
		parts = append(parts, p.Text)
	}
	return []byte(strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), "\n"))
}

// find locates a message of the view by id.
func (s *Session) find(id pruneguard.MessageID) (int, bool) {
	n, ok := seqOf(id)
	if !ok {
		n, ok = s.sums[id]
	}
	if !ok {
		return 0, false
	}
	return slices.BinarySearchFunc(s.live, n, func(sl slot, n uint64) int {
		switch {
		case sl.seq < n:
			return -1
		case sl.seq > n:
			return 1
		}
		return 0
	})
}

// view builds the list to send.
func (s *Session) view() []*schema.Message {
	lead := 0
	for lead < len(s.live) && s.live[lead].sent.Role == schema.System {
		lead++
	}
	n := len(s.live)
	if len(s.tombs) > 0 {
		n++
	}
	out := make([]*schema.Message, 0, n)
	for _, sl := range s.live[:lead] {
		out = append(out, sl.sent)
	}
	if len(s.tombs) > 0 {
		if s.note == nil {
			s.note = schema.SystemMessage(s.noteText())
		}
		out = append(out, s.note)
	}
	for _, sl := range s.live[lead:] {
		out = append(out, sl.sent)
	}
	return out
}

// noteText joins the tombstones, one line each, sorted by tool.
func (s *Session) noteText() string {
	names := make([]string, 0, len(s.tombs))
	for t := range s.tombs {
		names = append(names, t)
	}
	slices.Sort(names)
	var b strings.Builder
	for i, t := range names {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s.tombs[t])
	}
	return b.String()
}

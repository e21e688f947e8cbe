package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pruneguard/pruneguard"
)

// ErrSessionConfig is matched (with errors.Is) by the error [NewSession]
// returns for a configuration it refuses. When Guard.Validate or
// Config.Validate refused it, the error wraps their
// *pruneguard.ConfigError too.
var ErrSessionConfig = errors.New("wire: invalid session configuration")

// SessionConfig configures a [Session]. It is a plain value, copied by
// NewSession. Dialect and a positive Guard.Budget are required; every
// other zero value is a working default, documented on its field.
type SessionConfig struct {
	// Dialect is the provider format of the messages fed and of the body
	// the session answers with. Required.
	Dialect Dialect
	// Guard prunes the history. Its Budget and the session's Trigger
	// are two numbers, easily taken for one: Guard.Budget, required, is
	// the level a prune cuts the request down to, and Trigger (below, or
	// Guard.Trigger) is the window, the size above which a request is
	// pruned at all; with no Trigger the Budget is both. Both count the
	// whole request body (history, system prompt, tools and settings, as
	// Config.Counter counts them). Its Ceiling, when positive, is the hard limit on the whole
	// body: above it, with nothing more safely prunable, the request is
	// refused with a *pruneguard.CeilingError. Its Trigger and MinClear,
	// when set, count the whole body too and stand for the session's
	// Trigger and MinClear below (give one or the other, or the same
	// value). Its Policy proposes what to prune; nil means
	// pruneguard.OldestFirst. Its Screen, when set, is asked about each
	// decision after the session's own provider-rule screen passed it.
	// Its Summarizer, when set, makes a triggered request compact before
	// it evicts: a run of the oldest whole units that may go (never the
	// turn the session keeps whole) is replaced by one summary message,
	// written in the dialect's form (see the package documentation,
	// "Summaries"), reported in Report.Summarized and logged (LogSummary);
	// with a Spiller, the run is spilled first and the summary carries
	// its pointer, and a pruneguard.Digest without a PointerText words
	// it as the Spiller does. Its Spill must be nil: set Spiller instead.
	// Its other fields work as in pruneguard.Guard.
	Guard pruneguard.Guard
	// Trigger is the window: the token count of the whole body above
	// which a prune runs, which then cuts the body down to Guard.Budget. Zero means Guard.Trigger, or else Guard.Budget: prune whenever
	// the request is over budget. A Trigger above the budget keeps the
	// provider's prompt cache: requests at or under it are sent as the
	// last prune left them, so consecutive requests share their pruned
	// prefix, and a prune, once triggered, goes down to the budget. It
	// must not be below Guard.Budget.
	Trigger int
	// MinClear is the least number of tokens a prune frees, when the
	// history holds that many that may safely go: a prune that the budget
	// alone would keep small goes further, so that prunes, and the cache
	// misses they cause, come seldom. Zero means Guard.MinClear, or else,
	// with a Spiller, a quarter of Guard.Budget (every prune that spills
	// adds a pointer line to the prompt: prunes that each free a little
	// would fill it with lines), and no minimum without one. It must not
	// be negative.
	MinClear int
	// Config configures the session's pruneguard.Context. Its Counter
	// counts tokens (nil means [pruneguard.ApproxCounter], and the
	// Context is given it): each message once, as its JSON, when it is
	// fed, and the rest of the body; the Context counts with it the tool
	// schemas it holds and the tombstone lines that stand. A zero
	// StubTokens is set to the Counter's count of the stub text plus a
	// small allowance for the result's envelope; a blank StubText is
	// refused.
	Config pruneguard.Config
	// Manifest, if set, supplies annotations (and schemas for tools the
	// request declares without one) and scopes by tool name, as in
	// [Options]. NewSession reads it: later changes to it are not seen.
	// A manifest that lists a tool twice is refused.
	Manifest *Manifest
	// Unannotated says how tools without annotations are treated, as in
	// [Options].
	Unannotated Unannotated
	// Spiller, if set, lets the session spill before it evicts: it is
	// the guard's spill store (see pruneguard.Guard.Spill). When the
	// regenerability gate refuses a unit, or a result's stub, only
	// because its content cannot be obtained again, the guard writes the
	// messages (their provider JSON, as fed) to the Spiller, records
	// their pointers on the Context and prunes again; what then goes
	// leaves a line with its pointer in the system prompt, and a spilled
	// result that is stubbed carries the pointer's text. The lines never
	// make a system prompt the request does not have: without one, what
	// would need a line stays, refused with CodeNoPointerPlace. Once the
	// lines cost more than an eighth of the budget they fold: they are
	// spilled as a segment of their own, and one line naming it stands
	// for them. A failed spill (a store that cannot be written) is
	// reported in Report.Result.SpillErrors, and its unit stays. A
	// segment written for a decision the screen then refused is
	// discarded ([pruneguard.Discarder]) and not reported. The
	// Spiller also resolves the pointers, so Config.Resolver must be nil.
	// Pointer texts are the Spiller's own, as for [Options].Spiller.
	// When Config.PointerTokens is zero it is set to the Counter's count
	// of the Spiller's longest pointer line, so that the guard's rounds
	// count the lines and pointer texts they add. Content a planned step
	// names is never spilled. *spill.Spiller is one. Nil means nothing is
	// spilled.
	//
	// The pointer's text tells the model to call the recall tool, which
	// the session does not add to the body: the runtime declares it among
	// the request's tools ([RecallTool] gives its declaration in each
	// dialect) and answers its calls with [spill.Spiller.HandleRecall].
	// With a *spill.Spiller, the session gives the tool of that name the
	// annotations of [spill.RecallTool] (read-only, closed-world) unless
	// the manifest or the request annotates it, so that its answers are
	// reconstructible and never spilled again.
	//
	// A message appended with its Pointer set ([Session.AppendMessage])
	// counts as spilled once the Spiller resolves the pointer, which it
	// answers from memory: verify such a pointer first
	// ([spill.Spiller.Verify]).
	Spiller pruneguard.Spiller
	// Logger, if set, receives the records of each check that ran, as a
	// pruneguard.Guard's Logger does (see the pruneguard package's
	// LogCheck): one per applied decision, spill, failed spill and
	// refusal, with status "in_progress", then one LogCheck record that
	// ends the check ("completed", "cancelled" or "failed"), every one
	// with "compaction" (Report.Result.Compaction) and "status", so that
	// they map onto the Agent Client Protocol's compaction updates. Their
	// numbers are the session's: the whole body's tokens, the budget,
	// trigger and ceiling as configured. No record carries any content.
	// Nil means Guard.Logger; with neither, nothing is logged. Guard.Logger
	// gets the same records (when Logger is nil), and the refetch and
	// re-expansion records of the pruneguard package in any case.
	Logger *slog.Logger
}

// Spiller is the store a [Session] or a [Guarded] spills to: the core's
// [pruneguard.Spiller].
//
// Deprecated: use [pruneguard.Spiller], the same interface.
type Spiller = pruneguard.Spiller

// validate refuses configurations that make no sense.
func (cfg SessionConfig) validate() error {
	switch {
	case historyKeyOf(cfg.Dialect) == "":
		return fmt.Errorf("%w: unknown dialect %q", ErrSessionConfig, string(cfg.Dialect))
	case cfg.Guard.Budget <= 0:
		return fmt.Errorf("%w: Guard.Budget must be positive: a session with no budget would prune everything it may", ErrSessionConfig)
	case cfg.Trigger != 0 && cfg.Trigger < cfg.Guard.Budget:
		return fmt.Errorf("%w: Trigger %d is below Guard.Budget %d", ErrSessionConfig, cfg.Trigger, cfg.Guard.Budget)
	case cfg.MinClear < 0:
		return fmt.Errorf("%w: MinClear %d is negative", ErrSessionConfig, cfg.MinClear)
	case cfg.Guard.Ceiling < 0:
		return fmt.Errorf("%w: Guard.Ceiling %d is negative", ErrSessionConfig, cfg.Guard.Ceiling)
	case cfg.Guard.Ceiling > 0 && cfg.Guard.Ceiling < cfg.Guard.Budget:
		return fmt.Errorf("%w: Guard.Ceiling %d is below Guard.Budget %d", ErrSessionConfig, cfg.Guard.Ceiling, cfg.Guard.Budget)
	case cfg.Guard.Ceiling > 0 && cfg.Trigger > cfg.Guard.Ceiling:
		return fmt.Errorf("%w: Trigger %d is above Guard.Ceiling %d", ErrSessionConfig, cfg.Trigger, cfg.Guard.Ceiling)
	case cfg.Trigger != 0 && cfg.Guard.Trigger != 0 && cfg.Trigger != cfg.Guard.Trigger:
		return fmt.Errorf("%w: Trigger %d and Guard.Trigger %d differ; give one", ErrSessionConfig, cfg.Trigger, cfg.Guard.Trigger)
	case cfg.MinClear != 0 && cfg.Guard.MinClear != 0 && cfg.MinClear != cfg.Guard.MinClear:
		return fmt.Errorf("%w: MinClear %d and Guard.MinClear %d differ; give one", ErrSessionConfig, cfg.MinClear, cfg.Guard.MinClear)
	case cfg.Guard.Spill != nil:
		return fmt.Errorf("%w: Guard.Spill is set; a session spills to its Spiller", ErrSessionConfig)
	case cfg.Spiller != nil && cfg.Config.Resolver != nil:
		return fmt.Errorf("%w: Spiller and Config.Resolver are both set; the Spiller resolves its own pointers", ErrSessionConfig)
	case cfg.Config.StubText != "" && strings.TrimSpace(cfg.Config.StubText) == "":
		return fmt.Errorf("%w: the stub text is blank; providers reject blank tool results", ErrSessionConfig)
	}
	if err := cfg.Guard.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrSessionConfig, err)
	}
	if err := cfg.Config.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrSessionConfig, err)
	}
	if cfg.Guard.Hoard != pruneguard.HoardReport && cfg.Config.HoardTokens <= 0 {
		return fmt.Errorf("%w: Guard.Hoard acts on hoarding, but Config.HoardTokens is not set", ErrSessionConfig)
	}
	return nil
}

// Session is the live history of one conversation in a provider's wire
// format, guarded before every model call. A runtime feeds it what it
// already has: messages in the provider's own JSON ([Session.Append]),
// messages as pruneguard events ([Session.AppendMessage]) and streamed
// deltas ([Session.Open], [Session.WriteText], [Session.WriteCall],
// [Session.Close]), plus the request's other fields
// ([Session.SetRequest]); before each model call [Session.Request]
// answers with the request body, pruned under the guard when it is over
// the trigger. A caller that holds the whole history each time, as SDK
// middleware does, hands it to [Session.Sync] instead.
//
// Messages given as provider JSON are written back byte for byte unless
// a decision edits them, so a body synced and rendered back without a
// prune is JSON-equal to it; a Responses input given as a plain string
// is the exception: it is written as the user message item it stands
// for ({"role":"user","content":...}), so that later items can follow
// it. Message ids are the provider's own where it
// has them (a Responses item's id) and positional otherwise ("m" followed
// by the position in the history, from 0); call ids are the provider's
// tool call ids, positional ("m3.0") where it gives none.
//
// Units follow each dialect's atomic structure, as [Body.Bind] shapes
// them: a call with its results and its parallel batch; in Responses,
// consecutive call items, and a reasoning item with the item after it;
// in Anthropic, Gemini and Bedrock, the messages of one turn, and each
// assistant turn with the user turn after it. Pinned: system and
// developer messages, and the first real user message (not tool results)
// unless a Spiller is set, when it may be spilled and evicted like any
// text.
// Never proposed for pruning: the unit of the last real user message;
// in Anthropic, a final assistant turn whose server tool call waits for
// its result. Once the history carries reasoning or signed calls, the
// units after the last real user message are never evicted (the
// provider asks for the turn's reasoning and call items back, in order)
// but their results may be stubbed, by a policy that stubs. Results of tools the provider runs are
// irreducible unless annotated, results that pair with no call take the
// class of an unannotated tool, compaction items are irreducible.
//
// A call stays pending, and under the strict boundary defers every
// prune, until its result arrives, with two exceptions. A message fed
// as provider JSON ([Session.Append], [Session.Sync]) that ends the block
// or turn a call waited in, so that the dialect's adjacency rules let no
// later message answer it, abandons the call at once (as
// [pruneguard.Context.Abandon] does): in Chat, a message other than a
// tool message after the call's assistant message; in Anthropic, a turn
// after the user turn that follows the call's assistant turn; in Gemini
// and Bedrock, the message after the call's, whatever it answers. Such a
// history is one the provider rejects as it stands; the call's unit
// closes and is judged like any other, so that one orphan does not stop
// pruning for good. A Responses call may be answered by any later item,
// and a call made or left by event messages is answered by id, so
// neither is ever abandoned by the session: the runtime declares them
// with [Session.Abandon].
//
// Every decision passes a screen before it is applied, the rule screen
// a [Guarded] uses: units, stubs and schema edits that would leave the
// body breaking a provider rule it keeps as it stands (as
// NewViolations(Validate(now), Validate(after)) would find), leave no
// tool declared, or stub a result that cannot be stubbed or would not
// shrink, are left out and reported as refusals with gate "wire". Before
// guarding, a request repairs the tools the Context reports unsound (see
// [Report].Restored). A request's cost follows what it adds, repairs and
// prunes, not the length of the history (see the package documentation,
// "A live session").
//
// A Session is safe for concurrent use: its methods serialize on one
// lock, and the Context's own events (marks, plan steps) may come from
// any goroutine. The zero Session is not usable; make one with
// [NewSession].
type Session struct {
	cfg      SessionConfig
	manifest map[string]ManifestTool // the manifest's tools by name
	count    pruneguard.Counter
	stubText string
	key      string // the history's top-level key
	p        *provider
	seed     maphash.Seed
	log      *slog.Logger  // Logger, or Guard.Logger
	alertLog *slog.Logger  // the core guard's: Guard.Logger's refetch and re-expansion records
	texts    *sessionTexts // the Context's Config.Text, with a Summarizer, unless the caller set one

	mu  sync.Mutex
	ctx *pruneguard.Context
	sessionState
}

// sessionState is everything a reset starts over.
type sessionState struct {
	entries []*sentry
	byID    map[pruneguard.MessageID]*sentry
	streams map[pruneguard.MessageID]*stream

	top      topFields
	toolsSig string
	known    map[string]bool                            // tools the Context knows by name
	ann      map[string]pruneguard.Tool                 // annotated tools, for server results
	callTool map[pruneguard.CallID]string               // the tool of each call
	callBy   map[pruneguard.CallID]pruneguard.MessageID // the message making each call

	// Pairing, by the dialect's adjacency rules (the tracker Body.Bind
	// uses too): the Context's id and the tool of each call the tracker
	// follows, by its key; the calls made that have no result yet; the
	// calls answered.
	tr       *tracker
	keyCall  []pruneguard.CallID
	keyTool  []string
	keyMsg   []pruneguard.MessageID // the message making each call
	open     map[pruneguard.CallID]bool
	answered map[pruneguard.CallID]bool
	gaveUp   map[pruneguard.CallID]bool // calls the runtime abandoned (Session.Abandon)
	evf      facts                      // an event message being paired (see eventPaired)
	kbuf     []int32                    // the keys of a message's calls, reused from one to the next

	firstUser bool
	lastUser  *sentry
	reasoning bool
	tail      *sentry // the last message fed that is still in the history

	dropped    map[string]bool
	compressed map[string]json.RawMessage
	tombs      map[string]string
	tombOrder  []string
	spilled    []pruneguard.SpillNote

	// sysEntries are the event messages whose text goes into the system
	// prompt (outside Chat and Responses).
	sysEntries []*sentry
	// folds are the folds of the pointer lines, the last standing for
	// the others (see session_lines.go).
	folds []lineFold
	// short are the pointer lines written shorter than the Spiller
	// words them (see lines_fit.go).
	short shortLines
	// sysMsg is set once a system message is fed, in any form: the
	// request has a system prompt of its own (see linePlace).
	sysMsg bool
	// sl is the history as written; rest the tokens of the body outside
	// it, or -1 until counted; topB and topTS the request's fields read,
	// and their tools state, or nil until read.
	sl    *slots
	rest  int
	topB  *Body
	topTS *toolState

	// jr is the journal: what the history was given and what decisions
	// did to it since it began (see session_journal.go).
	jr []jop
	// recorded are the decisions of the current check already in the
	// journal: record may be called more than once for one.
	recorded []*pruneguard.Decision
}

// sentry is one message of the history.
type sentry struct {
	id   pruneguard.MessageID
	pos  int
	hash uint64
	size int

	raw    json.RawMessage // provider JSON; for an event message, as written
	f      facts           // what the session knows of the message
	ev     *pruneguard.Message
	pieces []rpiece // an event message as written

	realUser bool
	paused   bool // Anthropic: a server tool call waiting in this turn

	// lo and hi bound the slots the message writes (see slots).
	lo, hi int32

	gone      bool
	summary   bool // a summary, in the place of the first message it replaced
	stubbed   bool
	stubPtr   pruneguard.Pointer // where a stubbed result's content was spilled
	stub      json.RawMessage    // raw with its results stubbed, once made
	stubFails bool
}

// stream is a message being streamed.
type stream struct {
	e       *sentry
	prev    *sentry // the entry before it, which it is coupled to when it closes
	role    pruneguard.Role
	answers []pruneguard.CallID
	text    strings.Builder
	calls   []pruneguard.Call
}

// NewSession returns an empty Session for cfg, or an error matching
// [ErrSessionConfig] when cfg is refused: an unknown dialect, a budget
// that is not positive, a trigger below the budget or above a positive
// ceiling, a negative minimum to clear, a ceiling below the budget, a
// Spiller beside a Resolver, a blank stub text, a manifest that lists a
// tool twice (wrapping an [*AnnotationError]).
func NewSession(cfg SessionConfig) (*Session, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	byName, err := cfg.Manifest.byName()
	if err != nil {
		return nil, fmt.Errorf("%w: Manifest: %w", ErrSessionConfig, err)
	}
	cfg.Config.Counter = counterOf(cfg.Config.Counter)
	if cfg.Config.SummaryCounter == nil {
		cfg.Config.SummaryCounter = summaryCounter{p: cfg.Dialect.provider(), count: cfg.Config.Counter}
	}
	s := &Session{manifest: byName, cfg: cfg, count: cfg.Config.Counter, key: historyKeyOf(cfg.Dialect), p: cfg.Dialect.provider(), seed: maphash.MakeSeed()}
	s.log, s.alertLog = sessionLoggers(cfg)
	s.stubText = cfg.Config.StubText
	if s.stubText == "" {
		s.stubText = pruneguard.DefaultStubText
	}
	if cfg.Spiller != nil {
		s.cfg.Config.Resolver = cfg.Spiller
		if s.cfg.Config.PointerTokens == 0 {
			s.cfg.Config.PointerTokens = pointerTokens(s.count, cfg.Spiller)
		}
	}
	if s.cfg.Config.StubTokens <= 0 {
		s.cfg.Config.StubTokens = countJSON(s.count, mustString(s.stubText)) + 8
	}
	if s.cfg.Config.Text == nil && cfg.Guard.Summarizer != nil {
		// The facts a summary must carry are read from the text the model
		// reads of each message (see modelText).
		s.texts = &sessionTexts{p: s.p}
		s.cfg.Config.Text = s.texts
	}
	s.reset()
	return s, nil
}

// reset starts the history over, keeping the request's other fields.
func (s *Session) reset() {
	top := s.top
	if s.texts != nil {
		s.texts.m.Clear()
	}
	s.ctx = pruneguard.NewContext(s.cfg.Config)
	s.sessionState = sessionState{
		byID: map[pruneguard.MessageID]*sentry{}, streams: map[pruneguard.MessageID]*stream{},
		known: map[string]bool{}, ann: map[string]pruneguard.Tool{}, callTool: map[pruneguard.CallID]string{},
		callBy: map[pruneguard.CallID]pruneguard.MessageID{},
		tr:     newTracker(s.cfg.Dialect, false), open: map[pruneguard.CallID]bool{}, answered: map[pruneguard.CallID]bool{}, gaveUp: map[pruneguard.CallID]bool{},
		dropped: map[string]bool{}, compressed: map[string]json.RawMessage{}, tombs: map[string]string{},
		top: top, rest: -1,
	}
	if top.vals != nil {
		s.journalTop()
		s.registerTools()
	}
	s.sl = s.newSlots()
}

// Dialect returns the session's dialect.
func (s *Session) Dialect() Dialect { return s.cfg.Dialect }

// Context returns the session's pruneguard.Context, for marks, plan
// steps, spills and reading. Prune only through the session, which
// keeps the body in step with the Context. [Session.Sync] starts a new
// Context when the history it is given does not continue the last one.
func (s *Session) Context() *pruneguard.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctx
}

// Fed reports how many messages were fed to the session since it
// started (or since [Session.Sync] started it over), evicted ones
// included: the length of the history the runtime holds, and the index
// the next message fed gets. The messages the request still shows are
// Context().Len().
func (s *Session) Fed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Len reports how many messages were fed, evicted ones included, as
// [Session.Fed] does; it is not Context().Len(), which counts the
// messages the request still shows.
//
// Deprecated: use [Session.Fed], whose name says what it counts.
func (s *Session) Len() int { return s.Fed() }

// SetRequest sets the request's other top-level fields (model, tools,
// system prompt, settings) from a JSON object. Its history field, if
// present, must be empty: the history is fed message by message. The
// tools it declares are registered with the Context (a manifest's
// annotations win). Fields are written back in the order given, and
// replace those of an earlier call. Fields refused (not an object, a key
// given twice, annotations that are bad input, see [AnnotationError])
// change nothing.
func (s *Session) SetRequest(fields json.RawMessage) error {
	top, err := readTopFields(fields)
	if err != nil {
		return fmt.Errorf("wire: session: request fields: %v", err)
	}
	if _, err := toolDecls(s.p, requestTools(&top), true); err != nil {
		return fmt.Errorf("wire: session: request fields: tools: %w", err)
	}
	if h, ok := top.get(s.key); ok {
		if a, isArr := asArray(h); !isArr || len(a) > 0 {
			return fmt.Errorf("wire: session: request fields: %q must be empty; feed the history message by message", s.key)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.top = top
	s.topChanged()
	s.journalTop()
	return s.registerTools()
}

// registerTools registers the tools the request declares when they
// changed since the last time.
func (s *Session) registerTools() error {
	sig := ""
	for _, l := range s.p.toolLists {
		if v, ok := s.top.get(l.key); ok {
			sig += l.key + "\x00" + string(v) + "\x00"
		}
	}
	if sig == s.toolsSig {
		return nil
	}
	probe := s.top.clone()
	probe.set(s.key, json.RawMessage(`[]`))
	b, err := readBody(probe.bytes(), s.cfg.Dialect)
	if err != nil {
		return fmt.Errorf("wire: session: request fields: %w", err)
	}
	decls, err := toolDecls(s.p, bodyTools(b), true)
	if err != nil {
		return fmt.Errorf("wire: session: request fields: tools: %w", err)
	}
	for _, td := range decls {
		t := pruneguard.Tool{Name: td.Name, Schema: td.Schema, Annotations: td.Annotations}
		annotated := td.Annotated
		if mt, ok := s.manifest[td.Name]; ok {
			if mt.Annotations != nil {
				t.Annotations, annotated = *mt.Annotations, true
			}
			if t.Schema == nil && len(mt.InputSchema) > 0 {
				t.Schema = mt.InputSchema
			}
			t.Scope = mt.Scope
		}
		if rt, ok := recallTool(s.cfg.Spiller); ok && !annotated && t.Name == rt.Name {
			t.Annotations, annotated = rt.Annotations, true
		}
		if len(t.Schema) > 0 && !json.Valid(t.Schema) {
			t.Schema = nil
		}
		if annotated {
			s.ann[t.Name] = t
		} else if s.cfg.Unannotated == UnannotatedRegenerable {
			t.Output = pruneguard.Reconstructible
		}
		if err := s.ctx.RegisterTool(t); err != nil {
			return fmt.Errorf("wire: session: tool %q: %w", t.Name, err)
		}
		s.known[t.Name] = true
	}
	s.toolsSig = sig
	return nil
}

// knowTool registers a tool known only from a call, so that the
// Unannotated setting and a manifest cover its results too.
func (s *Session) knowTool(name string) error {
	if name == "" || s.known[name] {
		return nil
	}
	s.known[name] = true
	t := pruneguard.Tool{Name: name}
	annotated := false
	if mt, ok := s.manifest[name]; ok {
		if mt.Annotations != nil {
			t.Annotations, annotated = *mt.Annotations, true
		}
		t.Scope = mt.Scope
	}
	if rt, ok := recallTool(s.cfg.Spiller); ok && !annotated && name == rt.Name {
		t.Annotations, annotated = rt.Annotations, true
	}
	if annotated {
		s.ann[name] = t
	} else if s.cfg.Unannotated == UnannotatedRegenerable {
		t.Output = pruneguard.Reconstructible
	}
	return s.ctx.RegisterTool(t)
}

// Append feeds one message (a Chat message, a Responses item, an
// Anthropic or Bedrock message, a Gemini content turn) in the session's
// dialect, as the provider's JSON, and returns the id the Context gives
// it. The JSON is kept as given and written back as it is unless a
// decision stubs it. Results pair with calls by the dialect's adjacency
// rules, as [Body.Bind] pairs them; a result that pairs with no call
// is kept without pairing, classed as an unannotated tool's result.
func (s *Session) Append(raw json.RawMessage) (pruneguard.MessageID, error) {
	f, err := s.parseOne(raw)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.precheck([]facts{f}, len(s.entries)); err != nil {
		return "", err
	}
	id, err := s.appendRaw(f)
	if err == nil {
		s.journal(jop{Op: jAppend, Raw: bytes.Clone(raw)})
	}
	return id, err
}

// parseOne reads one message of the session's dialect, into a copy the
// session owns.
func (s *Session) parseOne(raw json.RawMessage) (facts, error) {
	body := make([]byte, 0, len(raw)+len(s.key)+6)
	body = append(body, `{"`...)
	body = append(body, s.key...)
	body = append(body, `":[`...)
	body = append(body, raw...)
	body = append(body, "]}"...)
	b, err := readBody(body, s.cfg.Dialect)
	if err != nil {
		return facts{}, fmt.Errorf("wire: session: append: %w", err)
	}
	if len(b.facts) != 1 {
		return facts{}, fmt.Errorf("wire: session: append: want one %s message", s.cfg.Dialect)
	}
	return b.facts[0], nil
}

// at begins the text of an error of operation op on the message at
// position pos of the history: the index of the message in the history
// the runtime fed (in the body it synced), so that an id the session gave
// it can be matched to the runtime's own turns.
func (s *Session) at(op string, pos int) string {
	return "wire: session: " + op + " " + s.key + "[" + strconv.Itoa(pos) + "]"
}

// positional returns the positional id of the next message.
func (s *Session) positional() pruneguard.MessageID {
	id := pruneguard.MessageID("m" + strconv.Itoa(len(s.entries)))
	for n := 1; s.byID[id] != nil; n++ {
		id = pruneguard.MessageID("m" + strconv.Itoa(len(s.entries)) + "_" + strconv.Itoa(n))
	}
	return id
}

// classing is how the session classes a message the wire knows more of.
func (s *Session) classing() *classing {
	return &classing{
		p: s.p, unannotated: s.cfg.Unannotated,
		server: func(name string) (pruneguard.Class, bool) {
			if t, ok := s.ann[name]; ok {
				return t.OutputClass(), true
			}
			mt, ok := s.manifest[name]
			if !ok || mt.Annotations == nil {
				return pruneguard.ClassUnset, false
			}
			return pruneguard.Tool{Name: name, Annotations: *mt.Annotations}.OutputClass(), true
		},
		tool: func(name string) (pruneguard.Tool, bool) {
			ts, ok := s.ctx.Tool(name)
			return ts.Tool, ok
		},
		called: func(key int32) string { return s.keyTool[key] },
	}
}

// appendRaw feeds a message read from provider JSON the session owns.
func (s *Session) appendRaw(f facts) (pruneguard.MessageID, error) {
	return s.appendRawAs(f, f.raw)
}

// appendRawAs feeds message f, which stands for the bytes span of the
// body the session was given (what a later Sync compares).
func (s *Session) appendRawAs(f facts, span []byte) (pruneguard.MessageID, error) {
	e := &sentry{pos: len(s.entries), raw: f.raw, f: f, size: len(span), hash: maphash.Bytes(s.seed, span)}
	e.id = s.positional()
	if s.p.itemIDs && f.id != "" && s.byID[pruneguard.MessageID(f.id)] == nil {
		e.id = pruneguard.MessageID(f.id)
	}
	e.realUser = s.p.realUser(&f)
	if s.p.pausedTurns && f.role == "assistant" {
		e.paused = waitingServerCall([][]fpart{f.parts})
	}
	cm := coreMessage(e.id, &f, countFacts(s.count, &f))
	var err error
	f.eachCall(func(_ int, p *fpart) {
		if err == nil {
			err = s.knowTool(p.name)
		}
	})
	if err != nil {
		return "", err
	}
	// The Context's call ids are the provider's, unless a call has none or
	// shares one with a call still waiting for its result.
	keys := s.kbuf[:0]
	taken := map[pruneguard.CallID]bool{}
	f.eachCall(func(k int, p *fpart) {
		id := pruneguard.CallID(p.id)
		if p.id == "" || s.open[id] || taken[id] {
			id = pruneguard.CallID(string(e.id) + "." + strconv.Itoa(k))
		}
		taken[id] = true
		cm.Calls = append(cm.Calls, pruneguard.Call{ID: id, Tool: p.name, Args: argsJSON(p.val)})
		keys = append(keys, s.newKey(id, p.name, e.id))
	})
	cm.Calls = appendServerCalls(cm.Calls, &f, func(k int, wire string) pruneguard.CallID {
		id := pruneguard.CallID(wire)
		if wire == "" || s.open[id] || taken[id] {
			id = pruneguard.CallID(string(e.id) + ".s" + strconv.Itoa(k))
		}
		taken[id] = true
		return id
	})
	st := s.tr.add(&e.f, keys)
	s.kbuf = keys
	unpaired := 0
	for i, k := range st.answers {
		if k >= 0 && !s.answered[s.keyCall[k]] {
			cm.Answers = append(cm.Answers, s.keyCall[k])
			s.answered[s.keyCall[k]] = true
			continue
		}
		st.answers[i] = -1
		unpaired++
	}
	cm.Class = s.classing().class(&f, st.answers)
	switch {
	case isSystem(&f):
		cm.Pinned = true
		s.sysMsg = true
	case e.realUser && !s.firstUser && s.cfg.Spiller == nil:
		cm.Pinned = true
	case s.p.serverHeld && (f.typ == "item_reference" || (unpaired > 0 && f.ncalls == 0)):
		// An item the server holds, or an output answering a call the
		// server holds: both must stay.
		cm.Pinned = true
	}
	if err := s.ctx.Append(cm); err != nil {
		return "", fmt.Errorf("%s: %w", s.at("append", e.pos), err)
	}
	s.texts.add(e.id, &f)
	s.noteCalls(cm.ID, cm.Calls, cm.Answers)
	if err := s.abandonClosed(st.closed); err != nil {
		return "", err
	}
	if e.realUser {
		s.firstUser = true
	}
	if signedFacts(&f) {
		s.reasoning = true
	}
	return e.id, s.link(e)
}

// newKey gives a call the tracker follows its key: the call id in the
// Context, its tool and the message making it.
func (s *Session) newKey(id pruneguard.CallID, tool string, msg pruneguard.MessageID) int32 {
	s.keyCall = append(s.keyCall, id)
	s.keyTool = append(s.keyTool, tool)
	s.keyMsg = append(s.keyMsg, msg)
	return int32(len(s.keyCall) - 1)
}

// abandonClosed abandons the calls of keys that a message fed as
// provider JSON made and that still wait for a result: the message just
// fed as provider JSON ended the block or turn they waited in, and the
// dialect's adjacency rules let no later message answer them. Calls of
// event messages are answered by id and stay.
func (s *Session) abandonClosed(keys []int32) error {
	var ids []pruneguard.CallID
	for _, k := range keys {
		if k < 0 {
			continue
		}
		// The id names this call only while the call waits: an id
		// answered may be reused by a later call.
		id := s.keyCall[k]
		if e := s.byID[s.keyMsg[k]]; s.open[id] && s.callBy[id] == s.keyMsg[k] && e != nil && e.ev == nil {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if err := s.ctx.Abandon(ids...); err != nil {
		return fmt.Errorf("wire: session: abandon: %w", err)
	}
	for _, id := range ids {
		delete(s.open, id)
	}
	return nil
}

// noteCalls records the calls message id made and those it answered.
func (s *Session) noteCalls(id pruneguard.MessageID, calls []pruneguard.Call, answers []pruneguard.CallID) {
	for _, id := range answers {
		s.answered[id] = true
		delete(s.open, id)
	}
	for _, c := range calls {
		s.callTool[c.ID] = c.Tool
		s.callBy[c.ID] = id
		delete(s.answered, c.ID) // an id may come back once its call is answered
		delete(s.gaveUp, c.ID)
		if !c.Server {
			s.open[c.ID] = true // a server call is answered in its own turn
		}
	}
}

// link adds an entry to the history and couples it into its unit, as
// Body.Bind does.
func (s *Session) link(e *sentry) error {
	return s.couple(s.place(e), e)
}

// place adds an entry to the history and returns the entry before it.
func (s *Session) place(e *sentry) *sentry {
	prev := s.tail
	s.entries = append(s.entries, e)
	s.byID[e.id] = e
	s.tail = e
	if e.realUser {
		s.lastUser = e
	}
	return prev
}

// couple couples entry e into the unit of prev, the entry before it,
// when the dialect keeps them together.
func (s *Session) couple(prev, e *sentry) error {
	if prev == nil || prev.pieceSystem() || e.pieceSystem() || !coupled(s.p, &prev.f, &e.f) {
		return nil
	}
	if err := s.ctx.Couple(prev.id, e.id); err != nil {
		return fmt.Errorf("wire: session: couple: %w", err)
	}
	return nil
}

// pieceSystem reports an event message that writes only to the system
// prompt.
func (e *sentry) pieceSystem() bool {
	return e.ev != nil && len(e.pieces) > 0 && e.pieces[0].system
}

// AppendMessage feeds one message given as a pruneguard event: Content
// is its text, Calls its tool calls, Answers the calls it carries
// results for, as [Render] reads them. An empty ID gets a positional
// one; Tokens zero is counted with Config.Counter on the message
// as written. The Context checks the event as [pruneguard.Context.Append]
// does: answers must name calls waiting for a result.
func (s *Session) AppendMessage(m pruneguard.Message) (pruneguard.MessageID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	given := m
	if m.ID == "" {
		m.ID = s.positional()
	}
	if prev := s.byID[m.ID]; prev != nil {
		err := &pruneguard.InputError{Op: "append", ID: string(m.ID), Err: pruneguard.ErrDuplicateMessage}
		return "", fmt.Errorf("%s: %w, the id of %s[%d]", s.at("append", len(s.entries)), err, s.key, prev.pos)
	}
	for _, c := range m.Calls {
		if c.Server {
			continue // a tool the provider runs: irreducible unless annotated
		}
		if err := s.knowTool(c.Tool); err != nil {
			return "", err
		}
	}
	e := &sentry{id: m.ID, pos: len(s.entries)}
	if err := s.fillEvent(e, m); err != nil {
		return "", err
	}
	if m.Tokens == 0 {
		m.Tokens = s.eventTokens(e)
	}
	m.Pinned = s.pinsEvent(e, m)
	s.sysMsg = s.sysMsg || m.Role == pruneguard.RoleSystem
	if err := s.ctx.Append(m); err != nil {
		return "", fmt.Errorf("%s: %w", s.at("append", e.pos), err)
	}
	s.eventPaired(m)
	if e.realUser {
		s.firstUser = true
	}
	s.noteSystem(e)
	s.journalEvent(given)
	return m.ID, s.link(e)
}

// Abandon declares calls of the history that will never be answered,
// as [pruneguard.Context.Abandon] does, with its errors: each stops
// being pending, its unit closes and is judged like any other, and a
// later result for it, fed in any form, is refused with
// pruneguard.ErrAbandonedCall. The session abandons by itself only the
// calls a message fed as provider JSON leaves unanswerable (see
// [Session]); a runtime calls Abandon for the others: a call of a
// Responses history whose output will not come, a call made by an event
// message, a call whose stream was cancelled. An abandoned call's id may
// be used again by a new call.
func (s *Session) Abandon(ids ...pruneguard.CallID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ctx.Abandon(ids...); err != nil {
		return fmt.Errorf("wire: session: abandon: %w", err)
	}
	for _, id := range ids {
		delete(s.open, id)
		s.gaveUp[id] = true
	}
	s.journal(jop{Op: jAbandon, Calls: slices.Clone(ids)})
	return nil
}

// precheck refuses, before any of them is fed, messages read from
// provider JSON (fs, the first at position from) of which one would be
// refused by the Context for its pairing: a result the dialect's rules
// pair with a call the runtime abandoned ([pruneguard.ErrAbandonedCall]).
// It pairs them as feeding them would, on a copy of the tracker, and
// costs nothing while no call is abandoned that way.
func (s *Session) precheck(fs []facts, from int) error {
	if len(s.gaveUp) == 0 {
		return nil
	}
	tr := s.tr.clone()
	base := int32(len(s.keyCall))
	next, used := base, map[int32]bool{}
	var keys []int32
	for i := range fs {
		f := &fs[i]
		keys = keys[:0]
		for range f.ncalls {
			keys = append(keys, next)
			next++
		}
		for _, k := range tr.add(f, keys).answers {
			if k < 0 || k >= base || used[k] {
				continue
			}
			used[k] = true
			id := s.keyCall[k]
			if !s.answered[id] && s.gaveUp[id] && s.callBy[id] == s.keyMsg[k] {
				err := &pruneguard.InputError{Op: "append", ID: string(id), Err: pruneguard.ErrAbandonedCall}
				return fmt.Errorf("%s: %w", s.at("append", from+i), err)
			}
		}
	}
	return nil
}

// noteSystem records an event message that writes into the system
// prompt.
func (s *Session) noteSystem(e *sentry) {
	if e.pieceSystem() {
		s.sysEntries = append(s.sysEntries, e)
		s.rest = -1
	}
}

// fillEvent writes an event message in the session's dialect.
func (s *Session) fillEvent(e *sentry, m pruneguard.Message) error {
	ev := m
	e.ev = &ev
	e.pieces = synthMessage(s.p, m, string(m.Content), s.callTool)
	raws := make([]json.RawMessage, len(e.pieces))
	for i := range e.pieces {
		raws[i] = e.pieces[i].json(s.p)
	}
	e.raw = joinArray(raws)
	e.size, e.hash = len(e.raw), maphash.Bytes(s.seed, e.raw)
	e.f = eventFacts(s.p, m)
	e.realUser = m.Role == pruneguard.RoleUser && len(m.Answers) == 0
	return nil
}

// eventFacts is what the pairing and the units need of an event message:
// its role and type as provider p writes it, its calls and the calls it
// answers.
func eventFacts(p *provider, m pruneguard.Message) facts {
	assistant := m.Role == pruneguard.RoleAssistant || (len(m.Calls) > 0 && len(m.Answers) == 0)
	f := facts{role: "user"}
	switch {
	case m.Role == pruneguard.RoleSystem:
		f.role = "system"
	case assistant:
		f.role = p.modelRole
	}
	if p.eventKind != nil {
		f.role, f.typ = p.eventKind(m, f.role)
	}
	for _, c := range m.Calls {
		if c.Server {
			continue // answered in its own message: nothing to pair
		}
		f.add(fpart{kind: PartCall, typ: p.callType, id: string(c.ID), name: c.Tool})
	}
	for _, a := range m.Answers {
		f.add(fpart{kind: PartResult, typ: p.resultType, id: string(a)})
	}
	return f
}

// eventPaired records an event message's calls and answers for pairing:
// the tracker follows them as it follows provider JSON.
func (s *Session) eventPaired(m pruneguard.Message) {
	s.evf = eventFacts(s.p, m)
	keys := s.kbuf[:0]
	for _, c := range m.Calls {
		if !c.Server {
			keys = append(keys, s.newKey(c.ID, c.Tool, m.ID))
		}
	}
	s.tr.add(&s.evf, keys)
	s.kbuf = keys
	s.evf = facts{}
	s.noteCalls(m.ID, m.Calls, m.Answers)
}

// Open starts a streamed message of the given role (for a result, naming
// the calls it answers) and returns its positional id. Until
// [Session.Close] the message is streaming: the Context defers every
// prune, as its commit boundary says, and a request renders what arrived
// so far. Once closed, a message streamed is what the same message given
// whole to [Session.AppendMessage] would have been (its text as Content,
// its calls, its tokens as written, its pin, its class and its unit),
// byte for byte in the Context and in the request.
func (s *Session) Open(role pruneguard.Role, answers ...pruneguard.CallID) (pruneguard.MessageID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.positional()
	m := pruneguard.Message{ID: id, Role: role, Answers: answers}
	e := &sentry{id: id, pos: len(s.entries)}
	_ = s.fillEvent(e, m)
	m.Pinned = s.pinsEvent(e, m)
	if err := s.ctx.Open(m); err != nil {
		return "", fmt.Errorf("%s: %w", s.at("open", e.pos), err)
	}
	s.sysMsg = s.sysMsg || role == pruneguard.RoleSystem
	st := &stream{e: e, role: role, answers: answers}
	s.streams[id] = st
	if len(answers) > 0 {
		s.eventPaired(pruneguard.Message{ID: id, Role: role, Answers: answers})
	}
	if e.realUser {
		s.firstUser = true
	}
	st.prev = s.place(e)
	s.journal(jop{Op: jOpen, Role: role, Calls: slices.Clone(answers)})
	return id, nil
}

// pinsEvent reports whether event message m, written as e, is pinned
// where it stands: a system message, and the first real user message
// unless a Spiller may spill it.
func (s *Session) pinsEvent(e *sentry, m pruneguard.Message) bool {
	return m.Pinned || m.Role == pruneguard.RoleSystem || (e.realUser && !s.firstUser && s.cfg.Spiller == nil)
}

// WriteText appends a text delta to a streaming message.
func (s *Session) WriteText(id pruneguard.MessageID, delta string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.streamOf("write", id)
	if err != nil {
		return err
	}
	n := s.deltaTokens(delta)
	if err := s.ctx.Write(id, []byte(delta), n); err != nil {
		return fmt.Errorf("%s: %w", s.at("write", st.e.pos), err)
	}
	st.text.WriteString(delta)
	s.journal(jop{Op: jText, ID: id, Raw: []byte(delta)})
	return nil
}

// WriteCall appends an argument delta to a call of a streaming message,
// starting the call when its id is new (name is read then). The
// arguments are the call's, never the message's text.
func (s *Session) WriteCall(id pruneguard.MessageID, call pruneguard.CallID, name, argsDelta string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.streamOf("write", id)
	if err != nil {
		return err
	}
	if call == "" {
		return fmt.Errorf("%s: %w", s.at("write", st.e.pos), &pruneguard.InputError{Op: "write", ID: string(id), Err: pruneguard.ErrEmptyID})
	}
	k := -1
	for i := range st.calls {
		if st.calls[i].ID == call {
			k = i
		}
	}
	// The Context learns the calls when the message closes; until then
	// it counts their arguments and holds the message's text alone.
	if n := s.deltaTokens(argsDelta); n > 0 {
		if err := s.ctx.Write(id, nil, n); err != nil {
			return fmt.Errorf("%s: %w", s.at("write", st.e.pos), err)
		}
	}
	if k < 0 {
		st.calls = append(st.calls, pruneguard.Call{ID: call, Tool: name})
		k = len(st.calls) - 1
	}
	st.calls[k].Args = append(st.calls[k].Args, argsDelta...)
	s.journal(jop{Op: jCall, ID: id, Call: call, Name: name, Raw: []byte(argsDelta)})
	return nil
}

func (s *Session) deltaTokens(delta string) int {
	if delta == "" {
		return 0
	}
	return max(0, countJSON(s.count, mustString(delta))-1)
}

func (s *Session) streamOf(op string, id pruneguard.MessageID) (*stream, error) {
	st, ok := s.streams[id]
	if !ok {
		err := &pruneguard.InputError{Op: op, ID: string(id), Err: pruneguard.ErrClosedMessage}
		if e := s.byID[id]; e != nil {
			return nil, fmt.Errorf("%s: %w", s.at(op, e.pos), err)
		}
		return nil, fmt.Errorf("wire: session: %s: %w", op, err)
	}
	return st, nil
}

// Close ends a streamed message: its calls become calls waiting for
// results, and it is written in the session's dialect from then on. Its
// tokens are settled to the count of the message as written, as
// AppendMessage counts it.
func (s *Session) Close(id pruneguard.MessageID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.streamOf("close", id)
	if err != nil {
		return err
	}
	for _, c := range st.calls {
		if err := s.knowTool(c.Tool); err != nil {
			return err
		}
	}
	m := st.message()
	e := st.e
	_ = s.fillEvent(e, m)
	if err := s.ctx.Recount(id, s.eventTokens(e)); err != nil {
		return fmt.Errorf("%s: %w", s.at("close", e.pos), err)
	}
	if err := s.ctx.Close(id, m.Calls...); err != nil {
		return fmt.Errorf("%s: %w", s.at("close", e.pos), err)
	}
	delete(s.streams, id)
	if len(st.answers) == 0 || len(m.Calls) > 0 {
		s.eventPaired(pruneguard.Message{ID: id, Role: st.role, Calls: m.Calls})
	}
	s.noteSystem(e)
	s.journal(jop{Op: jClose, ID: id})
	return s.couple(st.prev, e)
}

// message is the stream as an event message so far.
func (st *stream) message() pruneguard.Message {
	m := pruneguard.Message{ID: st.e.id, Role: st.role, Answers: st.answers}
	if st.text.Len() > 0 {
		m.Content = []byte(st.text.String())
	}
	for _, c := range st.calls {
		m.Calls = append(m.Calls, pruneguard.Call{ID: c.ID, Tool: c.Tool, Args: append(json.RawMessage(nil), c.Args...)})
	}
	return m
}

// eventTokens counts an event message as written: each message it
// writes into the history, and the text it adds to a system prompt.
func (s *Session) eventTokens(e *sentry) int {
	n := 0
	for i := range e.pieces {
		p := &e.pieces[i]
		if p.system {
			n += countJSON(s.count, mustString(p.text))
			continue
		}
		n += countJSON(s.count, p.json(s.p))
	}
	return n
}

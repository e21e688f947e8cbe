package pruneguard

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
)

// Outcome is the answer of [Guard.Check]. The zero Outcome is
// UnderBudget.
type Outcome uint8

const (
	// UnderBudget: nothing needed doing.
	UnderBudget Outcome = iota
	// Pruned: decisions were applied (they are in Result.Decisions).
	// Result.After may still exceed the budget when the guard refused
	// the rest, and even the ceiling: then Check returns a
	// [*CeilingError] with it.
	Pruned
	// Deferred: the Context could not be pruned safely now (a call
	// pending, a message streaming, or no safe prune of any kind, spills
	// included, that frees anything). Retry at the next budget check.
	// Over a positive ceiling, Check returns a [*CeilingError] with it.
	Deferred
)

// String returns the name of the outcome.
func (o Outcome) String() string {
	switch o {
	case UnderBudget:
		return "under_budget"
	case Pruned:
		return "pruned"
	case Deferred:
		return "deferred"
	}
	return "outcome(?)"
}

// Guard is the helper a runtime calls before each model invocation: it
// checks the budget and, when over it, lets Policy propose and the gates
// dispose until the Context fits or nothing more can safely go.
//
// A Guard is a plain value; it may be shared by goroutines as long as its
// Policy, Spill, Screen and Logger may. The zero Guard is invalid: it has
// no Budget, and [Guard.Check] refuses it with a [*ConfigError] rather
// than prune everything it may. Every other zero field is a working
// default, documented on the field.
type Guard struct {
	// Budget is the level a prune cuts the context down to, not the
	// window: a Check prunes when the context is over the Trigger (the
	// window; the Budget itself when no Trigger is set) and then goes
	// down to the Budget. Required: it must be positive.
	Budget int
	// Ceiling, when positive, is the hard limit: above it a Context that
	// cannot be pruned safely makes Check fail with a [*CeilingError].
	// Zero means the Context's Config.Ceiling. It must not be below the
	// Budget.
	Ceiling int
	// Policy proposes what to prune; nil means OldestFirst{}. A Policy
	// that keeps the newest messages out of its proposals says so by
	// implementing [Keeper]: the hoarding rule spares them and the
	// furthest safe prune, going oldest first, reaches them last (see
	// [Keeper]). Units it hides through its [View] the guard never takes
	// in that check.
	Policy Policy
	// Split is passed on in every plan that leaves it unset.
	Split SplitMode
	// Rounds bounds the rounds of one Check (default 64): each round
	// prunes one plan, the policy's or, once the policy can make no more
	// room, the guard's own furthest safe prune. A round whose plan the
	// gates or the Screen refused, so that what they refused is taken out
	// of later plans (and remembered), is not counted: every unit is tried
	// once. The bound stops a policy that keeps proposing what changes
	// nothing, and counts the decisions applied.
	Rounds int

	// Trigger is the window: the token count above which a Check prunes
	// at all; zero means Budget. Once triggered, a Check prunes down to
	// the Budget, below the Trigger. A Trigger
	// above the Budget keeps the provider's prompt cache: checks at or
	// under it change nothing, so consecutive requests share the prefix
	// the last prune left. It must not be below the Budget nor above a
	// positive ceiling.
	Trigger int
	// MinClear is the least number of tokens a triggered Check frees, as
	// Anthropic's clear_at_least: it prunes down to the Budget or to
	// MinClear below where it started, whichever is lower, so that prunes,
	// and the cache misses they cause, come seldom. When no safe prune
	// frees that much, the Check frees what it safely can: it is Pruned
	// if it applied anything, and Result.Before less Result.After says
	// how much went. Zero means no minimum; it must not be negative.
	MinClear int

	// Spill, when set, is where the guard stores content before it
	// evicts or stubs it: a closed unit (or a result to stub) refused only
	// because content in it cannot be obtained again is written to the
	// store, all those of one round as one segment, its pointer recorded
	// with [Context.Spill], and pruned. Content a planned step names is
	// never spilled, nor a unit the boundary gate holds back (pinned, in
	// flight, or unread). A spill that fails, or whose pointer the
	// Context's Resolver does not resolve, is reported in
	// Result.SpillErrors and its unit stays. The Context's Config.Resolver
	// must be set (normally to the same store); Check refuses a Spill
	// without one. With Config.PointerTokens set, the guard never spills a
	// result to stub it, nor applies a decision, that would free nothing
	// once the pointer text is counted. Nil means nothing is spilled.
	Spill Spiller
	// Summarizer, when set, makes a check over its trigger compact before
	// it evicts: it replaces the oldest runs of whole units that may go
	// (up to what the policy keeps, see [Keeper]; a unit that may not go
	// ends a run), smallest first, each with one summary message the
	// Summarizer writes from the run's [Brief], judged by the gates as
	// [Summary] says. With Spill set, the run is spilled first,
	// as one segment, so that everything it held can be read back and
	// the summary carries the pointer; without, the run ends before the
	// first message only a pointer could stand for. A summary the gates
	// refuse is reported in Result.Refused, a Summarizer's error in
	// Result.SummaryErrors (and logged, LogSummaryFailed), and the check
	// goes on with evictions.
	// Nil means no compaction.
	Summarizer Summarizer
	// Screen, when set, vets each decision before it is applied, for
	// rules the gates do not know (a provider's request rules); what it
	// refuses is taken out and the plan pruned again. Nil means no screen.
	Screen Screen
	// Hoard says what a Check does with the large reconstructible
	// messages Config.HoardTokens reports as hoarded, even under budget:
	// nothing (HoardReport, the default), stub them (HoardStub) or evict
	// their units (HoardEvict). See [HoardMode].
	Hoard HoardMode
	// HoardKeep is how many of the newest units the hoarding rule leaves
	// alone, so that the model reads a large result at least once before
	// it goes; zero means 1.
	HoardKeep int
	// Logger, when set, receives one record per decision, refusal, spill
	// and failed spill, and one per check that ran, never any content;
	// see the log record names (LogDecision, ...) for their attributes and
	// how they map onto the Agent Client Protocol's compaction events.
	// With a Logger, every check, under budget too, also takes the
	// Context's refetch alerts ([Context.TakeAlerts]), writes one
	// LogRefetch record each and returns them in Result.Alerts, and
	// writes one LogReexpansion record for each schema the model asked
	// back ([Context.RequestTool]) since the last check with a Logger.
	// Nil means no logging, at no cost, and the alerts stay queued for the
	// runtime.
	Logger *slog.Logger
}

// Screen vets a decision a [Guard] is about to apply, for rules the gates
// do not know, such as a provider's request rules. It returns nil to let
// the decision through, or the violations that stand in its way (with
// Gate [GateScreen], matching [ErrScreen]), each naming what to take out:
// the tools whose schema edits it refuses, the stubs it refuses (by
// message), or else the units it refuses. The guard takes them out for the
// rest of the check and prunes again; a violation that names nothing of
// the decision refuses all of it. Screen is called from the goroutine
// running Check, with no lock of the Context held; it must not apply the
// decision.
//
// A nil Screen in a Guard vets nothing.
type Screen interface {
	Screen(d *Decision) []*Violation
}

// ScreenFunc adapts a function to a [Screen].
//
// A nil ScreenFunc must not be used: calling it panics.
type ScreenFunc func(d *Decision) []*Violation

// Screen calls f(d).
func (f ScreenFunc) Screen(d *Decision) []*Violation { return f(d) }

// Result reports what [Guard.Check] did. The zero Result reports a check
// that did nothing.
type Result struct {
	Outcome Outcome
	Before  int // tokens before the check
	After   int // tokens after it
	// Decisions are the applied decisions, in order. A message a decision
	// evicts or stubs that is listed in its Pointers was spilled: show
	// the pointer's text (spill.PointerText) where it was, never the stub
	// text, which tells the model to call the tool again.
	Decisions []*Decision
	// Refused lists every refusal met on the way, once each, in the order
	// met (the sweep's first: units next to each other it refused for one
	// reason alone make one violation naming them all; see [Guard.Check]):
	// units held back by the boundary, irreducible content, schemas a
	// mutation tool could not lose, what the Screen refused; and, when the
	// check ends over the budget, the units it left because they hold a
	// message the model has not read yet ([CodeUnread]), which policies
	// pass over. It explains a Deferred outcome or a Pruned one still over
	// budget. Refusals remembered from earlier checks are passed over, not
	// met again; see [Context.Refusals].
	Refused []*Violation
	// Reason is the last error met (a *DeferredError, *PruneError or
	// *StaleError, or the error of the Guard's Summarizer), if any: a
	// Summarizer's error shows here only when nothing the check meets
	// after it takes its place. A check that ends over the budget having met
	// nothing new gives the refusals remembered from earlier checks that
	// still hold, and the units left unread, as a *PruneError; having met
	// nothing at all, a *HeldError that says what fills the prompt (Held).
	Reason error
	// Held accounts for what the prompt holds that the check could not
	// touch (pointer lines, schemas and tombstones, units in flight,
	// unread, pinned or refused) and what it did not reach, when it ends
	// over the budget; zero
	// otherwise. It costs a walk of those units, and of nothing else.
	Held Held

	// Compaction names this check, unique among the checks of one
	// Context ("pruneguard-" and a count): the compactionId of the Agent
	// Client Protocol's compaction events. A runtime that restores a
	// session into a new Context qualifies it with the session's own id.
	// It is empty when Check returned at once: at or under the trigger
	// with no hoarding to act on, or on a configuration error.
	Compaction string
	// Spills are the spills the guard made, in order.
	Spills []SpillReport
	// SpillErrors are the spills that failed; their units stayed.
	SpillErrors []*SpillError
	// SummaryErrors are the errors the Guard's Summarizer returned, in
	// the order met; the run each was asked to summarize stayed, left to
	// the evictions that follow. Result.Reason holds only the last error
	// of a check, so a Summarizer's error is found here.
	SummaryErrors []error
	// Alerts are the refetch alerts a Guard with a Logger took from the
	// Context ([Context.TakeAlerts]) and logged, in the order raised.
	// Without a Logger the guard leaves them to the runtime.
	Alerts []RefetchAlert
}

// Check brings c under g.Budget if it safely can.
//
// It validates g and c's Config first ([Guard.ValidateFor]); a
// configuration error changes nothing and is returned with only Before and
// After set. At or under the Trigger (Budget by default), with no hoarding
// to act on, it returns at once without allocating and without using a
// compaction id: in constant time, or, when Hoard is not HoardReport, in
// time proportional to the messages that may be hoarded (see [HoardMode]).
//
// Otherwise it acts on hoarding, if asked (see [HoardMode]), then, over the
// trigger, sweeps, and asks the policy for a plan, prunes and applies it.
// The sweep, made by a guard with neither Spill nor Summarizer (which
// alone may lift what the regenerability gate refuses), judges the units
// not judged at an earlier sweep, oldest first, each as the gates judge
// the eviction of a whole unit, until those that may go hold what the
// check must free; a unit in flight or unread is passed, and judged by a
// later sweep once closed and read. The units it refuses are remembered
// and reported as refusals met, and the policy never sees them. Units
// next to each other that it refuses for one reason alone make one
// violation naming them all and their messages held, so that a check
// that finds no safe way costs about a judgement per unit. Then units
// and results the gates refuse are hidden from the policy (through its
// [View]) and remembered in c, so that later checks pass over them, and
// the policy is asked again, up to Rounds times. When the policy can make
// no more room (it proposes nothing, or nothing it proposes may go), the
// guard goes on with the furthest safe prune: whole units, oldest first,
// that are neither pinned, in flight, unread nor hidden by the policy (so
// the newest messages a [Keeper] policy keeps go last), spilling what only
// a spill lets go when a Spill store is set. It stops once c is at the Budget
// (or MinClear below where it started, if lower). A refusal for the state
// of a tool, which holds up every plan (arguments of a mutating tool
// behind a schema that left and may not be tombstoned, a message that
// requires a missing schema), is met once with the units of the calls
// behind it added to the plan, which repairs the tool when they may go;
// otherwise the check stops there. The outcome is Deferred only when no
// safe prune of any kind freed anything.
//
// What the model has not read yet never leaves (see [Context.Unread]): a
// message after the model's last message stays, with its unit, whatever
// the budget; it is neither evicted, stubbed, spilled nor hoarded. A
// check that cannot reach the budget without it stops short of it
// (Deferred when nothing else could go), or fails with a [*CeilingError]
// past the ceiling, and names it in Result.Refused.
//
// Beside the policy's own work, a check costs in proportion to what it
// proposes, prunes and refuses, not to the length of the Context nor to
// the refusals remembered from earlier checks, but for a check that ends
// over the budget having met nothing new: its Reason lists the
// refusals remembered, at a cost in proportion to them. It fails with a
// [*CeilingError] when c ends above a positive Ceiling, and with the
// [*InputError] when the policy proposes ids or tools the Context does not
// hold, or a decision whose stubs or pointer lines would take
// [Context.Tokens] past the largest int ([ErrTokenOverflow]). Either error may come after decisions were applied: the Outcome
// is then Pruned, and Result.Decisions lists them for the runtime to
// render (tombstones, pointers) as after any prune.
//
// Check spills, when g.Spill is set, with context.Background(): a spill
// cannot be cancelled. Use [Guard.CheckContext] to bound it.
func (g Guard) Check(c *Context) (Result, error) {
	return g.CheckContext(context.Background(), c)
}

// CheckContext is [Guard.Check] with a context for the check's I/O: the
// spills to g.Spill and the calls of g.Summarizer, the only I/O a check
// does, are made with ctx. Once ctx is done a spill fails, is reported
// in Result.SpillErrors and its unit stays, as for any failed spill, and
// a compaction is given up; the gates' own work, which does no I/O, goes
// on to its end, so the outcome and the Context stay consistent. A Guard
// with neither Spill nor Summarizer does not use ctx.
func (g Guard) CheckContext(ctx context.Context, c *Context) (Result, error) {
	if c == nil {
		return Result{}, &ConfigError{Field: "Context", Reason: "is nil"}
	}
	s := c.guardState()
	if !s.cfgOK || !g.valid(&s) {
		cfg := c.Config()
		if err := g.validateFor(&cfg); err != nil {
			return Result{Before: s.tokens, After: s.tokens}, err
		}
	}
	trigger := g.Trigger
	if trigger == 0 {
		trigger = g.Budget
	}
	if s.tokens <= trigger && (g.Hoard == HoardReport || !s.hoarding || !c.hoarding(g.Hoard == HoardStub, g.hoardKeep())) {
		if g.Logger != nil && s.alerts {
			return Result{Outcome: UnderBudget, Before: s.tokens, After: s.tokens, Alerts: logAlerts(g.Logger, c)}, nil
		}
		return Result{Outcome: UnderBudget, Before: s.tokens, After: s.tokens}, nil
	}
	return g.run(ctx, c, c.Config(), s.tokens, trigger)
}

// guardView is what a check reads of a Context, under one lock, to
// decide whether to do anything.
type guardView struct {
	tokens      int
	ceiling     int // Config.Ceiling
	hoardTokens int // Config.HoardTokens
	hoarding    bool
	alerts      bool // refetch alerts or re-expansions wait for a Logger
	resolver    bool // Config.Resolver is set
	cfgOK       bool // Config.Validate passes
}

func (c *Context) guardState() guardView {
	c.mu.RLock()
	s := guardView{tokens: c.heldTokens(), ceiling: c.cfg.Ceiling, hoardTokens: c.cfg.HoardTokens,
		hoarding: len(c.large) > 0, alerts: len(c.alerts) > 0 || len(c.reexp) > 0, resolver: c.cfg.Resolver != nil, cfgOK: c.cfgValid()}
	c.mu.RUnlock()
	return s
}

// guardRun is one Check past the quick return.
type guardRun struct {
	ctx     context.Context // for the spills and the Summarizer
	g       Guard
	c       *Context
	cfg     Config
	pol     Policy
	v       *View
	res     Result
	trigger int
	target  int
	ceiling int
	rounds  int

	remembered   int    // refusals this check added to the Context's memory
	met          metSet // the refusals in the result
	refusedTools map[string]bool
	noEvict      map[UnitID]bool // units refused eviction in this check, not remembered
	spillTried   map[string]bool // units and results a spill was tried for
	// spilledNow holds, for each message this check spilled whose
	// decision is not applied yet, the pointer it had before.
	spilledNow map[MessageID]Pointer
	// screenedUnits and screenedStubs are what the Screen refused since
	// the last decision applied: its refusals answer the body as it
	// stood, so the next applied decision lets them be tried again.
	// standingTried: a plan was given the units of the calls a standing
	// refusal names; stop: a standing refusal remains, so no plan passes
	// in this check.
	standingTried, stop bool

	screenedUnits []UnitID
	screenedStubs []MessageID
	screenedTools []string
	log           *guardLog
}

// The parts of a check, for the log.
const (
	fromPolicy = "policy" // the policy's proposals
	fromReach  = "reach"  // the guard's furthest safe prune
	fromHoard  = "hoard"  // the hoarding rule
)

func (g Guard) run(ctx context.Context, c *Context, cfg Config, before, trigger int) (Result, error) {
	r := &guardRun{ctx: ctx, g: g, c: c, cfg: cfg, trigger: trigger, res: Result{Before: before}}
	r.pol = g.Policy
	if r.pol == nil {
		r.pol = OldestFirst{}
	}
	r.ceiling = g.Ceiling
	if r.ceiling <= 0 {
		r.ceiling = cfg.Ceiling
	}
	r.rounds = g.Rounds
	if r.rounds <= 0 {
		r.rounds = 64
	}
	r.v = &View{c: c, hints: true}
	over := before > trigger
	waiting := cfg.Boundary == BoundaryStrict && !c.Settled()
	var hoarded []MessageID
	if !waiting && g.Hoard != HoardReport {
		hoarded = r.hoardIDs()
	}
	if !over && len(hoarded) == 0 {
		// Nothing to act on after all (the policy keeps what may be
		// hoarded): no compaction takes place.
		res := Result{Outcome: UnderBudget, Before: before, After: c.Tokens()}
		if g.Logger != nil {
			res.Alerts = logAlerts(g.Logger, c)
		}
		return res, nil
	}
	r.res.Compaction = "pruneguard-" + strconv.FormatUint(c.mem.checks.Add(1), 10)
	r.log = newGuardLog(g.Logger, r.res.Compaction)
	var err error
	switch {
	case waiting:
		if over {
			// Nothing may go while a call is pending or a stream is
			// open; say which, without asking the policy.
			if _, e := c.prune(Plan{}, planHint{}, false); e != nil {
				r.res.Reason = e
			}
		}
	default:
		if len(hoarded) > 0 {
			err = r.hoard(hoarded)
		}
		if err == nil && over {
			r.target = max(0, min(g.Budget, before-g.MinClear))
			if g.Summarizer != nil {
				r.compact()
			}
			r.sweep(c.Tokens() - r.target)
			err = r.reduce()
		}
	}
	return r.finish(over, err)
}

// reduce asks the policy until the Context is at the target, then goes
// on with the furthest safe prune.
func (r *guardRun) reduce() error {
	for r.rounds > 0 && !r.stop {
		now := r.c.Tokens()
		if now <= r.target {
			return nil
		}
		r.v.arm()
		r.v.hint = planHint{}
		p := r.pol.Propose(r.v, now-r.target)
		h := r.v.hint
		r.v.hint = planHint{}
		if p.Split == SplitGrow {
			p.Split = r.g.Split
		}
		p, h = r.filter(p, h)
		if p.Empty() {
			break
		}
		r.rounds--
		learned := r.progress()
		out, err := r.try(p, h, fromPolicy)
		if out == tryNothing && r.progress() > learned {
			r.rounds++ // the refused are out of the next plans
		}
		if err != nil {
			return err
		}
		if out == tryDeferred {
			return nil
		}
	}
	if r.stop {
		return nil
	}
	return r.reach()
}

// finish sets the outcome and checks the ceiling.
func (r *guardRun) finish(over bool, err error) (Result, error) {
	res := &r.res
	res.After = r.c.Tokens()
	applied := len(res.Decisions) > 0
	if over && res.After > r.g.Budget {
		// What the model has not read yet stays, and policies pass over
		// it without meeting a refusal: say so.
		met := map[UnitID]bool{}
		for _, v := range res.Refused {
			if v.Gate == GateBoundary && v.Code == CodeUnread && len(v.Units) > 0 {
				met[v.Units[0]] = true
			}
		}
		unread := r.c.unreadHeld(met)
		r.report(unread)
		refused := res.Refused
		if res.Reason == nil && err == nil {
			// What stood in the way was met at earlier checks, or is unread.
			if rs := append(r.c.Refusals(), unread...); len(rs) > 0 {
				res.Reason = &PruneError{Violations: rs}
				refused = append(slices.Clip(refused), rs...)
			}
		}
		res.Held = r.c.heldAccount(refused)
		res.Held.Unreached = max(0, res.After-res.Held.total())
	}
	switch {
	case err != nil:
		// The policy named what the Context does not hold.
		res.Outcome = Deferred
		if applied {
			res.Outcome = Pruned
		}
	case r.ceiling > 0 && res.After > r.ceiling:
		res.Outcome = Deferred
		if applied {
			res.Outcome = Pruned
		}
		err = &CeilingError{Tokens: res.After, Ceiling: r.ceiling, Cause: res.Reason, Held: res.Held}
	case applied:
		res.Outcome = Pruned
	case !over:
		res.Outcome = UnderBudget
	case res.After <= r.g.Budget:
		res.Outcome = Pruned // another goroutine made the room
	default:
		res.Outcome = Deferred
		if res.Reason == nil && !r.c.Settled() {
			res.Reason = &DeferredError{Pending: r.c.Pending(), Open: r.c.OpenMessages()}
		}
	}
	if res.Reason == nil && over && res.After > r.g.Budget && !res.Held.IsZero() {
		// Nothing was refused: what stays is what no prune may touch.
		res.Reason = &HeldError{Tokens: res.After, Budget: r.g.Budget, Held: res.Held}
	}
	r.logRefetchAlerts()
	r.log.check(r, over, err)
	return *res, err
}

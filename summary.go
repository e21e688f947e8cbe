package pruneguard

import (
	"context"
	"errors"
)

// RoleSummary is the role of the message a [Summary] puts in place of the
// messages it replaces. A runtime renders it in its provider's format
// (package wire does) as text that the model reads as neither its own
// words nor the user's.
const RoleSummary Role = "summary"

// Summary proposes to replace a run of whole, closed units with one
// message, as a runtime that compacts its history does: its model (or
// [Digest]) writes the text from the run's [Brief], and [Context.Prune]
// judges it like an eviction of the run.
//
//   - Commit boundary: the run is the units of Replace, grown, shrunk or
//     refused as Plan.Split says; no unit with a pinned ([CodePinned]) or
//     unread ([CodeUnread]) message goes, a streaming message or a
//     pending call defers the plan ([ErrDeferred]), and no message that
//     stays may sit between the first and the last message replaced
//     ([CodeGap]).
//   - Evict-or-tombstone: the arguments of the calls replaced leave the
//     prompt, as with an eviction.
//   - Regenerability: each message replaced must be reconstructible, or
//     spilled behind a resolvable pointer the summary carries (listed in
//     Pointers, its key in Text), or have its facts ([Fact]) carried
//     verbatim in Text ([CodeMissingFact] names those it drops). A
//     one-time secret is never summarized: it stays or is spilled
//     ([CodeSecret]). A message a pending planned step names stays. An
//     earlier summary is replaced like any message: its facts, and the
//     keys of the pointers it carried, must be carried forward. A run
//     goes whole or not at all: under RegenDropUnsafe too, an unsafe
//     message refuses the summary rather than leave its unit out.
//   - The summary must hold fewer tokens than what it replaces
//     ([CodeSummaryGrows]).
//
// A run the boundary leaves empty (every unit of it refused, under any
// Split) is refused: [Context.Prune] and [Context.Brief] fail with a
// [*PruneError] that names the refusals.
//
// The zero Summary proposes nothing; a Plan with a nil Summary has none.
type Summary struct {
	// Replace names messages of the run. Required.
	Replace []MessageID
	// ID names the summary message. Required, and held by no message of
	// the Context.
	ID MessageID
	// Text is the summary. Required, not blank.
	Text string
	// Tokens is the summary's size. Zero means Config.SummaryCounter
	// counts Text, or Config.Counter, or, without either,
	// [ApproxCounter]. It must not be negative.
	Tokens int
	// Pointers are the spill pointers the summary carries. A pointer
	// counts only when it resolves and its key appears in Text: a message
	// replaced that was spilled behind such a pointer needs none of its
	// facts carried. The others stand for nothing and are left out of
	// Decision.Summary.Pointers.
	Pointers []Pointer
}

// Brief is what a summary of a run must carry, for the summarizer to
// read before it writes: the run as the gates take it, its messages, and
// the facts and pointers that [Context.Prune] will require of the
// summary. It holds no one-time secret: the content and arguments of a
// message marked [OneTimeSecret] are withheld (listed in Withheld), and
// such a message can only be replaced once spilled.
//
// A Brief is a snapshot; it does not change when the Context does.
type Brief struct {
	// Replace is the run, in transcript order: pass it on as
	// Summary.Replace.
	Replace []MessageID
	// Units are the units of the run, in transcript order.
	Units []UnitID
	// Tokens is what the run holds.
	Tokens int
	// Messages describes each message of the run, in transcript order.
	Messages []BriefMessage
	// Facts are the facts the summary must carry verbatim: those of the
	// messages replaced that cannot be obtained again and have no
	// resolvable pointer, in transcript order.
	Facts []Fact
	// Pointers are the resolvable pointers of the messages replaced that
	// cannot be obtained again, each once: a summary that carries one
	// (in Summary.Pointers, its key in the text) need not carry the
	// facts of the messages behind it.
	Pointers []Pointer
	// Withheld names the messages whose content and arguments the Brief
	// leaves out: one-time secrets, which a summary may replace only
	// once they are spilled behind a pointer it carries.
	Withheld []MessageID
	// Spill names the messages a summary can replace only by carrying
	// their pointer: one-time secrets, and messages marked with [Facts]
	// whose text is too long to carry whole and holds no fact to carry.
	// Spill them first, or leave their units out of the run.
	Spill []MessageID
	// Room, when positive, is the most tokens the summary can hold for
	// the check that asked for it to reach its target: a [Guard] sets it
	// to what the run holds less its share of what the check must free
	// (the runs of one check are summarized smallest first, each taking
	// a share of what must still be freed in proportion to its tokens,
	// so that a summary longer than its Room takes from the runs after
	// it), less a little for what the message around the text costs.
	// When the Context counts a summary over that share, the Guard asks
	// once more, with a Room of the first Room or the text's tokens,
	// whichever is fewer, less the excess, and takes the shorter text
	// (the first when the second call fails or writes nothing, or the
	// gates refuse the second). A summary that holds more still stands
	// if the gates pass it, and the check evicts further (the summary
	// too, when it can be spilled). Zero means no bound: [Context.Brief]
	// leaves it so.
	Room int
}

// BriefMessage is one message of a [Brief].
//
// The zero BriefMessage describes no message.
type BriefMessage struct {
	ID      MessageID
	Role    Role
	Class   Class    // the class the gates give it now
	Calls   []Call   // its calls, arguments included unless withheld
	Answers []CallID // the calls it answers
	// Tools are the tools it calls or answers, each once.
	Tools   []string
	IsError bool
	// Content is its text (with Config.Text, the text the source gives),
	// nil when withheld.
	Content  []byte
	Withheld bool
	Stubbed  bool
	// Pointer is its spill pointer when the pointer resolves.
	Pointer Pointer
	// Facts are the facts found in its content and its calls' arguments.
	Facts []Fact
	// Required says its facts must be carried, unless its Pointer is.
	Required bool
}

// Fact is a load-bearing string of a message: an identifier, a number
// that matters, a path, a URL, a quoted value, an error line, a
// negative result. A summary carries a fact when Text appears in it
// verbatim, with runs of ASCII white space (spaces, tabs, line ends)
// counted as one space and nothing else forgiven (case, digits and
// punctuation are exact), and not as part
// of a longer word, number or path ("137" is not carried by "1370", nor
// "/etc/hosts" by "/opt/etc/hosts"). A setting (Kind "kv", Text
// "key=value") is carried as "key: value", "key = value" and in JSON
// ("key": value) too.
//
// The facts of a message are found deterministically in its content and
// its calls' arguments. A message marked with [Facts] in which none is
// found has its whole text as one fact (Kind "text") when it is short;
// an earlier summary has, besides its own facts, the key of each pointer
// it carried (Kind "pointer").
//
// The zero Fact is no fact.
type Fact struct {
	Message MessageID
	// Kind is one of "negative", "error", "id", "kv", "number", "time",
	// "path", "url", "email", "quoted", "text" and "pointer".
	Kind string
	Text string
}

// Summarizer writes the text of a summary from a [Brief]: what the run
// held, the facts listed in Brief.Facts verbatim, and the keys of the
// pointers it carries. A [Guard] with a Summarizer calls it with no lock
// of the Context held; it may call a model. [Digest] is the built-in,
// deterministic one.
type Summarizer interface {
	Summarize(ctx context.Context, b *Brief) (string, error)
}

// SummarizerFunc adapts a function to a [Summarizer].
//
// A nil SummarizerFunc must not be used: calling it panics.
type SummarizerFunc func(ctx context.Context, b *Brief) (string, error)

// Summarize calls f(ctx, b).
func (f SummarizerFunc) Summarize(ctx context.Context, b *Brief) (string, error) { return f(ctx, b) }

// TextSource gives the text of messages the Context holds without
// content (a provider body's view keeps token counts only), for the
// facts a summary must carry and for a [Brief]. It is called under the
// Context's read lock and must not call back into the Context.
//
// A nil TextSource (the zero Config's) leaves each message its Content.
type TextSource interface {
	Text(id MessageID) []byte
}

// TextFunc adapts a function to a [TextSource].
//
// A nil TextFunc must not be used: calling it panics.
type TextFunc func(id MessageID) []byte

// Text calls f(id).
func (f TextFunc) Text(id MessageID) []byte { return f(id) }

// Input errors of a summary plan.
var (
	// ErrEmptySummary: a Summary with no Replace, no ID or a blank Text.
	ErrEmptySummary = errors.New("pruneguard: summary names no run, no id or no text")
	// ErrSummaryPlan: a plan with a Summary also evicts or stubs.
	ErrSummaryPlan = errors.New("pruneguard: a summary plan may not evict or stub besides")
)

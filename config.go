package pruneguard

// Config sets how a [Context]'s gates decide. It is a plain value, copied
// into the Context; its Oracle and Resolver are called from whichever
// goroutine calls Prune, so they must be safe for that. The zero Config is the
// strictest reading of each gate: any pending call or streaming message
// defers every prune, split units grow to whole units, any unsafe
// candidate refuses the whole plan, tombstones are available, and text a
// person or the model wrote is irreducible.
type Config struct {
	// Boundary chooses the strict (default) or relaxed commit boundary.
	Boundary BoundaryMode
	// Regen chooses whether one unsafe candidate refuses the whole plan
	// (RegenRefuse, the default) or only its own unit (RegenDropUnsafe).
	Regen RegenMode
	// Oracle, if set, classifies messages that carry no explicit Class.
	// It cannot lift the results of a tool whose hints say they record a
	// side effect (destructive, or not idempotent), nor the calls that
	// made them, unless the tool sets Tool.Output: see [Oracle].
	Oracle Oracle
	// Resolver, if set, decides whether spill pointers still resolve.
	// Without one no pointer counts.
	Resolver Resolver
	// TextClass is the class of text a person or the model wrote, when it
	// carries no explicit class and no Oracle classifies it: a message that
	// answers no call and has Content (user and system messages, assistant
	// prose, reasoning), or has neither calls nor Content. Zero means
	// Irreducible, as seed 002 reads it: such text cannot be obtained
	// again, so it leaves the prompt only spilled behind a resolvable
	// pointer or released by a sealed plan. Reconstructible is the option
	// for a runtime that accepts losing text (it can give it again, or it
	// does not need it); mark what must stay anyway with Facts, Class or
	// Pin. An assistant message of calls with no Content of its own is not
	// text: it takes the class of the calls' results (see
	// [Context.ClassOf]), so a wire reader must give such a message its
	// prose as Content, or an explicit Class, when the provider's message
	// carries prose beside its calls.
	TextClass Class
	// NoTombstones says the runtime cannot insert tombstones at all.
	NoTombstones bool
	// Ceiling, when positive, is the hard token limit: a Prune that must
	// defer while the Context holds more tokens than this fails loudly
	// with a [*CeilingError] instead, and a [Guard] with no ceiling of its
	// own uses it.
	Ceiling int
	// HoardTokens, when positive, makes every decision list in
	// [Decision.Hoarded] the reconstructible messages of at least this
	// many tokens that it leaves in the prompt (see [HoardMode] for which
	// messages are looked at, and when).
	HoardTokens int
	// StubText replaces a stubbed result's content. Empty means
	// DefaultStubText; a blank text is refused ([Config.Validate]). It
	// says the tool can be called again, so it stands only for content
	// that is reconstructible: a stubbed message the decision lists in
	// [Decision.Pointers] was spilled, and shows its pointer instead.
	// StubTokens is its token count (default DefaultStubTokens).
	StubText   string
	StubTokens int
	// PointerTokens, when positive, is what one spill pointer costs where
	// the runtime shows it: the pointer's text in place of a stubbed
	// result's content, or one line (in the system prompt, say) for the
	// evicted messages that share the pointer; a spill.Spiller's
	// PointerText makes both, and its LongestPointerText is as long as
	// any, to count. A stubbed message that carries a pointer then counts
	// PointerTokens, not StubTokens, and the Context counts PointerTokens
	// once per distinct pointer of the messages it has evicted, from the
	// Apply that first evicts a message with it on: [Context.Tokens] and
	// [Decision.Freed] say what the prompt the runtime sends holds, and a
	// [Guard] does not stub a result of PointerTokens or fewer that would
	// show a pointer, which would free nothing. Zero counts no pointer
	// text: a stubbed message counts StubTokens whatever it carries, and
	// the lines count nothing.
	PointerTokens int
	// Counter, when set, counts the tokens the runtime gives no count
	// for: a message appended or opened with Tokens 0 is counted from its
	// Content and its calls' Args, a chunk written with 0 tokens from the
	// chunk, calls given to Close from their Args when the message was
	// opened with Tokens 0; and the tool schemas in the prompt (or their
	// compressed forms) and the tombstones that stand count toward
	// [Context.Tokens] and [Decision.Freed]. Nil counts none of these:
	// messages carry the counts given, and schemas and tombstones count
	// zero. [ApproxCounter] is the approximation; a real tokenizer (such
	// as package tokenizer's encodings) satisfies Counter too. It must be
	// safe for concurrent use.
	Counter Counter
	// SummaryCounter, when set, counts a summary's text as the runtime
	// sends it: with the message around it, escaped as its body writes
	// it (package wire sets one for each dialect). A [Guard] that
	// compacts then leaves room for what a summary costs in the prompt,
	// not for its text alone. Nil counts the text with Counter
	// ([ApproxCounter] when Counter is nil). A Summary given its Tokens
	// is counted as given. It must be safe for concurrent use.
	SummaryCounter Counter
	// Text, when set, gives the text of messages held without Content
	// (a provider body's view keeps token counts only), for the facts a
	// [Summary] must carry and for a [Brief]. Nil means each message's
	// Content.
	Text TextSource
}

// RegenMode chooses what the regenerability gate does with an unsafe
// candidate.
//
// The zero RegenMode is RegenRefuse.
type RegenMode uint8

const (
	// RegenRefuse, the default, refuses the whole plan.
	RegenRefuse RegenMode = iota
	// RegenDropUnsafe leaves out the unsafe candidates' units and reports
	// them in [Decision.Refused].
	RegenDropUnsafe
)

// DefaultStubText is the placeholder a stubbed tool result carries, and
// DefaultStubTokens the token count the guard gives it.
const (
	DefaultStubText   = "[tool result removed to save context; call the tool again if you need it]"
	DefaultStubTokens = 8
)

func (cfg Config) stub() ([]byte, int) {
	text, n := cfg.StubText, cfg.StubTokens
	if text == "" {
		text = DefaultStubText
	}
	if n <= 0 {
		n = DefaultStubTokens
	}
	return []byte(text), n
}

// stubTokens returns the token count message p has once stubbed, less
// any chunks a stream writes after its stub: PointerTokens when it
// carries a pointer and PointerTokens is set, the stub's otherwise.
func (c *Context) stubTokens(p int32) int { return c.stubTokensWith(c.pointer(p)) }

// stubTokensWith is what a stubbed message carrying pointer ptr counts.
func (c *Context) stubTokensWith(ptr Pointer) int {
	if c.cfg.PointerTokens > 0 && !ptr.IsZero() {
		return c.cfg.PointerTokens
	}
	_, n := c.cfg.stub()
	return n
}

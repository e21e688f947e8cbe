package anthropic

import (
	"context"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/pruneguard/pruneguard/wire"
)

// Config configures the middleware. Session.Guard.Budget is required,
// every other zero value is a default;
// Session.Dialect is set per request (Anthropic).
type Config struct {
	// Session configures each conversation's session: the guard, its
	// budget, trigger and minimum to clear, the tokenizer, the manifest,
	// the logger. With Session.Guard.Summarizer set, a triggered request
	// compacts before it evicts: the summary goes in the place of the
	// turns it replaces, and the report lists it (wire.Report.Summarized).
	Session wire.SessionConfig
	// MaxConversations bounds the conversations kept, least recently
	// used forgotten first. Zero means 256.
	MaxConversations int
	// OnReport, if set, is called after each guarded or refused request
	// with the conversation's name and what was done.
	OnReport func(conversation string, rep wire.Report, err error)
}

// Middleware guards the Messages requests of an
// Anthropic client. It is safe for concurrent use by any number of clients
// and requests. The zero Middleware is not usable: make one with [New].
type Middleware struct {
	cs *wire.Conversations
}

// New returns the middleware, or an error matching wire.ErrSessionConfig
// when cfg.Session is refused (no budget, a trigger below it, ...).
func New(cfg Config) (*Middleware, error) {
	cs, err := wire.NewConversations(wire.ConversationsConfig{
		Session:  cfg.Session,
		Dialects: []wire.Dialect{wire.Anthropic},
		Max:      cfg.MaxConversations,
		OnReport: cfg.OnReport,
	})
	if err != nil {
		return nil, err
	}
	return &Middleware{cs: cs}, nil
}

// Handle is the middleware function (an option.Middleware): it guards
// POST requests to .../messages and passes
// every other request on untouched. A refused request returns the error,
// a *wire.RuleError or a *pruneguard.CeilingError, and is not sent.
func (m *Middleware) Handle(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	return m.cs.Middleware(req, next)
}

// Option returns the client option that installs the middleware:
// anthropic.NewClient(mw.Option()), or per request.
func (m *Middleware) Option() option.RequestOption {
	return option.WithMiddleware(m.Handle)
}

// Conversations returns the conversations the middleware keeps.
func (m *Middleware) Conversations() *wire.Conversations { return m.cs }

// WithConversation returns a copy of ctx naming the conversation the
// request made with it belongs to; pass it to the SDK call.
func WithConversation(ctx context.Context, name string) context.Context {
	return wire.WithConversation(ctx, name)
}

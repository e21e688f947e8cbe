package openai

import (
	"context"
	"net/http"

	"github.com/openai/openai-go/v3/option"

	"github.com/pruneguard/pruneguard/sessions"
	"github.com/pruneguard/pruneguard/wire"
)

// Config configures the middleware. Session.Guard.Budget is required,
// every other zero value is a default;
// Session.Dialect is set per request (OpenAI Chat or Responses).
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
	// Sessions, if set, keeps the session of each conversation named
	// with [WithConversation] in a store the replicas of a fleet share
	// (sessions.Dir on one machine, the Redis or PostgreSQL stores across
	// machines), so that any replica continues a conversation another
	// began and sends the bodies one process would: each request loads
	// the session, guards the body and saves it back with the version
	// loaded, redoing the work when another replica saved first. When the
	// store fails, the request is refused with a *wire.StoreError
	// (matching wire.ErrSessionStore) and not sent, unless PassUnguarded
	// is set. Conversations not named stay in this process.
	Sessions sessions.Store
	// Tenant namespaces the ids of the session store for requests that
	// name no tenant with [WithTenant]: sessions.ID(tenant, conversation).
	Tenant string
	// PassUnguarded sends a request's body as it came, unguarded, when
	// the session store fails, instead of refusing it. Leave it unset to
	// fail closed.
	PassUnguarded bool
}

// Middleware guards the Chat Completions and Responses requests of an
// OpenAI client. It is safe for concurrent use by any number of clients
// and requests. The zero Middleware is not usable: make one with [New].
type Middleware struct {
	cs *wire.Conversations
}

// New returns the middleware, or an error matching wire.ErrSessionConfig
// when cfg.Session is refused (no budget, a trigger below it, ...).
func New(cfg Config) (*Middleware, error) {
	cs, err := wire.NewConversations(wire.ConversationsConfig{
		Session:  cfg.Session,
		Dialects: []wire.Dialect{wire.OpenAIChat, wire.OpenAIResponses},
		Max:      cfg.MaxConversations,
		OnReport: cfg.OnReport,

		Sessions:      cfg.Sessions,
		Tenant:        cfg.Tenant,
		PassUnguarded: cfg.PassUnguarded,
	})
	if err != nil {
		return nil, err
	}
	return &Middleware{cs: cs}, nil
}

// Handle is the middleware function (an option.Middleware): it guards
// POST requests to .../chat/completions and .../responses and passes
// every other request on untouched. A refused request returns the error,
// a *wire.RuleError, a *pruneguard.CeilingError or, with Config.Sessions,
// a *wire.StoreError, and is not sent.
func (m *Middleware) Handle(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	return m.cs.Middleware(req, next)
}

// Option returns the client option that installs the middleware:
// openai.NewClient(mw.Option()), or per request.
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

// WithTenant returns a copy of ctx naming the tenant the request made
// with it belongs to, for the ids of Config.Sessions; pass it to the SDK
// call with [WithConversation].
func WithTenant(ctx context.Context, tenant string) context.Context {
	return wire.WithTenant(ctx, tenant)
}

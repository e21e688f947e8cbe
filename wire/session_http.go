package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pruneguard/pruneguard/sessions"
)

// Conversations keeps one [Session] per conversation, for callers that
// see whole request bodies, each carrying the history so far, as SDK
// middleware does. Each request is checked with [Validate] and refused
// with a [*RuleError] when it breaks a provider rule (calls left waiting
// for results at its end included, since providers reject those in a
// request too); otherwise the conversation's session is synced with it
// and the guarded body is returned. Within a conversation, consecutive
// requests keep the pruned prefix the last prune left until the trigger
// is crossed again, so the provider's prompt cache keeps working.
//
// A request names its conversation with [WithConversation]. Without a
// name, the conversation is the one whose history the body continues
// (found by the hash of its first message, then its whole prefix); a body
// that continues none starts a new one. Responses requests that continue
// a stored response (previous_response_id or conversation set) are
// checked but not pruned: the server holds their history.
//
// With a session store (ConversationsConfig.Sessions), a named
// conversation's session lives in the store instead, shared by the
// replicas of a fleet: see the field.
//
// A Conversations is safe for concurrent use; requests of one
// conversation kept in process are guarded one at a time, and those of
// one conversation kept in a session store may run at once, the store's
// compare-and-swap deciding which saves first (the others redo their
// work). The zero Conversations is not usable: make one with
// [NewConversations].
type Conversations struct {
	cfg ConversationsConfig

	mu    sync.Mutex
	named map[string]*conversation
	auto  map[uint64][]*conversation
	all   []*conversation // least recently used first
	seed  maphash.Seed
	next  int
	saved map[string]stored // with a session store: the sessions this process saved last, by id
}

// ConversationsConfig configures [Conversations]. Session.Guard.Budget is
// required; every other zero value is the default its field documents.
type ConversationsConfig struct {
	// Session configures each conversation's session; its Dialect is
	// taken from each request instead. Guard.Budget is required.
	Session SessionConfig
	// Dialects lists the dialects [Conversations.Middleware] guards; a
	// request in another is passed on untouched. Nil means all.
	Dialects []Dialect
	// Max bounds the number of conversations kept; the least recently
	// used one is forgotten first. Zero means 256.
	Max int
	// OnReport, if set, is called after each request is guarded (or
	// refused) with the conversation's name ("auto-N" for one found by its
	// history) and what was done. It must not block for long.
	OnReport func(conversation string, rep Report, err error)
	// Sessions, if set, keeps the session of each named conversation
	// ([WithConversation]) in a store that the replicas of a fleet share,
	// so that any of them continues a conversation another began, as one
	// process that never stopped would. Each request loads the
	// conversation's session (none stored: a new one), guards the body
	// and saves the session back with the version it loaded; when
	// another replica saved first, it loads again and redoes the work,
	// so nothing is lost or applied twice. A request refused (a
	// *RuleError, a *pruneguard.CeilingError) saves nothing. When the
	// store fails, the request is refused with a *[StoreError] (matching
	// [ErrSessionStore]) and no body is sent, unless PassUnguarded is
	// set. Its id for a conversation is sessions.ID(tenant, name), the
	// tenant being the request's ([WithTenant]) or Tenant. Conversations
	// not named stay in this process, as without a store. A process keeps
	// the sessions it saved last, so that a request that finds the
	// version it saved skips the restore.
	Sessions sessions.Store
	// Tenant is the tenant of requests that name none ([WithTenant]),
	// for the ids of the session store.
	Tenant string
	// MaxConflicts bounds the tries of a request whose Save loses the
	// race for its conversation's session; the last lost gives a
	// *StoreError matching [ErrConflicts]. Zero means 8.
	MaxConflicts int
	// PassUnguarded, when the session store fails (a *StoreError), sends
	// the request's body as it came, unguarded, instead of refusing it;
	// OnReport still gets the error. Leave it unset to fail closed.
	PassUnguarded bool
}

type conversation struct {
	name  string
	d     Dialect
	s     *Session
	first uint64
}

// NewConversations returns an empty Conversations, or an error matching
// [ErrSessionConfig] when cfg.Session is refused.
func NewConversations(cfg ConversationsConfig) (*Conversations, error) {
	probe := cfg.Session
	probe.Dialect = Dialects[0] // any: the probe checks the rest
	if _, err := NewSession(probe); err != nil {
		return nil, err
	}
	for _, d := range cfg.Dialects {
		if historyKeyOf(d) == "" {
			return nil, fmt.Errorf("%w: unknown dialect %q", ErrSessionConfig, string(d))
		}
	}
	if cfg.Max <= 0 {
		cfg.Max = 256
	}
	if cfg.MaxConflicts <= 0 {
		cfg.MaxConflicts = 8
	}
	return &Conversations{cfg: cfg, named: map[string]*conversation{}, auto: map[uint64][]*conversation{}, seed: maphash.MakeSeed(),
		saved: map[string]stored{}}, nil
}

type conversationKey struct{}

// WithConversation returns a copy of ctx that names the conversation a
// request belongs to, for [Conversations].
func WithConversation(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, conversationKey{}, name)
}

// ConversationOf returns the conversation name ctx carries, if any.
func ConversationOf(ctx context.Context) (string, bool) {
	name, ok := ctx.Value(conversationKey{}).(string)
	return name, ok && name != ""
}

// Guard guards one request body of dialect d, as the type's
// documentation says, and returns the body to send. ctx names the
// conversation ([WithConversation]) and governs the session's spills, as
// in [Session.SyncContext]; [Conversations.Middleware] passes the
// request's context.
func (cs *Conversations) Guard(ctx context.Context, d Dialect, body []byte) ([]byte, Report, error) {
	name, out, rep, err := cs.guard(ctx, d, body)
	if cs.cfg.OnReport != nil {
		cs.cfg.OnReport(name, rep, err)
	}
	var se *StoreError
	if cs.cfg.PassUnguarded && errors.As(err, &se) {
		return body, Report{}, nil
	}
	return out, rep, err
}

func (cs *Conversations) guard(ctx context.Context, d Dialect, body []byte) (string, []byte, Report, error) {
	b, err := readBody(body, d)
	if err != nil {
		return "", nil, Report{}, err
	}
	if vs := b.Validate(); len(vs) > 0 {
		return "", nil, Report{}, &RuleError{Dialect: d, Violations: vs}
	}
	if b.onServer {
		return "", body, Report{}, nil
	}
	if name, named := ConversationOf(ctx); named && cs.cfg.Sessions != nil {
		out, rep, err := cs.guardStored(ctx, d, b, name)
		return name, out, rep, err
	}
	c, err := cs.find(ctx, d, b)
	if err != nil {
		return "", nil, Report{}, err
	}
	spans, _, err := historySpans(b.top, d, b.key)
	if err != nil {
		return "", nil, Report{}, err
	}
	out, rep, err := c.s.syncSpans(ctx, b.top, spans)
	return c.name, out, rep, err
}

// find returns the conversation a request belongs to, making it when new.
func (cs *Conversations) find(ctx context.Context, d Dialect, b *Body) (*conversation, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	name, named := ConversationOf(ctx)
	var first uint64
	if len(b.facts) > 0 {
		first = maphash.Bytes(cs.seed, b.facts[0].raw)
	}
	var c *conversation
	if named {
		c = cs.named[name]
		if c != nil && c.d != d {
			return nil, fmt.Errorf("wire: conversation %q is %s, the request %s", name, c.d, d)
		}
	} else {
		best := -1
		for _, k := range cs.auto[first] {
			if k.d != d {
				continue
			}
			if n := k.s.heldPrefix(b); n > best {
				c, best = k, n
			}
		}
	}
	if c == nil {
		cfg := cs.cfg.Session
		cfg.Dialect = d
		s, err := NewSession(cfg)
		if err != nil {
			return nil, err
		}
		c = &conversation{name: name, d: d, s: s, first: first}
		if named {
			cs.named[name] = c
		} else {
			c.name = "auto-" + strconv.Itoa(cs.next)
			cs.next++
			cs.auto[first] = append(cs.auto[first], c)
		}
		cs.all = append(cs.all, c)
		for len(cs.all) > cs.cfg.Max {
			cs.forget(cs.all[0])
		}
		return c, nil
	}
	// Most recently used last.
	if i := slices.Index(cs.all, c); i >= 0 {
		cs.all = append(append(cs.all[:i:i], cs.all[i+1:]...), c)
	}
	if !named && c.first != first {
		cs.auto[c.first] = slices.DeleteFunc(cs.auto[c.first], func(k *conversation) bool { return k == c })
		c.first = first
		cs.auto[first] = append(cs.auto[first], c)
	}
	return c, nil
}

func (cs *Conversations) forget(c *conversation) {
	cs.all = slices.DeleteFunc(cs.all, func(k *conversation) bool { return k == c })
	if cs.named[c.name] == c {
		delete(cs.named, c.name)
	}
	cs.auto[c.first] = slices.DeleteFunc(cs.auto[c.first], func(k *conversation) bool { return k == c })
	if len(cs.auto[c.first]) == 0 {
		delete(cs.auto, c.first)
	}
}

// Len reports how many conversations are kept.
func (cs *Conversations) Len() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.all)
}

// heldPrefix returns how many messages the session holds when msgs
// continue its history, and -1 when they do not.
func (s *Session) heldPrefix(b *Body) int {
	spans, _, err := historySpans(b.top, b.Dialect, b.key)
	if err != nil {
		return -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.continuesSpans(b.top.src, spans) {
		return -1
	}
	return len(s.entries)
}

// RequestDialect returns the dialect of a request a provider SDK sends,
// by its method and path: POST to .../chat/completions (OpenAI Chat),
// .../responses (OpenAI Responses), .../messages (Anthropic),
// ...:generateContent or ...:streamGenerateContent (Gemini),
// .../converse or .../converse-stream (Bedrock). ok is false for any
// other request.
func RequestDialect(method, path string) (d Dialect, ok bool) {
	if method != http.MethodPost {
		return "", false
	}
	path = strings.TrimSuffix(path, "/")
	for _, d := range Dialects {
		for _, end := range d.provider().paths {
			if strings.HasSuffix(path, end) {
				return d, true
			}
		}
	}
	return "", false
}

// Middleware guards an outgoing HTTP request whose method and path
// [RequestDialect] recognizes, in one of the configured dialects: the
// body is replaced by the guarded one before next sends it. A request
// refused (a *RuleError, a *pruneguard.CeilingError, a body that cannot
// be read) is not sent: the error is returned with a response that asks
// the SDK not to retry (status 400, "x-should-retry: false"), so that
// SDKs built on that convention hand the error to the caller at once,
// unchanged. Its signature is the middleware type of the official OpenAI
// and Anthropic Go SDKs (option.Middleware).
func (cs *Conversations) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	d, ok := RequestDialect(req.Method, req.URL.Path)
	if !ok || req.Body == nil || req.Body == http.NoBody || (cs.cfg.Dialects != nil && !slices.Contains(cs.cfg.Dialects, d)) {
		return next(req)
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return refused(req), fmt.Errorf("wire: read the request body: %w", err)
	}
	out, _, err := cs.Guard(req.Context(), d, body)
	if err != nil {
		return refused(req), err
	}
	req.Body = io.NopCloser(bytes.NewReader(out))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }
	req.ContentLength = int64(len(out))
	req.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return next(req)
}

// refused is the response that goes with a refused request.
func refused(req *http.Request) *http.Response {
	return &http.Response{
		Status: "400 Bad Request", StatusCode: http.StatusBadRequest,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"X-Should-Retry": []string{"false"}},
		Body:    http.NoBody,
		Request: req,
	}
}

package wiretest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/pruneguard/pruneguard/wire"
)

// Reporter receives the failures a [Provider] finds. *testing.T, and
// every testing.TB, satisfies it.
type Reporter interface {
	Errorf(format string, args ...any)
}

// Config configures a [Provider]. The zero Config is ready to use.
type Config struct {
	// Report, when set, receives each failure as it happens (a body the
	// provider would reject, a path it does not serve). Without it the
	// failures are kept for [Provider.Err].
	Report Reporter
	// Reply chooses the answer to each request it accepts; nil means
	// [DefaultReply]. Requests sent in parallel call it in parallel.
	Reply func(Request) Answer
}

// Request is a request the provider accepted, as a [Config.Reply] sees
// it.
type Request struct {
	// N is the request's number among those accepted, from 1.
	N int
	// Dialect is the request format, from its method and path.
	Dialect wire.Dialect
	// Body is the request body, read in Dialect. A Reply must not
	// modify it.
	Body *wire.Body
}

// Answer is what the provider answers: a tool call when Call is set,
// else Text.
type Answer struct {
	// Text is the assistant's text.
	Text string
	// Call, when set, is the tool call the assistant makes instead.
	Call *ToolCall
}

// ToolCall is a tool call in an [Answer].
type ToolCall struct {
	// ID is the call id; empty means one made from the request number
	// in the dialect's manner ("call_3", "toolu_3", "tooluse_3"; Gemini
	// calls go without an id).
	ID string
	// Name is the tool's name.
	Name string
	// Input is the call's arguments, a JSON object.
	Input map[string]any
}

// Provider is a fake LLM provider serving on a local address. Its
// methods are safe for concurrent use, also while it serves.
type Provider struct {
	cfg Config
	srv *httptest.Server

	mu       sync.Mutex
	bodies   [][]byte
	dialects []wire.Dialect
	failures []error
}

// NewProvider starts a provider. The caller must call [Provider.Close]
// when done (in a test, t.Cleanup(p.Close)).
func NewProvider(cfg Config) *Provider {
	if cfg.Reply == nil {
		cfg.Reply = DefaultReply
	}
	p := &Provider{cfg: cfg}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

// Start starts a provider for the test t: it reports failures to t,
// which they fail, and closes when t ends.
func Start(t testing.TB) *Provider {
	p := NewProvider(Config{Report: t})
	t.Cleanup(p.Close)
	return p
}

// URL is the provider's base URL, "http://127.0.0.1:port", with no
// trailing slash. The provider serves every path that ends as a dialect's
// does ([wire.RequestDialect]), so an SDK may add its own prefix, such as
// "/v1".
func (p *Provider) URL() string { return p.srv.URL }

// Close shuts the provider down, waiting for the requests it serves.
func (p *Provider) Close() { p.srv.Close() }

// Count returns how many requests the provider accepted so far.
func (p *Provider) Count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.bodies)
}

// Body returns the body of the accepted request i, from 0, as it arrived.
// The caller must not modify it. It panics when i is out of range, as an
// index would.
func (p *Provider) Body(i int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bodies[i]
}

// Read returns the body of the accepted request i, from 0, read in its
// dialect: a fresh *wire.Body the caller may change. It panics when i is
// out of range, as an index would.
func (p *Provider) Read(i int) *wire.Body {
	body, d := p.request(i)
	b, err := wire.Read(body, d)
	if err != nil {
		// The body was read when it arrived; reading it again cannot fail.
		panic(fmt.Sprintf("wiretest: request %d: %v", i, err))
	}
	return b
}

// request returns the body and dialect of accepted request i.
func (p *Provider) request(i int) ([]byte, wire.Dialect) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bodies[i], p.dialects[i]
}

// ErrUnknownPath is the failure of a request whose method and path name
// no dialect ([wire.RequestDialect]).
var ErrUnknownPath = errors.New("wiretest: a path no dialect uses")

// Err returns the failures found so far when the provider has no
// [Config.Report], joined (errors.Join), or nil when there are none. A
// body the provider would reject is a *wire.RuleError naming the rules
// it breaks (matching wire.ErrProviderRule), or the error of
// [wire.Validate] when it cannot be read; a request to a path no
// dialect uses matches [ErrUnknownPath].
func (p *Provider) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return errors.Join(p.failures...)
}

// fail reports a failure, or keeps it for Err.
func (p *Provider) fail(err error) {
	if p.cfg.Report != nil {
		p.cfg.Report.Errorf("%v", err)
		return
	}
	p.mu.Lock()
	p.failures = append(p.failures, err)
	p.mu.Unlock()
}

// serve answers one request: refused, with the dialect's error, when the
// provider would reject it; else recorded and answered.
func (p *Provider) serve(w http.ResponseWriter, r *http.Request) {
	d, ok := wire.RequestDialect(r.Method, r.URL.Path)
	if !ok {
		p.fail(fmt.Errorf("%w: %s %s", ErrUnknownPath, r.Method, r.URL.Path))
		http.Error(w, "unknown path "+r.URL.Path, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = validate(body, d)
	}
	if err != nil {
		p.fail(fmt.Errorf("wiretest: the provider got a body it would reject: %w", err))
		refuse(w, d, err)
		return
	}
	b, _ := wire.Read(body, d) // validate read it
	p.mu.Lock()
	p.bodies = append(p.bodies, body)
	p.dialects = append(p.dialects, d)
	n := len(p.bodies)
	p.mu.Unlock()
	ans := p.cfg.Reply(Request{N: n, Dialect: d, Body: b})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(respond(d, n, ans))
}

// validate checks body as the provider of dialect d would.
func validate(body []byte, d wire.Dialect) error {
	vs, err := wire.Validate(body, d)
	if err != nil {
		return err
	}
	if len(vs) > 0 {
		return &wire.RuleError{Dialect: d, Violations: vs}
	}
	return nil
}

package wiretest_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/pruneguard/pruneguard/wire"
	"github.com/pruneguard/pruneguard/wire/wiretest"
)

// reporter records what a provider reports.
type reporter struct {
	mu   sync.Mutex
	errs []string
}

func (r *reporter) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// broken is a body of each dialect the provider rejects: a tool result
// whose call is not in the history.
var broken = map[wire.Dialect]string{
	wire.OpenAIChat:      `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"call_x","content":"?"}]}`,
	wire.OpenAIResponses: `{"model":"gpt-4o","input":[{"role":"user","content":"hi"},{"type":"function_call_output","call_id":"call_x","output":"?"}]}`,
	wire.Anthropic:       `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_x","content":"?"}]}]}`,
	wire.Gemini:          `{"contents":[]}`,
	wire.Bedrock:         `{"messages":[{"role":"user","content":[{"toolResult":{"toolUseId":"t_x","content":[{"text":"?"}]}}]}]}`,
}

// TestRefused: in every dialect, a body the provider would reject is
// answered 400 with the violated rule in the dialect's error format, is
// not recorded, and is a failure: reported to the Reporter when there is
// one, kept for Err when not.
func TestRefused(t *testing.T) {
	for _, tc := range dialectCases {
		t.Run(string(tc.d), func(t *testing.T) {
			body := broken[tc.d]
			vs, err := wire.Validate([]byte(body), tc.d)
			if err == nil && len(vs) == 0 {
				t.Fatalf("the broken body passes wire.Validate")
			}
			rep := &reporter{}
			for _, cfg := range []wiretest.Config{{}, {Report: rep}} {
				p := wiretest.NewProvider(cfg)
				status, res := post(t, p, tc.path, []byte(body))
				p.Close()
				want := "invalid"
				if len(vs) > 0 {
					want = vs[0].Rule
				}
				if status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(res), want) || p.Count() != 0 {
					t.Errorf("status %d, answer %v, %d recorded; want 400 naming %s, none recorded", status, res, p.Count(), want)
				}
				var re *wire.RuleError
				if cfg.Report == nil && len(vs) > 0 && (!errors.As(p.Err(), &re) || re.Rules()[0] != want || re.Dialect != tc.d) {
					t.Errorf("Err() = %v, want a *wire.RuleError for %s", p.Err(), want)
				}
				if cfg.Report == nil && (p.Err() == nil || !strings.Contains(p.Err().Error(), want)) {
					t.Errorf("Err() = %v, want the failure", p.Err())
				}
				if cfg.Report != nil && (p.Err() != nil || len(rep.errs) != 1) {
					t.Errorf("Err() = %v, %d reported: want the one failure reported", p.Err(), len(rep.errs))
				}
			}
		})
	}
}

// TestUnknownPath: a path no dialect uses is answered 404 and is a
// failure.
func TestUnknownPath(t *testing.T) {
	p := wiretest.NewProvider(wiretest.Config{})
	defer p.Close()
	res, err := http.Post(p.URL()+"/v1/embeddings", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound || !errors.Is(p.Err(), wiretest.ErrUnknownPath) || p.Count() != 0 {
		t.Errorf("status %d, Err() %v, %d recorded", res.StatusCode, p.Err(), p.Count())
	}
}

// TestReply: a Reply of one's own gets each request with its number and
// dialect, and its call goes out with the id it gives.
func TestReply(t *testing.T) {
	var got []string
	p := wiretest.NewProvider(wiretest.Config{Report: t, Reply: func(r wiretest.Request) wiretest.Answer {
		got = append(got, fmt.Sprintf("%d %s %d", r.N, r.Dialect, len(r.Body.Messages)))
		return wiretest.Answer{Call: &wiretest.ToolCall{ID: "toolu_mine", Name: "grep", Input: map[string]any{"pattern": "x"}}}
	}})
	defer p.Close()
	body := `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"go"}]}`
	_, res := post(t, p, "/v1/messages", []byte(body))
	_, res2 := post(t, p, "/v1/messages", []byte(body))
	call := fmt.Sprint(res["content"])
	if fmt.Sprint(got) != "[1 anthropic 1 2 anthropic 1]" || call != "[map[id:toolu_mine input:map[pattern:x] name:grep type:tool_use]]" || res2["id"] != "msg_2" {
		t.Errorf("requests %v, answers %s and %v", got, call, res2)
	}
}

// TestParallel: requests sent at once are all recorded, each with its
// own number.
func TestParallel(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]bool{}
	p := wiretest.NewProvider(wiretest.Config{Report: t, Reply: func(r wiretest.Request) wiretest.Answer {
		mu.Lock()
		seen[r.N] = true
		mu.Unlock()
		return wiretest.DefaultReply(r)
	}})
	defer p.Close()
	const senders, each = 8, 10
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				body := fmt.Sprintf(`{"model":"gpt-4o","messages":[{"role":"user","content":"%d/%d"}]}`, s, i)
				res, err := http.Post(p.URL()+"/chat/completions", "application/json", strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				res.Body.Close()
				_ = p.Count() // read while it serves
			}
		}()
	}
	wg.Wait()
	if p.Count() != senders*each || len(seen) != senders*each || !seen[1] || !seen[senders*each] {
		t.Errorf("%d recorded, %d numbers seen", p.Count(), len(seen))
	}
}

// TestDownStore: both methods fail with ErrStoreDown.
func TestDownStore(t *testing.T) {
	_, _, err := wiretest.DownStore{}.Load(t.Context(), "a")
	_, err2 := wiretest.DownStore{}.Save(t.Context(), "a", []byte("x"), 0)
	if !errors.Is(err, wiretest.ErrStoreDown) || !errors.Is(err2, wiretest.ErrStoreDown) {
		t.Errorf("Load: %v, Save: %v", err, err2)
	}
}

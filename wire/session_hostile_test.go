package wire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

func TestSessionConfigRefused(t *testing.T) {
	sp := &spill.Spiller{Store: &spill.Memory{}}
	cases := map[string]wire.SessionConfig{
		"guard spill":       {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 100, Spill: sp}},
		"resolver+spiller":  {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 100}, Spiller: sp, Config: pruneguard.Config{Resolver: sp}},
		"trigger below":     {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 100}, Trigger: 50},
		"minclear negative": {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 100}, MinClear: -1},
		"trigger both":      {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 100, Trigger: 200}, Trigger: 300},
		"minclear both":     {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 100, MinClear: 20}, MinClear: 30},
		"no dialect":        {Guard: pruneguard.Guard{Budget: 100}},
		"odd dialect":       {Dialect: "Anthropic", Guard: pruneguard.Guard{Budget: 100}},
		"odd dialect2":      {Dialect: " anthropic", Guard: pruneguard.Guard{Budget: 100}},
		"no budget":         {Dialect: wire.Anthropic},
		"neg pointer":       {Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 100}, Config: pruneguard.Config{PointerTokens: -1}},
	}
	for name, cfg := range cases {
		s, err := wire.NewSession(cfg)
		assert.Error(t, err, name)
		assert.Nil(t, s, name)
	}
}

type failStore struct{}

func (failStore) Put(context.Context, string, []byte) error   { return errors.New("disk full") }
func (failStore) Get(context.Context, string) ([]byte, error) { return nil, spill.ErrNotFound }

type otherStore struct{ spill.Memory }

func (o *otherStore) Get(ctx context.Context, k string) ([]byte, error) {
	b, err := o.Memory.Get(ctx, k)
	if err == nil && len(b) > 0 {
		b = append([]byte(nil), b...)
		b[len(b)-1] ^= 1
	}
	return b, err
}

func spillSession(t *testing.T, st spill.Store) *wire.Session {
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 600},
		Spiller: &spill.Spiller{Store: st}})
	require.NoError(t, err)
	require.NoError(t, s.SetRequest(json.RawMessage(`{"model":"m","max_tokens":10,"system":"sys"}`)))
	return s
}

func feed(t *testing.T, s *wire.Session, n int) {
	for i := range n {
		_, err := s.Append(json.RawMessage(fmt.Sprintf(`{"role":"user","content":"question %d %s"}`, i, strings.Repeat("word ", 30))))
		require.NoError(t, err)
		_, err = s.Append(json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":"answer %d %s"}`, i, strings.Repeat("text ", 30))))
		require.NoError(t, err)
	}
}

func TestSessionSpillStoreFailsOrLies(t *testing.T) {
	for name, st := range map[string]spill.Store{"fail": failStore{}, "other": &otherStore{}} {
		s := spillSession(t, st)
		feed(t, s, 10)
		body, rep, err := s.Request()
		require.NoError(t, err, name)
		assert.Empty(t, rep.Result.Spills, name)
		assert.Empty(t, rep.Evicted, "text leaves only spilled: "+name)
		assert.NotContains(t, string(body), "recall", name)
		assert.NotEmpty(t, rep.Result.SpillErrors, name)
	}
}

func TestSessionSpillStableAcrossRequests(t *testing.T) {
	dir := t.TempDir()
	s := spillSession(t, spill.Dir(dir))
	feed(t, s, 10)
	body, rep, err := s.Request()
	require.NoError(t, err)
	assert.NotEmpty(t, rep.Result.Spills)
	assert.Contains(t, string(body), "recall")
	assert.LessOrEqual(t, rep.After, 600)
	// Sync the same body twice: same output.
	body2, _, err := s.Request()
	require.NoError(t, err)
	assert.Equal(t, string(body), string(body2))
	// The segments deleted behind the session's back: what was pruned
	// stays pruned, and the request stays the same.
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	require.NotEmpty(t, files)
	for _, f := range files {
		require.NoError(t, os.Remove(f))
	}
	body3, _, err := s.Request()
	require.NoError(t, err)
	assert.Equal(t, string(body), string(body3))
}

func TestSessionSpillConcurrent(t *testing.T) {
	s := spillSession(t, &spill.Memory{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				if g%2 == 0 {
					_, _ = s.Append(json.RawMessage(fmt.Sprintf(`{"role":"user","content":"q %d %d %s"}`, g, i, strings.Repeat("w ", 40))))
					_, _ = s.Append(json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":"a %d %d %s"}`, g, i, strings.Repeat("w ", 40))))
				} else {
					body, rep, err := s.Request()
					if err == nil {
						_, err = wire.Read(body, wire.Anthropic)
						assert.NoError(t, err)
						assert.LessOrEqual(t, rep.After, rep.Before, "a prune never grows the body")
					}
					_ = s.Abandon()
					_ = s.Abandon("")
				}
			}
		}()
	}
	wg.Wait()
	_, rep, err := s.Request()
	require.NoError(t, err)
	assert.LessOrEqual(t, rep.After, rep.Before)
}

func TestSessionSyncBadBodies(t *testing.T) {
	s := spillSession(t, &spill.Memory{})
	feed(t, s, 1)
	// A body that is not JSON or holds no history changes nothing.
	for _, b := range []string{``, `null`, `{}`, `[]`, `{"messages":null}`, `{"messages":{}}`, `{"messages":[{"role":"user","content":"x"}]`} {
		_, _, err := s.Sync([]byte(b))
		assert.Error(t, err, b)
		assert.Equal(t, 2, s.Fed(), b)
	}
	// A message that is not one is refused, whatever the rest.
	_, _, err := s.Sync([]byte(`{"messages":[1]}`))
	assert.Error(t, err)
	assert.ErrorIs(t, s.Abandon(""), pruneguard.ErrEmptyID)
	assert.ErrorIs(t, s.Abandon("nope"), pruneguard.ErrUnknownCall)
	assert.NoError(t, s.Abandon(), "nothing to abandon")
}

// The context given to a session's RequestContext, CheckContext and
// SyncContext, and to Conversations.Guard, governs its spills: once it
// is done the spills fail, are reported, and nothing spilled leaves.
func TestSessionSpillUsesTheContext(t *testing.T) {
	done, cancel := context.WithCancel(t.Context())
	cancel()
	failed := func(name string, rep wire.Report, err error) {
		t.Helper()
		require.NoError(t, err, name)
		assert.Empty(t, rep.Result.Spills, name)
		require.NotEmpty(t, rep.Result.SpillErrors, name)
		assert.ErrorIs(t, rep.Result.SpillErrors[0], context.Canceled, name)
	}
	s := spillSession(t, &spill.Memory{})
	feed(t, s, 10)
	var whole bytes.Buffer
	_, err := s.WriteTo(&whole)
	require.NoError(t, err)
	body := whole.Bytes()
	_, rep, err := s.RequestContext(done)
	failed("RequestContext", rep, err)
	rep, err = s.CheckContext(done)
	failed("CheckContext", rep, err)
	s = spillSession(t, &spill.Memory{})
	_, rep, err = s.SyncContext(done, body)
	failed("SyncContext", rep, err)
	_, rep, err = s.SyncContext(t.Context(), body)
	require.NoError(t, err)
	assert.NotEmpty(t, rep.Result.Spills, "a live context spills")

	cs, err := wire.NewConversations(wire.ConversationsConfig{Session: wire.SessionConfig{
		Guard: pruneguard.Guard{Budget: 600}, Spiller: &spill.Spiller{Store: &spill.Memory{}}}})
	require.NoError(t, err)
	_, rep, err = cs.Guard(done, wire.Anthropic, body)
	failed("Conversations.Guard", rep, err)
}

// A guarded body's CheckContext spills with its context.
func TestGuardedSpillUsesTheContext(t *testing.T) {
	done, cancel := context.WithCancel(t.Context())
	cancel()
	body := spillBodies(true)[wire.Anthropic]
	_, g := guarded(t, wire.Anthropic, body, wire.Options{Spiller: &spill.Spiller{Store: &spill.Memory{}}})
	before := g.Tokens()
	res, _, err := g.CheckContext(done, pruneguard.Guard{Budget: before - 300})
	require.NoError(t, err)
	assert.Empty(t, res.Spills)
	require.NotEmpty(t, res.SpillErrors)
	assert.ErrorIs(t, res.SpillErrors[0], context.Canceled)
	res, _, err = g.CheckContext(t.Context(), pruneguard.Guard{Budget: before - 300})
	require.NoError(t, err)
	assert.NotEmpty(t, res.Spills, "a live context spills")
}

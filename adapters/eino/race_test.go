package einoguard_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
)

// Goroutines pass lists of one growing conversation (some stale) to one
// session while others read it, and conversations of their own through
// one shared hook: every answer is a well-formed conversation that keeps
// the system prompt and the list's last user message.
func TestConcurrentPasses(t *testing.T) {
	cfg := einoguard.Config{
		Guard: pruneguard.Guard{Budget: 1500, Policy: pruneguard.KeepLastToolUses{Keep: 2, Stub: true}},
		Tools: []pruneguard.Tool{readTool},
	}
	shared := mustNew(t, cfg)
	hook := shared.Modifier()

	var mu sync.Mutex
	c := newConv("task")
	snapshot := func() []*schema.Message {
		mu.Lock()
		defer mu.Unlock()
		return c.msgs[:len(c.msgs):len(c.msgs)]
	}
	check := func(in, out []*schema.Message) error {
		if err := checkConversation(out); err != nil {
			return err
		}
		if len(in) > 0 && (out[0] != in[0]) {
			return fmt.Errorf("system prompt lost")
		}
		for i := len(in) - 1; i >= 0; i-- {
			if in[i].Role == schema.User {
				for _, m := range out {
					if m == in[i] {
						return nil
					}
				}
				return fmt.Errorf("last user message lost")
			}
		}
		return nil
	}

	var wg sync.WaitGroup
	errs := make(chan error, 100)
	wg.Add(1)
	go func() { // the runtime: grows the conversation
		defer wg.Done()
		for i := 0; i < 60; i++ {
			mu.Lock()
			c.round("read_file", 400)
			if i%10 == 9 {
				c.say(schema.User, fmt.Sprintf("question %d", i))
			}
			mu.Unlock()
		}
	}()
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() { // model calls on the shared conversation
			defer wg.Done()
			for i := 0; i < 40; i++ {
				in := snapshot()
				out, _, err := shared.Prune(context.Background(), in)
				if err == nil {
					err = check(in, out)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() { // other conversations through the same hook
			defer wg.Done()
			own := mustNew(t, cfg)
			ctx := einoguard.WithSession(context.Background(), own)
			d := newConv(fmt.Sprintf("task %d", g))
			for i := 0; i < 30; i++ {
				d.round("read_file", 400)
				out := hook(ctx, d.msgs)
				if err := check(d.msgs, out); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // readers
		defer wg.Done()
		for i := 0; i < 200; i++ {
			_ = shared.Tokens()
			_, _ = shared.Tool("read_file")
			_ = shared.ResidentTools([]*schema.ToolInfo{{Name: "read_file"}})
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

package pruneguard_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pg "github.com/pruneguard/pruneguard"
)

// The signals are read and drained from other goroutines while calls,
// results and prunes go on: TakeAlerts hands out each alert once.
func TestSignalsUnderConcurrency(t *testing.T) {
	c := pg.NewContext(pg.Config{Boundary: pg.BoundaryRelaxed, Counter: pg.ApproxCounter{}})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "read_file", Annotations: closedWorld}))
	const workers, rounds = 4, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				id := fmt.Sprintf("%d_%d", w, i)
				args := fmt.Sprintf(`{"path":"f%s"}`, id)
				// A read, pruned, then the same read again.
				for j, m := range []pg.MessageID{"a", "b"} {
					k := fmt.Sprintf("k%d_%s", j, id)
					if err := c.Append(pg.Message{ID: m + pg.MessageID(id), Calls: []pg.Call{call(k, "read_file", args)}}); err != nil {
						t.Error(err)
						return
					}
					if err := c.Append(pg.Message{ID: "r" + m + pg.MessageID(id), Answers: []pg.CallID{pg.CallID(k)}, Content: []byte(args)}); err != nil {
						t.Error(err)
						return
					}
					// The model reads the result before the check.
					if err := c.Append(pg.Message{ID: "t" + m + pg.MessageID(id), Role: pg.RoleAssistant}); err != nil {
						t.Error(err)
						return
					}
					for j == 0 {
						d, err := c.Prune(pg.Plan{Evict: []pg.MessageID{m + pg.MessageID(id)}})
						if err != nil {
							t.Error(err)
							return
						}
						if len(d.Evict) == 0 {
							t.Errorf("%s%s was not pruned: %v", m, id, d.Refused)
							return
						}
						if c.Apply(d) == nil {
							break
						}
					}
				}
			}
		}()
	}
	taken := 0
	done := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			taken += len(c.TakeAlerts())
			_ = c.Ghosts()
			_ = c.Unsound()
			_ = c.Tokens()
		}
	}()
	wg.Wait()
	close(done)
	readers.Wait()
	taken += len(c.TakeAlerts())
	st, _ := c.Tool("read_file")
	assert.Equal(t, workers*rounds, st.Refetches)
	assert.Equal(t, st.Refetches, taken, "every alert handed out once")
}

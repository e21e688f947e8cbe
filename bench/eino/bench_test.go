package einobench

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/cloudwego/eino/schema"
)

type impl struct {
	name string
	new  func() (Reducer, error)
}

var impls = []impl{
	{"eino", func() (Reducer, error) { return NewEino() }},
	{"pruneguard", func() (Reducer, error) { return &Core{}, nil }},
	{"pruneguard-adapter", func() (Reducer, error) { return &Adapter{}, nil }},
}

// shape reduces a sent list to what the model sees of it: role, call id
// and whether the content was cleared.
func shape(msgs []*schema.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Role) + ":" + m.ToolCallID
		if m.Content == Placeholder {
			out[i] += ":cleared"
		}
	}
	return out
}

// The three reducers send the same list after every turn: every result
// but the latest Keep cleared, every call and result in place.
func TestSameWorkload(t *testing.T) {
	for _, n := range []int{40, 400} {
		var want [][]string // per turn, eino's shapes
		for _, im := range impls {
			r, err := im.new()
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Start(Session(n)); err != nil {
				t.Fatal(err)
			}
			for turn := 0; turn <= 25; turn++ {
				if turn > 0 {
					if err := r.Turn(Round((n-2)/2 + turn - 1)); err != nil {
						t.Fatalf("%s: %v", im.name, err)
					}
				}
				sent, err := r.Sent()
				if err != nil {
					t.Fatal(err)
				}
				got := shape(sent)
				if im.name == "eino" {
					checkKeep(t, sent)
					want = append(want, got)
					continue
				}
				if fmt.Sprint(got) != fmt.Sprint(want[turn]) {
					t.Fatalf("%s, %d messages, turn %d: sent\n%v\nwant (eino)\n%v", im.name, n, turn, got, want[turn])
				}
			}
		}
	}
}

// checkKeep asserts that exactly the latest Keep results are uncleared
// and that the list alternates calls and their results.
func checkKeep(t *testing.T, sent []*schema.Message) {
	t.Helper()
	results := 0
	for _, m := range sent {
		if m.Role == schema.Tool {
			results++
		}
	}
	seen := 0
	for i, m := range sent {
		if m.Role != schema.Tool {
			continue
		}
		seen++
		if cleared := m.Content == Placeholder; cleared != (seen <= results-Keep) {
			t.Fatalf("result %d of %d: cleared %v", seen, results, cleared)
		}
		if p := sent[i-1]; len(p.ToolCalls) != 1 || p.ToolCalls[0].ID != m.ToolCallID {
			t.Fatalf("result %s does not follow its call", m.ToolCallID)
		}
	}
}

// BenchmarkClearToolUses measures one turn of a long session: append a
// round (an assistant call and its result) and reduce, as before a model
// call. Every turn clears one result. The session starts at the given
// length in the steady state and is rebuilt, outside the timer, every
// messages/20 turns, so it grows by at most a tenth while measured.
func BenchmarkClearToolUses(b *testing.B) {
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			for _, n := range []int{10000, 100000} {
				b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) { benchTurns(b, im, n) })
			}
		})
	}
}

func benchTurns(b *testing.B, im impl, n int) {
	var (
		r      Reducer
		rounds [][2]*schema.Message
		next   int
	)
	restart := func() {
		r = nil
		var err error
		if r, err = im.new(); err != nil {
			b.Fatal(err)
		}
		if err := r.Start(Session(n)); err != nil {
			b.Fatal(err)
		}
		if c, ok := r.(*Core); ok {
			c.NoIndex()
		}
		rounds = make([][2]*schema.Message, n/20)
		for k := range rounds {
			a, res := Round((n-2)/2 + k)
			rounds[k] = [2]*schema.Message{a, res}
		}
		next = 0
		runtime.GC()
	}
	b.StopTimer()
	restart()
	b.ReportAllocs()
	b.ResetTimer()
	b.StartTimer()
	for i := 0; i < b.N; i++ {
		if next == len(rounds) {
			b.StopTimer()
			restart()
			b.StartTimer()
		}
		if err := r.Turn(rounds[next][0], rounds[next][1]); err != nil {
			b.Fatal(err)
		}
		next++
	}
}

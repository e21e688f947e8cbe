package pruneguard

import (
	"fmt"
	"strconv"
	"testing"
)

// compactRounds appends rounds [from, to) of a session to c: a user
// message, an assistant message with a parallel batch of three calls,
// and their three results, of which one in seven is stubbed.
func compactRounds(tb interface {
	Helper()
	Fatal(...any)
}, c *Context, from, to int) {
	tb.Helper()
	for i := from; i < to; i++ {
		n := strconv.Itoa(i)
		ms := []Message{
			{ID: MessageID("u" + n), Role: RoleUser, Tokens: 30, Content: []byte("question " + n)},
			{ID: MessageID("a" + n), Role: RoleAssistant, Tokens: 40, Content: []byte("answer " + n)},
		}
		for j := range 3 {
			k := CallID("call_" + n + "_" + strconv.Itoa(j))
			ms[1].Calls = append(ms[1].Calls, Call{ID: k, Tool: "read_file", Args: []byte(`{"path":"f` + n + `"}`)})
			ms = append(ms, Message{ID: MessageID("r" + n + "_" + strconv.Itoa(j)), Role: RoleTool,
				Tokens: 100 + (i*3+j)%97, Content: []byte("result " + n), Answers: []CallID{k}})
		}
		for _, m := range ms {
			if err := c.Append(m); err != nil {
				tb.Fatal(err)
			}
		}
		if i%7 == 0 {
			c.mu.Lock()
			c.stub(c.msgs.Len() - 1)
			c.mu.Unlock()
		}
	}
}

// evictOldest removes whole units from the head of c, without taking
// their messages out of the indexes, until n messages are gone: the
// state a large decision leaves for the compaction that follows it.
func evictOldest(c *Context, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for gone := 0; gone < n; {
		u := c.firstUnit()
		if u == none {
			return
		}
		for c.unit(u).head != none {
			c.remove(c.unit(u).head, false, false)
			gone++
		}
	}
}

// BenchmarkCompact times the compaction that follows a decision evicting
// the older half of a Context of n messages: n records, half of them
// dead. Between iterations the Context is refilled to n messages.
func BenchmarkCompact(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			c := NewContext(Config{TextClass: Reconstructible})
			if err := c.RegisterTool(Tool{Name: "read_file", Annotations: Annotations{ReadOnlyHint: Bool(true), OpenWorldHint: Bool(false)}}); err != nil {
				b.Fatal(err)
			}
			rounds := n / 5
			compactRounds(b, c, 0, rounds)
			next := rounds
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				evictOldest(c, c.Len()/2+1)
				if !compacts(c.dead, c.live) {
					b.Fatalf("%d dead beside %d live call for no compaction", c.dead, c.live)
				}
				c.mu.Lock()
				b.StartTimer()
				c.compact()
				b.StopTimer()
				c.mu.Unlock()
				add := (n - c.Len()) / 5
				compactRounds(b, c, next, next+add)
				next += add
				b.StartTimer()
			}
		})
	}
}

// TestCompactBenchKeepsIndexes checks the state the benchmark compacts:
// after the compaction, every index matches the messages held.
func TestCompactBenchKeepsIndexes(t *testing.T) {
	c := NewContext(Config{TextClass: Reconstructible})
	closedTools(t, c, "read_file")
	compactRounds(t, c, 0, 400)
	for i := range 3 {
		evictOldest(c, c.Len()/2+1)
		c.mu.Lock()
		c.compact()
		c.mu.Unlock()
		indexesMatch(t, c, nil)
		compactRounds(t, c, 400+i*200, 600+i*200)
	}
}

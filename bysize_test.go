package pruneguard

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// Results stubbed, streamed into and evicted must leave the index by size
// in order: a result's count that changed while its position served as a
// separator of the B+tree sent walks in circles, and LargestResultsFirst
// looped forever holding the read lock.
func TestBySizeStaysInOrderAsCountsChange(t *testing.T) {
	c := NewContext(Config{TextClass: Reconstructible, Boundary: BoundaryRelaxed})
	closedTools(t, c, "r")
	for i := range 400 {
		mustAppend(t, c,
			Message{ID: MessageID(fmt.Sprint("a", i)), Calls: []Call{{ID: CallID(fmt.Sprint("k", i)), Tool: "r"}}},
			Message{ID: MessageID(fmt.Sprint("r", i)), Tokens: 100 + (i*7919)%500, Answers: []CallID{CallID(fmt.Sprint("k", i))}},
		)
	}
	// Streams that grow while their results are filed by size.
	for i := range 100 {
		mustAppend(t, c, Message{ID: MessageID(fmt.Sprint("s", i)), Calls: []Call{{ID: CallID(fmt.Sprint("sk", i)), Tool: "r"}}})
		require.NoError(t, c.Open(Message{ID: MessageID(fmt.Sprint("o", i)), Tokens: i, Answers: []CallID{CallID(fmt.Sprint("sk", i))}}))
	}
	check := func(round int) {
		t.Helper()
		var walked []MessageID
		for e := range c.View().Largest() {
			walked = append(walked, e.ID)
			require.LessOrEqual(t, len(walked), c.Len(), "round %d: the walk goes in circles", round)
		}
		var want []MessageID
		for _, e := range c.Snapshot() {
			if e.Result && !e.Stubbed {
				want = append(want, e.ID)
			}
		}
		require.ElementsMatch(t, want, walked, "round %d", round)
		for i := 1; i < len(walked); i++ {
			a, _ := c.Message(walked[i-1])
			b, _ := c.Message(walked[i])
			require.GreaterOrEqual(t, a.Tokens, b.Tokens, "round %d: largest first", round)
		}
	}
	for round := range 20 {
		var stub, evict []MessageID
		for i := round; i < 350; i += 7 {
			stub = append(stub, MessageID(fmt.Sprint("r", i)))
		}
		if round%3 == 0 {
			evict = append(evict, MessageID(fmt.Sprint("a", 399-round)))
		}
		for i := round; i < 100; i += 9 {
			require.NoError(t, c.Write(MessageID(fmt.Sprint("o", i)), []byte("x"), 37*round+1))
		}
		d, err := c.Prune(Plan{Stub: stub, Evict: evict})
		require.NoError(t, err)
		require.NoError(t, c.Apply(d))
		check(round)
	}
}

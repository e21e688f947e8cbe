package pruneguard_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	pg "github.com/pruneguard/pruneguard"
)

// A later compaction takes the earlier summary into its run: over a
// long session the prompt holds one summary, or one each side of a
// pinned message.
func TestCompactionOneSummary(t *testing.T) {
	for pinAt, want := range map[int]int{-1: 1, 7: 2} {
		c := pg.NewContext(pg.Config{Counter: pg.ApproxCounter{}})
		require.NoError(t, c.RegisterTool(pg.Tool{Name: "lookup"}))
		require.NoError(t, c.Append(pg.Message{ID: "sys", Role: pg.RoleSystem, Pinned: true, Content: []byte("You look orders up.")}))
		g := pg.Guard{Budget: 1500, Trigger: 2500, Summarizer: pg.Digest{}}
		most := 0
		for i := range 200 {
			n := strconv.Itoa(i)
			require.NoError(t, c.Append(pg.Message{ID: pg.MessageID("u" + n), Pinned: i == pinAt, Role: pg.RoleUser, Content: []byte("Check order " + n + ".")}))
			require.NoError(t, c.Append(pg.Message{ID: pg.MessageID("a" + n), Role: pg.RoleAssistant, Calls: []pg.Call{{ID: pg.CallID("c" + n), Tool: "lookup", Args: json.RawMessage(`{"q":"next"}`)}}}))
			require.NoError(t, c.Append(pg.Message{ID: pg.MessageID("r" + n), Role: pg.RoleTool, Answers: []pg.CallID{pg.CallID("c" + n)},
				Content: []byte(`{"order":"ORD-` + strconv.Itoa(1000+i) + `","note":"` + strings.Repeat("lorem ipsum ", 40) + `"}`)}))
			require.NoError(t, c.Append(pg.Message{ID: pg.MessageID("b" + n), Role: pg.RoleAssistant, Content: []byte("Order ORD-" + strconv.Itoa(1000+i) + " is held.")}))
			_, err := g.Check(c)
			require.NoError(t, err)
			k := 0
			for _, m := range c.Messages() {
				if m.Role == pg.RoleSummary {
					k++
				}
			}
			most = max(most, k)
		}
		require.Equal(t, want, most, "pinned at %d", pinAt)
	}
}

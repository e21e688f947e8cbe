package wiretest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard/wire/wiretest"
)

// TestCacheBreaks: a request that only adds to the one before breaks
// nothing; one whose older messages changed, or whose other fields
// changed, breaks the cache; one that dropped messages does too.
func TestCacheBreaks(t *testing.T) {
	cases := []struct {
		name   string
		bodies []string // each a model and the history's contents, "|"-separated
		grew   []int
		want   int
	}{
		{"appends", []string{"m a", "m a|b|c", "m a|b|c|d|e"}, []int{1, 2, 2}, 0},
		{"older message changed", []string{"m a", "m a|b|c", "m A|b|c|d|e"}, []int{1, 2, 2}, 1},
		{"model changed", []string{"m a", "n a|b|c", "n a|b|c|d|e"}, []int{1, 2, 2}, 1},
		{"messages dropped", []string{"m a|b|c", "m c|d|e", "m c|d|e|f|g"}, []int{3, 2, 2}, 1},
		{"more added than counted", []string{"m a", "m a|b|c"}, []int{1, 1}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := wiretest.Start(t)
			for _, b := range tc.bodies {
				model, history, _ := strings.Cut(b, " ")
				var msgs []string
				for i, text := range strings.Split(history, "|") {
					role := [2]string{"user", "assistant"}[i%2]
					msgs = append(msgs, fmt.Sprintf(`{"role":%q,"content":%q}`, role, text))
				}
				post(t, p, "/v1/chat/completions", []byte(fmt.Sprintf(`{"model":%q,"messages":[%s]}`, model, strings.Join(msgs, ","))))
			}
			if got := p.CacheBreaks(tc.grew); got != tc.want {
				t.Errorf("%d breaks, want %d", got, tc.want)
			}
		})
	}
}

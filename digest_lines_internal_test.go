package pruneguard

import (
	"strings"
	"testing"
)

// digestLines writes the lines that fit in room bytes, oldest first,
// keeping room for the count of those left out while a later line may
// follow, and the count when it fits; at each edge of the room, one byte
// more or less changes what is written.
func TestDigestLinesEdges(t *testing.T) {
	ms := []BriefMessage{
		{Role: RoleUser, Content: []byte(strings.Repeat("a", 100))},
		{Role: RoleAssistant, Content: []byte(strings.Repeat("b", 100))},
		{Role: RoleUser, Content: []byte(strings.Repeat("c", 100))},
	}
	l0, l1, l2 := digestMessage(ms[0]), digestMessage(ms[1]), digestMessage(ms[2])
	more := len("- … and 00000 more messages\n")
	left := func(n int) string { return "- … and " + string(rune('0'+n)) + " more messages\n" }
	all := l0 + l1 + l2
	for _, c := range []struct {
		room int
		want string
	}{
		{len(all), all},
		{len(all) - 1, l0 + l1 + left(1)},
		{len(l0+l1) + more, l0 + l1 + left(1)},
		{len(l0+l1) + more - 1, l0 + left(2)},
		{len(l0+l1+left(1)) - 1, l0 + left(2)},
		{len(l0) + more, l0 + left(2)},
		{len(l0) + more - 1, left(3)},
		{len(left(3)), left(3)},
		{len(left(3)) - 1, ""},
		{0, ""},
	} {
		if got := digestLines(ms, c.room); got != c.want {
			t.Errorf("room %d:\n got %q\nwant %q", c.room, got, c.want)
		}
	}
}

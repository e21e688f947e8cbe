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

// The line of each kind of message, word for word.
func TestDigestMessageLines(t *testing.T) {
	long := strings.Repeat("x", digestLine-1) + "é and more"
	for _, c := range []struct {
		m    BriefMessage
		want string
	}{
		{BriefMessage{Role: RoleAssistant, Calls: []Call{{ID: "c", Tool: "lookup"}}}, "- assistant called lookup\n"},
		{BriefMessage{Role: RoleAssistant, Calls: []Call{{ID: "c", Tool: "lookup", Args: []byte(`{"q": "x"}`)}}}, "- assistant called lookup {\"q\": \"x\"}\n"},
		{BriefMessage{Role: RoleTool, Answers: []CallID{"c"}, Tools: []string{"lookup"}, Content: []byte("ok")}, "- tool result of lookup: ok\n"},
		{BriefMessage{Role: RoleAssistant, Answers: []CallID{"c"}, Calls: []Call{{ID: "d", Tool: "next"}}}, "- assistant called next\n"},
		{BriefMessage{Role: RoleTool, Answers: []CallID{"c"}, Tools: []string{"lookup"}, IsError: true, Stubbed: true}, "- tool result of lookup (error): [content already removed]\n"},
		{BriefMessage{Role: RoleUser, Withheld: true, Content: []byte("secret")}, "- user: [withheld: a one-time secret]\n"},
		{BriefMessage{Role: RoleUser}, "- user\n"},
		{BriefMessage{Role: RoleUser, Content: []byte(long)}, "- user: " + strings.Repeat("x", digestLine-1) + "…\n"},
		{BriefMessage{Role: RoleSummary, Content: []byte("earlier")}, "- an earlier summary: its facts are kept below\n"},
	} {
		if got := digestMessage(c.m); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

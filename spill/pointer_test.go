package spill_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

func TestPointerText(t *testing.T) {
	p := pruneguard.Pointer{Store: "scratch", Key: "seg-1"}
	text := spill.PointerText(p)
	assert.Contains(t, text, "scratch:seg-1")
	assert.Contains(t, text, spill.RecallToolName+` with key "seg-1"`)
	assert.NotContains(t, strings.ToLower(text), "call the tool again")
	assert.NotContains(t, text, pruneguard.DefaultStubText)
}

// description returns what a pointer text says of its segment, or "".
func description(text string) string {
	_, rest, ok := strings.Cut(text, " to save context (")
	if !ok {
		return ""
	}
	d, _, _ := strings.Cut(rest, "); call "+spill.RecallToolName)
	return d
}

// A pointer says what its segment holds: ids, tools, facts; and a
// restarted process says the same once it has verified the segment.
func TestPointerTextDescribesSegment(t *testing.T) {
	ctx := t.Context()
	dir := spill.Dir(t.TempDir())
	s := &spill.Spiller{Store: dir, Namespace: "sess-1"}
	ms := ticketMessages(`{"ticket":"INC-4711","url":"https://tracker.example/INC-4711","opened":"2024-05-15"}`)
	ms[1].IsError = true
	p, err := s.SpillMessages(ctx, ms)
	require.NoError(t, err)
	text := s.PointerText(p)
	assert.Equal(t, "2 messages a1, r1; errors: 1; tools: create_ticket; facts: INC-4711, https://tracker.example/INC-4711, 2024-05-15", description(text))
	assert.True(t, strings.HasPrefix(text, "[content moved to spill:"+p.Key+" to save context ("), text)
	assert.True(t, strings.HasSuffix(text, `; call recall with key "`+p.Key+`" to read it back]`), text)

	restarted := &spill.Spiller{Store: dir, Namespace: "sess-1"}
	assert.Equal(t, spill.PointerText(p), restarted.PointerText(p), "unknown yet: the plain text")
	require.NoError(t, restarted.Verify(ctx, p))
	assert.Equal(t, text, restarted.PointerText(p), "the description is stored with the segment")

	s.Forget(p)
	assert.Equal(t, text, s.PointerText(p), "a pointer's text does not change")
	other := &spill.Spiller{Store: dir, Namespace: "sess-2"}
	assert.Equal(t, spill.PointerText(p), other.PointerText(p), "another namespace's pointer: nothing of its content")
	assert.Equal(t, spill.PointerText(p), (&spill.Spiller{Store: dir, Namespace: "sess-1", Name: "x"}).PointerText(p))
}

// A one-time secret is not repeated in the prompt by a pointer's text.
func TestPointerTextHidesSecrets(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{Store: &spill.Memory{}}
	ms := ticketMessages(`{"nonce":"8f3a9c77e1","order_id":"ORD-99812"}`)
	ms[1].Facts = pruneguard.OneTimeSecret
	p, err := s.SpillMessages(ctx, ms)
	require.NoError(t, err)
	text := s.PointerText(p)
	assert.NotContains(t, text, "8f3a9c77e1")
	assert.NotContains(t, text, "ORD-99812")
	assert.Contains(t, text, "tools: create_ticket")
}

// Whatever the messages, a description is bounded and printable, and a
// pointer's text is no longer than LongestPointerText.
func TestPointerTextBound(t *testing.T) {
	ctx := t.Context()
	long := strings.Repeat("x", 200)
	for _, ns := range []string{"", "sess-1", long} {
		s := &spill.Spiller{Store: &spill.Memory{}, Namespace: ns, Name: "scratch"}
		longest := s.LongestPointerText()
		assert.Equal(t, spill.MaxDescriptionLen, len(description(longest)), "the sample is a description of the longest length")
		rapid.Check(t, func(t *rapid.T) {
			var ms []pruneguard.Message
			for range rapid.IntRange(1, 30).Draw(t, "n") {
				m := genMessage(t)
				if rapid.Bool().Draw(t, "facts") {
					m.Content = []byte(genFactText(t))
				}
				ms = append(ms, m)
			}
			p, err := s.SpillMessages(ctx, ms)
			require.NoError(t, err)
			text := s.PointerText(p)
			d := description(text)
			require.NotEmpty(t, d)
			require.LessOrEqual(t, len(d), spill.MaxDescriptionLen)
			require.LessOrEqual(t, len(text), len(longest))
			for _, c := range []byte(d) {
				require.True(t, c >= 0x20 && c <= 0x7e && !strings.ContainsRune(`"[]\`, rune(c)), "%q in %q", c, d)
			}
		})
	}
}

// genFactText draws a text full of facts, longer than a description holds.
func genFactText(t *rapid.T) string {
	var words []string
	for i := range rapid.IntRange(1, 40).Draw(t, "words") {
		words = append(words, rapid.SampledFrom([]string{
			fmt.Sprintf("INC-%d", 1000+i), "src/a/b.go:12", "https://example.com/x", "exit 137", "12.50 USD",
			"no results found", `"quoted value"`, "mode=strict", "ü-INC-7", strings.Repeat("Z9", 30), "a(b)c", "x;y",
		}).Draw(t, "word"))
	}
	return strings.Join(words, " ")
}

// The description a segment was stored with is the one shown, in any
// process, even if this version would describe the messages otherwise.
func TestPointerTextFromStoredHeader(t *testing.T) {
	ctx := t.Context()
	ms := ticketMessages(`{"ticket":"INC-4711"}`)
	scratch := &spill.Memory{}
	p, err := (&spill.Spiller{Store: scratch}).SpillMessages(ctx, ms)
	require.NoError(t, err)
	seg, err := scratch.Get(ctx, p.Key)
	require.NoError(t, err)
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(seg, &doc))
	const older = "as an older version described it"
	sum := sha256.Sum256(append([]byte(older+"\x00"), doc["messages"]...))
	doc["description"], _ = json.Marshal(older)
	doc["sha256"], _ = json.Marshal(hex.EncodeToString(sum[:]))
	forged, err := json.Marshal(doc)
	require.NoError(t, err)

	store := &spill.Memory{}
	require.NoError(t, store.Put(ctx, p.Key, forged))
	s := &spill.Spiller{Store: store}
	again, err := s.SpillMessages(ctx, ms)
	require.NoError(t, err, "the same messages: reused")
	assert.Equal(t, older, description(s.PointerText(again)))
}

// NoDescriptions makes pointer texts plain, and their longest shorter.
func TestPointerTextNoDescriptions(t *testing.T) {
	ctx := t.Context()
	described := &spill.Spiller{Store: &spill.Memory{}, Namespace: "s"}
	plain := &spill.Spiller{Store: &spill.Memory{}, Namespace: "s", NoDescriptions: true}
	ms := ticketMessages(`{"ticket":"INC-4711"}`)
	p, err := plain.SpillMessages(ctx, ms)
	require.NoError(t, err)
	q, err := described.SpillMessages(ctx, ms)
	require.NoError(t, err)
	assert.Equal(t, p, q, "the same key")
	assert.Equal(t, spill.PointerText(p), plain.PointerText(p))
	assert.Contains(t, described.PointerText(q), "INC-4711")
	assert.Equal(t, len(described.LongestPointerText())-len(" ()")-spill.MaxDescriptionLen, len(plain.LongestPointerText()))
}

// A pointer's text cut to a length keeps whole parts of the description
// from its start, and always the key and the recall instruction.
func TestPointerTextUpTo(t *testing.T) {
	s := &spill.Spiller{Store: &spill.Memory{}, Namespace: "sess-1"}
	ms := ticketMessages(`{"ticket":"INC-4711","url":"https://tracker.example/INC-4711","opened":"2024-05-15"}`)
	ms[1].IsError = true
	p, err := s.SpillMessages(t.Context(), ms)
	require.NoError(t, err)
	full := description(s.PointerText(p))
	require.Equal(t, "2 messages a1, r1; errors: 1; tools: create_ticket; facts: INC-4711, https://tracker.example/INC-4711, 2024-05-15", full)

	assert.Equal(t, s.PointerText(p), s.PointerTextUpTo(p, spill.MaxDescriptionLen))
	assert.Equal(t, s.PointerText(p), s.PointerTextUpTo(p, len(full)))
	assert.Equal(t, spill.PointerText(p), s.PointerTextUpTo(p, 0), "no room: the bare pointer")
	assert.Equal(t, spill.PointerText(p), s.PointerTextUpTo(p, len("2 messages a1")-1), "no whole part fits")
	for n, want := range map[int]string{
		len("2 messages a1"):                            "2 messages a1",
		len("2 messages a1, r1; errors: 1") + 3:         "2 messages a1, r1; errors: 1",
		len(full) - 1:                                   "2 messages a1, r1; errors: 1; tools: create_ticket; facts: INC-4711, https://tracker.example/INC-4711",
		len("2 messages a1, r1; errors: 1; tools: cre"): "2 messages a1, r1; errors: 1",
	} {
		text := s.PointerTextUpTo(p, n)
		assert.Equal(t, want, description(text), "n=%d", n)
		assert.True(t, strings.HasSuffix(text, `; call recall with key "`+p.Key+`" to read it back]`), text)
	}
	other := &spill.Spiller{Store: &spill.Memory{}, Namespace: "sess-2"}
	assert.Equal(t, spill.PointerText(p), other.PointerTextUpTo(p, spill.MaxDescriptionLen), "another's pointer: the plain text")
}

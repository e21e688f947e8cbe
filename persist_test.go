package pruneguard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// fataler is what the helpers need of a test.
type fataler interface {
	Fatalf(format string, args ...any)
}

// saved returns c's saved state.
func saved(t fataler, c *Context) []byte {
	var b bytes.Buffer
	if err := c.Save(&b); err != nil {
		t.Fatalf("save: %v", err)
	}
	return b.Bytes()
}

// restoreInto saves h's Context, restores it with the harness's Resolver,
// checks that the restored Context shows the same state, saves the same
// bytes and decides the same plans, and puts it in the harness's place.
func (h *propHarness) restoreInto(t fataler, plans int) error {
	before := capture(h.c)
	b := saved(t, h.c)
	cfg := h.c.Config()
	r, err := Restore(bytes.NewReader(b), Config{Resolver: cfg.Resolver, Oracle: cfg.Oracle, Counter: cfg.Counter})
	if err != nil {
		return fmt.Errorf("restore of what Save wrote: %w", err)
	}
	if diff := diffState(before, capture(r)); diff != nil {
		return fmt.Errorf("restored state differs: %w", diff)
	}
	data := func(c *Context) Config {
		cfg := c.Config()
		cfg.Resolver, cfg.Oracle, cfg.Counter = nil, nil, nil
		return cfg
	}
	if data(h.c) != data(r) {
		return fmt.Errorf("restored config %+v, want %+v", data(r), data(h.c))
	}
	if again := saved(t, r); !bytes.Equal(b, again) {
		return fmt.Errorf("the restored context saves other bytes:\n%s\n%s", b, again)
	}
	// The same plans, the same decisions (or the same refusals), on both.
	src := h.src
	h.src = randSource{rand.New(rand.NewPCG(uint64(h.next), uint64(len(b))))}
	defer func() { h.src = src }()
	for range plans {
		p := h.randomPlan()
		d1, err1 := h.c.Prune(p)
		d2, err2 := r.Prune(p)
		if fmt.Sprint(err1) != fmt.Sprint(err2) {
			return fmt.Errorf("plan %s: original %v, restored %v", planString(p), err1, err2)
		}
		if err1 == nil && !reflect.DeepEqual(decisionFields(d1), decisionFields(d2)) {
			return fmt.Errorf("plan %s: decisions differ:\n%v\n%v", planString(p), decisionFields(d1), decisionFields(d2))
		}
	}
	h.logf("saved and restored (%d bytes)", len(b))
	h.c = r
	return nil
}

// After any sequence of events, prunes and spills, a Context restored
// from its saved state shows the same state and decides the same plans,
// and the reference model keeps agreeing with it as events go on.
func TestPropertySaveRestore(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newPropHarness(rapidSource{rt}, spillOps, 0)
		steps := rapid.IntRange(1, 120).Draw(rt, "steps")
		for i := range steps {
			if err := h.step(h.ops); err != nil {
				rt.Fatal(h.fail(err))
			}
			if i%7 == 6 || i == steps-1 {
				if err := h.restoreInto(rt, 3); err != nil {
					rt.Fatal(h.fail(err))
				}
			}
		}
	})
}

// Two runs of the same events, one saved and restored every few steps and
// one never: the same log (every event's outcome, every decision) and the
// same state at the end.
func TestPropertyRestoredContinuesAlike(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Uint64().Draw(rt, "seed")
		steps := rapid.IntRange(1, 150).Draw(rt, "steps")
		every := rapid.IntRange(1, 20).Draw(rt, "every")
		ops := []opSet{defaultOps, pruneOps, invalidOps}[rapid.IntRange(0, 2).Draw(rt, "ops")]
		mk := func() *propHarness {
			h := newPropHarness(randSource{rand.New(rand.NewPCG(seed, 1))}, ops, 0)
			h.spiller = nil // its keys are random: the two runs would differ
			return h
		}
		a, b := mk(), mk()
		for i := range steps {
			errA, errB := a.step(ops), b.step(ops)
			if fmt.Sprint(errA) != fmt.Sprint(errB) {
				rt.Fatalf("restored: %v\nnever restored: %v", a.fail(fmt.Errorf("%v", errA)), errB)
			}
			if errA != nil {
				rt.Fatalf("the reference model disagrees, restored or not: %v", a.fail(errA))
			}
			if i%every == every-1 {
				// Restore a without drawing from its source.
				src := a.src
				if err := a.restoreInto(rt, 0); err != nil {
					rt.Fatal(a.fail(err))
				}
				a.src = src
				a.log = a.log[:len(a.log)-1]
			}
		}
		require.Equal(rt, b.log, a.log)
		if diff := diffState(capture(b.c), capture(a.c)); diff != nil {
			rt.Fatal(diff)
		}
		require.Equal(rt, b.c.TakeAlerts(), a.c.TakeAlerts())
		require.Equal(rt, string(saved(rt, b.c)), string(saved(rt, a.c)))
	})
}

// Every prefix of a saved state, and the state with a byte changed, is
// refused with ErrBadState, or restores to a Context that saves and
// restores again (a change inside content may still be a valid state).
// Under the race detector, or with -short, it takes every prefix of a
// small state, a stride of the prefixes of a large one, and fewer
// changes; CI runs it in full without the detector.
func TestRestoreTruncatedOrCorrupt(t *testing.T) {
	small, err := seedRun(7, 0, 20)
	require.NoError(t, err)
	large, err := seedRun(7, 0, 150)
	require.NoError(t, err)
	b := saved(t, large.c)
	require.Greater(t, len(b), 10000)
	tries, stride := 2000, 1
	if testing.Short() || underRace {
		tries, stride = 200, 89
	}
	refusesPrefixes(t, saved(t, small.c), 1)
	refusesPrefixes(t, b, stride)
	valid := refusesChanges(t, b, tries)
	t.Logf("%d of %d corrupted states, sealed again, were still sound", valid, 2*tries)
}

// refusesPrefixes checks that every stride-th prefix of state b, and
// the last, is refused as ErrBadState in an *InputError.
func refusesPrefixes(t *testing.T, b []byte, stride int) {
	for n := 0; n < len(b); n += stride {
		for _, m := range []int{n, len(b) - 1 - n} {
			c, err := Restore(bytes.NewReader(b[:max(m, 0)]), Config{})
			if c != nil || !errors.Is(err, ErrBadState) || !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("prefix of %d bytes: %v, %v", m, c, err)
			}
			var ie *InputError
			require.ErrorAs(t, err, &ie)
		}
	}
}

// refusesChanges changes bytes of state b, and numbers in it, tries times
// each: the digest refuses every change, and, sealed again, the change
// is refused for what it says or restores to a sound Context. It
// returns how many were sound.
func refusesChanges(t *testing.T, b []byte, tries int) (valid int) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(bad []byte, sealed bool) {
		if !sealed && !bytes.Equal(bad, b) {
			// Altered as it is, the digest refuses it.
			c, err := Restore(bytes.NewReader(bad), Config{})
			require.Nil(t, c)
			require.ErrorIs(t, err, ErrBadState)
			return
		}
		// With its digest made again (an alteration that knows the
		// format), what it says is checked: refused or sound.
		c, err := Restore(bytes.NewReader(Reseal(bad)), Config{})
		if err != nil {
			require.Nil(t, c)
			require.ErrorIs(t, err, ErrBadState)
			return
		}
		valid++
		exercise(t, c)
	}
	for range tries {
		bad := bytes.Clone(b)
		for range 1 + r.IntN(3) {
			bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
		}
		check(bad, false)
		check(bad, true)
	}
	// Numbers changed to others: counts, tokens, ids made of digits.
	numbers := regexp.MustCompile(`-?[0-9]+`)
	spots := numbers.FindAllIndex(b, -1)
	for range tries {
		at := spots[r.IntN(len(spots))]
		v := []string{"-1", "0", "1", "2", "3", "7", "8", "255", "65536", "2147483648", "-9223372036854775808"}[r.IntN(11)]
		bad := append(append(bytes.Clone(b[:at[0]]), v...), b[at[1]:]...)
		check(bad, false)
		check(bad, true)
	}
	return valid
}

// exercise uses a restored Context: it must not panic, and it saves and
// restores again to the same bytes.
func exercise(t testing.TB, c *Context) {
	_ = capture(c)
	for _, u := range c.Units() {
		_, _ = c.Prune(Plan{Evict: u.Messages})
	}
	_, _ = c.Prune(Plan{})
	b := saved(t, c)
	c2, err := Restore(bytes.NewReader(b), Config{})
	if err != nil {
		t.Fatalf("a restored context saves what does not restore: %v\n%s", err, b)
	}
	if again := saved(t, c2); !bytes.Equal(b, again) {
		t.Fatalf("saves differ:\n%s\n%s", b, again)
	}
	_ = c.Append(Message{ID: "exercise", Role: RoleUser, Tokens: 1})
}

func TestRestoreRefusesOtherFormats(t *testing.T) {
	for _, in := range []string{
		``, `null`, `[]`, `{}`, `{"format":"pruneguard.context","version":3}`,
		`{"format":"other","version":1}`, `{"format":"pruneguard.context","version":1,"extra":1}`,
		`{"format":"pruneguard.context","version":1} {}`,
		`{"format":"pruneguard.context","version":1,"messages":[{"id":"a","unit":0}]}`,
		`{"format":"pruneguard.context","version":1,"messages":[{"id":"a","unit":0}],"units":[{},{}]}`,
		`{"format":"pruneguard.context","version":1,"config":{"stubText":" "}}`,
		`{"format":"pruneguard.context","version":2,"extra":1}`,
		`{"format":"pruneguard.context","version":2,"config":{"stubText":" "}}`,
		`{"format":"pruneguard.context","version":2,"config":{"boundary":1}}`,
		`{"format":"pruneguard.context","version":2,"config":{"boundary":"loose"}}`,
		`{"format":"pruneguard.context","version":2,"messages":[{"id":"a"},{"id":"a"}]}`,
		`{"format":"pruneguard.context","version":2,"messages":[{"id":"a","answers":["k"]}]}`,
		`{"format":"pruneguard.context","version":2,"messages":[{"id":"a","calls":[{"id":"k","tool":"t","state":"answered"}]}],"tools":[{"name":"t"}]}`,
		`{"format":"pruneguard.context","version":2,"messages":[{"id":"a","calls":[{"id":"k","tool":"t","state":"pending"}]}]}`,
		`{"format":"pruneguard.context","version":2,"tools":[{"name":"b"},{"name":"a"}]}`,
		`{"format":"pruneguard.context","version":2,"messages":[{"id":"a"},{"id":"b"}],"couplings":[["a"]]}`,
		`{"format":"pruneguard.context","version":2,"messages":[{"id":"a","role":"assistant"}],"readThrough":"a"}`,
	} {
		c, err := Restore(bytes.NewReader([]byte(in)), Config{})
		require.Nil(t, c, in)
		require.ErrorIs(t, err, ErrBadState, in)
		if in != "" && in[0] == '{' {
			// Sealed as Save seals, it is refused for what it says.
			c, err = Restore(bytes.NewReader(Reseal([]byte(in))), Config{})
			require.Nil(t, c, in)
			require.ErrorIs(t, err, ErrBadState, in)
		}
	}
	for _, in := range []string{
		`{"format":"pruneguard.context","version":1,"messages":[{"id":"a","unit":0}],"units":[{}]}`,
		`{"format":"pruneguard.context","version":2,"messages":[{"id":"a"}]}`,
		`{"format":"pruneguard.context","version":2,"messages":[{"id":"a","pinned":false}],"tools":[]}`,
	} {
		c, err := Restore(bytes.NewReader(Reseal([]byte(in))), Config{})
		require.NoError(t, err, in)
		require.Equal(t, 1, c.Len())
	}
}

// Ids, roles and tool names that are not UTF-8 come back byte for byte.
func TestSaveRestoreBinaryStrings(t *testing.T) {
	c := NewContext(Config{})
	require.NoError(t, c.Append(Message{ID: "\xff\xfe", Role: "r\x80", Content: []byte{0, 1, 2}, Calls: []Call{{ID: "c\xc0", Tool: "t\xff", Args: []byte(`{}`)}}}))
	require.NoError(t, c.Append(Message{ID: "ok", Role: RoleTool, Answers: []CallID{"c\xc0"}, Content: []byte{}}))
	r, err := Restore(bytes.NewReader(saved(t, c)), Config{})
	require.NoError(t, err)
	require.Equal(t, c.Messages(), r.Messages())
	require.Equal(t, c.Tools(), r.Tools())
}

// With a Resolver, Restore asks it about each pointer once, up front.
// testVerifier is a Verifier that resolves what it verified, from
// memory, and counts its calls.
type testVerifier struct {
	known    map[Pointer]bool
	missing  map[Pointer]bool // what Verify finds missing
	verified map[Pointer]int
}

func (v *testVerifier) Resolvable(p Pointer) bool { return v.known[p] }

func (v *testVerifier) Verify(ctx context.Context, p Pointer) error {
	v.verified[p]++
	if err := ctx.Err(); err != nil {
		return err
	}
	if v.missing[p] {
		return errors.New("missing")
	}
	v.known[p] = true
	return nil
}

func newTestVerifier(missing ...Pointer) *testVerifier {
	v := &testVerifier{known: map[Pointer]bool{}, missing: map[Pointer]bool{}, verified: map[Pointer]int{}}
	for _, p := range missing {
		v.missing[p] = true
	}
	return v
}

// Restore verifies each distinct pointer once, with a Verifier, and asks
// a plain Resolver nothing: it answers from memory when a prune asks.
func TestRestoreVerifiesPointersOnce(t *testing.T) {
	c := NewContext(Config{})
	p, lost := Pointer{Store: "s", Key: "k"}, Pointer{Store: "s", Key: "gone"}
	require.NoError(t, c.Append(Message{ID: "a", Content: []byte("x"), Pointer: p}))
	require.NoError(t, c.Append(Message{ID: "b", Content: []byte("y"), Pointer: p}))
	require.NoError(t, c.Append(Message{ID: "c", Content: []byte("z")}))
	require.NoError(t, c.Append(Message{ID: "d", Content: []byte("w"), Pointer: lost}))
	require.NoError(t, c.Append(Message{ID: "e", Role: RoleAssistant, Content: []byte("v")}))
	state := saved(t, c)

	v := newTestVerifier(lost)
	r, err := RestoreContext(t.Context(), bytes.NewReader(state), Config{Resolver: v})
	require.NoError(t, err, "a pointer that does not verify is kept")
	require.Equal(t, map[Pointer]int{p: 1, lost: 1}, v.verified)
	d, err := r.Prune(Plan{Evict: []MessageID{"a"}})
	require.NoError(t, err)
	require.Equal(t, []SpillNote{{"a", p}}, d.Pointers)
	_, err = r.Prune(Plan{Evict: []MessageID{"d"}})
	require.ErrorIs(t, err, ErrRegen, "the pointer that did not verify counts for no prune")

	_, err = Restore(bytes.NewReader(state), Config{Resolver: v})
	require.NoError(t, err)
	require.Equal(t, map[Pointer]int{p: 1, lost: 2}, v.verified, "what the Verifier resolves already is not verified again")

	asked := 0
	_, err = Restore(bytes.NewReader(state), Config{Resolver: ResolverFunc(func(Pointer) bool { asked++; return true })})
	require.NoError(t, err)
	require.Zero(t, asked, "a Resolver that cannot verify is not asked")
}

// A done context stops the verification: RestoreContext returns its
// error and no Context.
func TestRestoreContextDone(t *testing.T) {
	c := NewContext(Config{})
	require.NoError(t, c.Append(Message{ID: "a", Content: []byte("x"), Pointer: Pointer{Store: "s", Key: "k"}}))
	state := saved(t, c)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	v := newTestVerifier()
	r, err := RestoreContext(ctx, bytes.NewReader(state), Config{Resolver: v})
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, r)
	r, err = RestoreContext(ctx, bytes.NewReader(state), Config{})
	require.NoError(t, err, "without a Verifier there is nothing to stop")
	require.NotNil(t, r)
}

// Restore never panics; a state that loads saves back to the same
// bytes when it was written as Save writes (version 2, its JSON as
// encoding/json writes it), and to a state that says the same
// otherwise; and what it accepts can be used.
func FuzzRestore(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3} {
		h, err := seedRun(seed, 0, 60)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(saved(f, h.c))
		w := newTwin(randSource{rand.New(rand.NewPCG(seed, 9))})
		if err := w.run(80, 5); err != nil {
			f.Fatal(err)
		}
		f.Add(saved(f, w.a))
	}
	for _, name := range []string{"guard-compact", "ghost-tombstone", "read-end", "harness-2-3"} {
		b, err := os.ReadFile(filepath.Join("testdata/state/v1", name+".state"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"format":"pruneguard.context","version":1}`))
	f.Add([]byte(`{"format":"pruneguard.context","version":2}`))
	f.Fuzz(checkRestoreInput)
}

// checkRestoreInput restores b as given, and sealed as Save seals (so
// that the checks behind the digest are reached): it is refused with
// ErrBadState, or it loads and saves what it says, and can be used.
func checkRestoreInput(t *testing.T, b []byte) {
	for _, in := range [][]byte{b, Reseal(b)} {
		c, err := Restore(bytes.NewReader(in), Config{})
		if err != nil {
			if c != nil || !errors.Is(err, ErrBadState) {
				t.Fatalf("%v, %v", c, err)
			}
			continue
		}
		out := saved(t, c)
		if written, ok := savedForm(in); ok && !bytes.Equal(out, written) {
			t.Fatalf("a state loads but saves other facts:\n%s\n%s", in, out)
		} else if ok && isCanonical(in, written) && !bytes.Equal(in, out) {
			t.Fatalf("a state Save could have written saves otherwise:\n%s\n%s", in, out)
		}
		exercise(t, c)
	}
}

// savedForm returns state b of version 2 as Save writes what it says:
// its JSON written again by encoding/json and sealed.
func savedForm(b []byte) ([]byte, bool) {
	obj, ok := unsealState(b)
	if !ok {
		return nil, false
	}
	var s savedState
	if strict(obj, &s) != nil || s.Version != stateVersion {
		return nil, false
	}
	out, err := json.Marshal(&s)
	if err != nil {
		return nil, false
	}
	return sealState(out), true
}

// isCanonical reports whether b is written as written is, but for the
// white space after it.
func isCanonical(b, written []byte) bool { return bytes.Equal(bytes.TrimRight(b, " \t\r\n"), written) }

// A random sequence of events, plans, summaries and guard checks, saved
// and restored every few steps: a twin that never was saved answers,
// decides and saves alike (see the twin runs).
func FuzzSaveRestoreEvents(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &byteSource{b: data}
		w := newTwin(src)
		every := 1 + src.intn(8)
		for i := 0; i < 300 && !src.done(); i++ {
			if err := w.step(); err != nil {
				t.Fatal(err)
			}
			if i%every == every-1 {
				if err := w.restore(); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// Save may run while events arrive and prunes run: each state it writes
// restores.
func TestSaveConcurrent(t *testing.T) {
	c := NewContext(Config{TextClass: Reconstructible})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 300 {
			_ = c.Append(Message{ID: MessageID(fmt.Sprint("m", i)), Role: RoleUser, Tokens: 10, Content: []byte("x")})
			if i%10 == 9 {
				if d, err := c.Prune(Plan{Evict: []MessageID{MessageID(fmt.Sprint("m", i-9))}}); err == nil {
					_ = c.Apply(d)
				}
			}
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		r, err := Restore(bytes.NewReader(saved(t, c)), Config{})
		require.NoError(t, err)
		_, _ = r.Prune(Plan{})
	}
}

// What the model has read survives Save and Restore: a state keeps it
// when the messages no longer say it (the model's last message was
// pruned), and a restored Context holds back what the original holds
// back. A state without it, as earlier releases wrote, takes it from the
// messages: up to the model's last one, which holds back more, never
// less. A value the messages contradict is refused.
func TestSaveRestoreKeepsWhatTheModelRead(t *testing.T) {
	c := NewContext(Config{TextClass: Reconstructible})
	mustAppend(t, c,
		Message{ID: "u1", Role: RoleUser, Tokens: 10},
		Message{ID: "a1", Role: RoleAssistant, Tokens: 10},
		Message{ID: "u2", Role: RoleUser, Tokens: 10},
	)
	plain := saved(t, c)
	require.NotContains(t, string(plain), `"readThrough"`, "the roles say it")

	d, err := c.Prune(Plan{Evict: []MessageID{"a1"}})
	require.NoError(t, err)
	require.Equal(t, []MessageID{"a1"}, d.Evict)
	require.NoError(t, c.Apply(d))
	require.Equal(t, []MessageID{"u2"}, c.Unread())

	state := saved(t, c)
	require.Contains(t, string(state), `"readThrough":"u1"`)
	r, err := Restore(bytes.NewReader(state), Config{})
	require.NoError(t, err)
	require.Equal(t, c.Unread(), r.Unread())
	require.Equal(t, c.Snapshot(), r.Snapshot())
	require.Equal(t, state, saved(t, r))
	for _, x := range []*Context{c, r} {
		d, err := x.Prune(Plan{Evict: []MessageID{"u1", "u2"}})
		require.NoError(t, err)
		require.Equal(t, []MessageID{"u1"}, d.Evict)
		require.Len(t, d.Refused, 1)
		require.Equal(t, CodeUnread, d.Refused[0].Code)
	}

	// Compacted, the Context keeps the same messages read.
	c.mu.Lock()
	c.compact()
	c.mu.Unlock()
	require.Equal(t, []MessageID{"u2"}, c.Unread())
	require.Equal(t, state, saved(t, c))

	// Without the member, the messages say it: u1 came after no message
	// of the model, so it is unread too.
	old := Reseal(bytes.Replace(state, []byte(`,"readThrough":"u1"`), nil, 1))
	require.NotEqual(t, state, old)
	o, err := Restore(bytes.NewReader(old), Config{})
	require.NoError(t, err)
	require.Equal(t, []MessageID{"u1", "u2"}, o.Unread())

	// Out of range, or before the model's last message: not what Save
	// writes.
	for _, bad := range []string{`"readThrough":"u3"`, `"readThrough":1`, `"readThrough":"a1"`} {
		b := Reseal(bytes.Replace(state, []byte(`"readThrough":"u1"`), []byte(bad), 1))
		_, err := Restore(bytes.NewReader(b), Config{})
		require.True(t, errors.Is(err, ErrBadState), "%s: %v", bad, err)
	}
	m := NewContext(Config{})
	mustAppend(t, m, Message{ID: "u1", Role: RoleUser}, Message{ID: "a1", Role: RoleAssistant}, Message{ID: "u2", Role: RoleUser})
	b := saved(t, m)
	b = Reseal(bytes.Replace(b, []byte(`,"sha256"`), []byte(`,"readThrough":"u1","sha256"`), 1))
	_, err = Restore(bytes.NewReader(b), Config{})
	require.True(t, errors.Is(err, ErrBadState), "the model read u1 before writing a1: %v", err)
}

// Restore takes the functions of the Config it is given (Oracle,
// Resolver, Counter and Text) and the data of the state: a runtime that
// keeps only token counts in its Context (a provider body's view, with
// the text in its own records) restores it with the same ids and gives
// the text again, so that a summary's Brief finds the same facts.
func TestRestoreTakesTheFunctions(t *testing.T) {
	texts := map[MessageID]string{"u1": "The order ORD-1042 is held.", "a1": "Checked: ORD-1042 held since 2024-05-01."}
	cfg := Config{
		TextClass: Reconstructible, StubTokens: 3,
		Text:     TextFunc(func(id MessageID) []byte { return []byte(texts[id]) }),
		Counter:  ApproxCounter{},
		Oracle:   OracleFunc(func(m Message) Class { return Irreducible }),
		Resolver: ResolverFunc(func(Pointer) bool { return true }),
	}
	c := NewContext(cfg)
	mustAppend(t, c, Message{ID: "u1", Role: RoleUser, Tokens: 7}, Message{ID: "a1", Role: RoleAssistant, Tokens: 9}, Message{ID: "u2", Role: RoleUser, Tokens: 2})
	r, err := Restore(bytes.NewReader(saved(t, c)), Config{Text: cfg.Text, Counter: cfg.Counter, Oracle: cfg.Oracle, Resolver: cfg.Resolver, StubTokens: 99})
	require.NoError(t, err)
	got := r.Config()
	require.Equal(t, 3, got.StubTokens, "the data come from the state")
	require.Equal(t, Reconstructible, got.TextClass)
	require.NotNil(t, got.Text)
	require.Equal(t, Irreducible, got.Oracle.Classify(Message{}))
	require.True(t, got.Resolver.Resolvable(Pointer{Store: "s", Key: "k"}))
	require.Equal(t, 2, got.Counter.Count([]byte("12345678")))
	for _, x := range []*Context{c, r} {
		b, err := x.Brief(Plan{Summary: &Summary{Replace: []MessageID{"u1", "a1"}}})
		require.NoError(t, err)
		var facts []string
		for _, f := range b.Facts {
			facts = append(facts, f.Text)
		}
		require.Contains(t, facts, "ORD-1042", "the text comes from the Text source")
		require.Equal(t, c.Messages(), x.Messages(), "the same ids, roles and counts")
	}
}

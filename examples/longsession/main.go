// Command longsession runs a scripted agent session of 10,000 turns
// under a 12,000-token window, offline, with a pruneguard.Guard that
// compacts and spills. Each time the prompt passes the window's trigger,
// the guard spills the oldest run of whole units to a directory store as
// one segment, and replaces the run with a summary that pruneguard.Digest
// writes: the facts of the run verbatim, as many as its bound allows, and
// the pointer to the segment. A later compaction takes the earlier
// summary into its own run, so the prompt holds one summary, however
// long the session runs, and the pointers the prompt shows stay few.
//
// At the third turn the user gives a support ticket id; at the second,
// a lookup's result says where the courier left the order, in words that
// are no fact the guard extracts. At the last turn the user asks for
// both. The scripted model looks for each in its prompt first: the
// summary still carries the ticket verbatim (Digest writes the user's
// facts before the tools', and each compaction carries the earlier
// summary's facts forward); the courier's words are long gone from the
// prompt, so the model calls the recall tool with the order id as its
// query and reads them from the spilled result.
//
// It prints, every 1,000 turns, the prompt's size and what the summary
// and the pointer lines cost, then where each answer was found, then the
// largest of each cost against the bound the configuration states. It
// exits 1 if a request passed the window, a bound was passed, or either
// answer was not found.
//
//	go run ./examples/longsession
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

const (
	turns     = 10_000
	window    = 12_000 // the largest prompt a request may send: the guard's ceiling
	trigger   = 11_000 // a check over this compacts
	budget    = 7_000  // down to this
	digestMax = 1_500  // Digest.MaxTokens: what a summary holds beyond what it must
	ticket    = "INC-70312"
)

// The order the second turn looks up, and where its result says the
// courier left it: words, not a fact the guard extracts, so no summary
// has to carry them; the spilled result still holds them.
const (
	earlyTurn    = 2
	earlyOrder   = "ORD-100002"
	earlyDropOff = "with the neighbour behind the blue door"
)

func main() { os.Exit(run(context.Background(), os.Stdout, turns)) }

// session is the runtime: its Context, guard and store, and what it
// measured.
type session struct {
	c  *pruneguard.Context
	g  pruneguard.Guard
	sp *spill.Spiller
	w  io.Writer

	requests, compactions    int
	largestPrompt            int
	largestSummary, lineCost int
	summaries                int // summaries in the prompt at once, at most
	schemas                  int // what the tool schemas count in the prompt
}

func run(ctx context.Context, w io.Writer, n int) int {
	dir, err := os.MkdirTemp("", "pruneguard-longsession-")
	if err != nil {
		fmt.Fprintln(w, "FAILED:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	s, err := newSession(w, dir)
	if err != nil {
		fmt.Fprintln(w, "FAILED:", err)
		return 1
	}
	fmt.Fprintf(w, "A scripted session of %d turns; requests of at most %d tokens; the guard compacts above %d, down to %d.\n",
		n, window, trigger, budget)
	fmt.Fprintf(w, "Store: spill.Dir in a temporary directory. Summarizer: pruneguard.Digest{MaxTokens: %d}.\n\n", digestMax)
	for t := 1; t <= n; t++ {
		if err := s.turn(ctx, t, n); err != nil {
			fmt.Fprintf(w, "FAILED at turn %d: %v\n", t, err)
			return 1
		}
		if t%1000 == 0 {
			fmt.Fprintf(w, "turn %5d: prompt %5d tokens, %4d compactions, summary %4d tokens, pointer lines %d tokens\n",
				t, s.c.Tokens(), s.compactions, s.summaryTokens(), s.lineTokens())
		}
	}
	return s.verdict(ctx)
}

func newSession(w io.Writer, dir string) (*session, error) {
	sp := &spill.Spiller{Store: spill.Dir(dir), Name: "store", Namespace: spill.Namespace("example", "long-session")}
	counter := pruneguard.ApproxCounter{}
	c := pruneguard.NewContext(pruneguard.Config{Resolver: sp, Counter: counter,
		PointerTokens: counter.Count([]byte(sp.LongestPointerText()))})
	s := &session{c: c, sp: sp, w: w, g: pruneguard.Guard{Budget: budget, Trigger: trigger, Ceiling: window,
		Policy: pruneguard.OldestFirst{Keep: 8}, Spill: sp,
		Summarizer: pruneguard.Digest{MaxTokens: digestMax, PointerText: sp.PointerText}}}
	open := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(true)}
	for _, t := range []pruneguard.Tool{{Name: "lookup_order", Annotations: open}, spill.RecallTool()} {
		if err := c.RegisterTool(t); err != nil {
			return nil, err
		}
	}
	s.schemas = c.Tokens()
	return s, c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Pinned: true,
		Content: []byte("You are a support agent. Look orders up with lookup_order; recall reads back what was moved out of the conversation.")})
}

// turn plays one turn: the user's message, the model's call and its
// result, the model's answer; the runtime checks before each request.
func (s *session) turn(ctx context.Context, t, n int) error {
	id := strconv.Itoa(t)
	user := "Please check order ORD-" + strconv.Itoa(100000+t) + "."
	switch t {
	case 3:
		user = "My support ticket is " + ticket + "; keep it at hand, I will ask for it later."
	case n:
		return s.lastTurn(ctx, id)
	}
	if err := s.add(pruneguard.Message{ID: pruneguard.MessageID("u" + id), Role: pruneguard.RoleUser, Content: []byte(user)}); err != nil {
		return err
	}
	if err := s.request(ctx); err != nil {
		return err
	}
	order := "ORD-" + strconv.Itoa(100000+t)
	call := pruneguard.Call{ID: pruneguard.CallID("c" + id), Tool: "lookup_order", Args: json.RawMessage(`{"order":"` + order + `"}`)}
	if err := s.add(pruneguard.Message{ID: pruneguard.MessageID("a" + id), Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{call}}); err != nil {
		return err
	}
	result := fmt.Sprintf(`{"order":%q,"status":"held","carrier":"DHL","tracking":"JD%012d","note":%q`,
		order, 7000000+t*13, strings.Repeat("warehouse scan ok; ", 40))
	if t == earlyTurn {
		result += `,"left_with":"` + earlyDropOff + `"`
	}
	result += "}"
	if err := s.add(pruneguard.Message{ID: pruneguard.MessageID("r" + id), Role: pruneguard.RoleTool,
		Answers: []pruneguard.CallID{call.ID}, Content: []byte(result)}); err != nil {
		return err
	}
	if err := s.request(ctx); err != nil {
		return err
	}
	return s.add(pruneguard.Message{ID: pruneguard.MessageID("b" + id), Role: pruneguard.RoleAssistant,
		Content: []byte("Order " + order + " is held at DHL.")})
}

func (s *session) add(m pruneguard.Message) error { return s.c.Append(m) }

// request is what the runtime does before each model call: check, and
// measure what the request holds.
func (s *session) request(ctx context.Context) error {
	res, err := s.g.CheckContext(ctx, s.c)
	if err != nil {
		return err
	}
	s.requests++
	for _, d := range res.Decisions {
		if d.Summary != nil {
			s.compactions++
			s.largestSummary = max(s.largestSummary, d.Summary.Tokens)
		}
	}
	s.largestPrompt = max(s.largestPrompt, s.c.Tokens())
	s.lineCost = max(s.lineCost, s.lineTokens())
	n := 0
	for _, e := range s.c.Snapshot() {
		if e.Role == pruneguard.RoleSummary {
			n++
		}
	}
	s.summaries = max(s.summaries, n)
	if s.c.Tokens() > window {
		return fmt.Errorf("a request of %d tokens passed the window of %d", s.c.Tokens(), window)
	}
	return nil
}

// summaryTokens is what the summaries in the prompt hold.
func (s *session) summaryTokens() int {
	n := 0
	for _, e := range s.c.Snapshot() {
		if e.Role == pruneguard.RoleSummary {
			n += e.Tokens
		}
	}
	return n
}

// lineTokens is what the prompt holds beside its messages and its tool
// schemas: the pointer lines of spilled messages that left without a
// summary.
func (s *session) lineTokens() int {
	n := s.c.Tokens() - s.schemas
	for _, e := range s.c.Snapshot() {
		n -= e.Tokens
	}
	return n
}

// lastTurn asks two questions about the first turns: the ticket the
// user gave at the third turn, and where the courier left the order the
// second turn looked up, which only that lookup's result said. For each,
// the model looks in its prompt first; when the prompt does not show
// it, it calls recall with a query and reads the answer.
func (s *session) lastTurn(ctx context.Context, id string) error {
	if err := s.add(pruneguard.Message{ID: pruneguard.MessageID("u" + id), Role: pruneguard.RoleUser,
		Content: []byte("What was my support ticket number, and where did the courier leave order " + earlyOrder + "?")}); err != nil {
		return err
	}
	if err := s.request(ctx); err != nil {
		return err
	}
	t, err := s.find(ctx, id+"t", "the ticket", `{"query":"support ticket"}`, findTicket)
	if err != nil {
		return err
	}
	where, err := s.find(ctx, id+"o", "where "+earlyOrder+" was left", `{"query":"`+earlyOrder+`"}`, findDropOff)
	if err != nil {
		return err
	}
	if t != ticket || where != earlyDropOff {
		return fmt.Errorf("the model answered %q and %q, not %q and %q", t, where, ticket, earlyDropOff)
	}
	return s.add(pruneguard.Message{ID: pruneguard.MessageID("b" + id), Role: pruneguard.RoleAssistant,
		Content: []byte("Your ticket is " + t + "; the courier left " + earlyOrder + " " + where + ".")})
}

// find is the model looking for what in its prompt and, when the prompt
// does not show it, calling recall with args and reading it from the
// answer (following its pages). It says which it was.
func (s *session) find(ctx context.Context, id, what, args string, read func(string) string) (string, error) {
	if found := read(s.prompt()); found != "" {
		fmt.Fprintf(s.w, "\n%s: found in the prompt: %s.\n", what, found)
		return found, nil
	}
	call := pruneguard.Call{ID: pruneguard.CallID("c" + id), Tool: spill.RecallToolName, Args: json.RawMessage(args)}
	if err := s.add(pruneguard.Message{ID: pruneguard.MessageID("a" + id), Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{call}}); err != nil {
		return "", err
	}
	var found string
	var size, pages int
	for next := json.RawMessage(args); next != nil && found == ""; pages++ {
		out, err := s.sp.HandleRecall(ctx, next)
		if err != nil {
			return "", fmt.Errorf("recall: %w", err)
		}
		size += len(out)
		found = read(out)
		var a struct {
			Next json.RawMessage `json:"next"`
		}
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			return "", fmt.Errorf("recall: %w", err)
		}
		next = a.Next
	}
	// The answers the model read stand as one tool result.
	if err := s.add(pruneguard.Message{ID: pruneguard.MessageID("r" + id), Role: pruneguard.RoleTool,
		Answers: []pruneguard.CallID{call.ID}, Content: []byte(fmt.Sprintf("%d page(s), %d bytes", pages, size))}); err != nil {
		return "", err
	}
	if err := s.request(ctx); err != nil {
		return "", err
	}
	fmt.Fprintf(s.w, "\n%s: not in the prompt; found by recall %s: %q (%d bytes read, %d page(s) of the answer).\n",
		what, args, found, size, pages)
	return found, nil
}

// prompt is the text of the messages the prompt holds.
func (s *session) prompt() string {
	var b strings.Builder
	for _, e := range s.c.Snapshot() {
		m, _ := s.c.Message(e.ID)
		b.Write(m.Content)
		b.WriteByte('\n')
	}
	return b.String()
}

// findTicket returns the first ticket id in text, or "".
func findTicket(text string) string {
	if d := digitsAfter(text, "INC-"); d != "" {
		return "INC-" + d
	}
	return ""
}

// findDropOff returns where the courier left earlyOrder, as text shows
// it, or "": the left_with field of a lookup result of that order, as
// the tool wrote it or as a recall answer quotes it.
func findDropOff(text string) string {
	for _, q := range []string{`"`, `\"`} {
		order, key := "order"+q+":"+q+earlyOrder+q, "left_with"+q+":"+q
		for rest := text; ; {
			i := strings.Index(rest, order)
			if i < 0 {
				break
			}
			rest = rest[i+len(order):]
			obj := rest // the rest of the object
			if end := strings.Index(obj, "}"); end >= 0 {
				obj = obj[:end]
			}
			if j := strings.Index(obj, key); j >= 0 {
				v := obj[j+len(key):]
				if k := strings.Index(v, q); k >= 0 {
					return v[:k]
				}
			}
		}
	}
	return ""
}

// digitsAfter returns the digits that follow the first prefix in text,
// or "".
func digitsAfter(text, prefix string) string {
	i := strings.Index(text, prefix)
	if i < 0 {
		return ""
	}
	j := i + len(prefix)
	for j < len(text) && text[j] >= '0' && text[j] <= '9' {
		j++
	}
	return text[i+len(prefix) : j]
}

// The bounds the configuration gives: a summary holds at most what its
// Digest may (digestMax, plus its header and its pointer line); no
// pointer line stands in the system prompt, for every run that leaves
// goes into a summary; and one summary at a time, since each compaction
// takes the earlier summary into its run.
const (
	summaryBound = digestMax + 100
	lineBound    = 0
)

// verdict prints the figures and the bounds, and says whether they held.
func (s *session) verdict(ctx context.Context) int {
	fmt.Fprintf(s.w, "\n%d requests, %d compactions.\n", s.requests, s.compactions)
	fmt.Fprintf(s.w, "largest request: %d tokens (window %d)\n", s.largestPrompt, window)
	fmt.Fprintf(s.w, "largest summary: %d tokens (bound %d)\n", s.largestSummary, summaryBound)
	fmt.Fprintf(s.w, "largest pointer lines: %d tokens (bound %d)\n", s.lineCost, lineBound)
	fmt.Fprintf(s.w, "summaries in the prompt at once: at most %d\n", s.summaries)
	ok := s.largestPrompt <= window && s.largestSummary <= summaryBound && s.lineCost <= lineBound && s.summaries <= 1
	if !ok {
		fmt.Fprintln(s.w, "FAILED: a bound was passed")
		return 1
	}
	fmt.Fprintln(s.w, "OK")
	return 0
}

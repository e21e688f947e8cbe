// Command spilling runs a long simulated agent session under a small
// token budget with a pruneguard.Guard that spills: what cannot be
// obtained again (the id of a ticket the agent opened, the output of
// flaky tests, the model's own notes) is written to a durable store, read
// back and compared, and only then leaves the prompt, behind a pointer
// the model can follow with the recall tool. Near the end the scripted
// model needs the ticket id it was given at the first turn; its prompt no
// longer shows it, so it reads what the pointers it sees say their
// segments hold, calls recall with the key of the one that holds the
// ticket tool's result, and reads the original result back.
//
// It prints one block per prune (what was spilled, stubbed and evicted,
// the tokens before and after, and the pointer text the runtime put in
// the prompt), the recall, and a summary. Then it checks that every
// message whose content ever left the prompt either went as
// reconstructible and was obtained again, identical, when it went, or
// reads back identical from the store at the end; it exits 1 if not.
//
// Segment keys are long hashes of their content; the trace shows them as
// seg-1, seg-2, ... in the order written, to keep it short.
//
//	go run ./examples/spilling
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

const (
	turns  = 300    // the session's length, about: it ends when the model is done
	window = 12_000 // the largest prompt the runtime sends: the guard's trigger
	budget = 8_000  // what a prune brings the prompt down to
)

func main() { os.Exit(run(os.Stdout)) }

type trace struct{ w io.Writer }

func (t *trace) printf(format string, args ...any) { fmt.Fprintf(t.w, format+"\n", args...) }

func run(w io.Writer) int {
	ctx := context.Background()
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	dir, err := os.MkdirTemp("", "pruneguard-spilling-")
	if err != nil {
		fmt.Fprintln(bw, "FAILED:", err)
		return 1
	}
	defer os.RemoveAll(dir)

	sp := &spill.Spiller{Store: spill.Dir(dir), Name: "scratch"}
	fmt.Fprintf(bw, "An agent session of about %d turns; the guard prunes above %d tokens of prompt, down to %d.\n", turns, window, budget)
	fmt.Fprintf(bw, "Store: spill.Dir in a temporary directory, named %q. Policy: KeepLastToolUses{Keep: 4, Stub: true}.\n\n", sp.Name)
	rt := play(ctx, bw, sp, true)
	// The same session with the same guard, but no spill store, for
	// comparison: nothing irreducible may go.
	base := play(ctx, io.Discard, &spill.Spiller{Store: &spill.Memory{}}, false)
	return rt.summary(ctx, base)
}

// play runs the session with the guard spilling to sp (or, with spilling
// false, not spilling at all, for comparison) and returns the runtime as
// the session left it.
func play(ctx context.Context, w io.Writer, sp *spill.Spiller, spilling bool) *runtime {
	rt := newRuntime(sp, &trace{w})
	if !spilling {
		rt.g.Spill = nil
	}
	m := rt.m
	rt.add(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Pinned: true,
		Content: []byte("You are a coding agent working in the ledger repository. Use the tools; keep the user informed.")})
	rt.add(pruneguard.Message{ID: "task", Role: pruneguard.RoleUser, Pinned: true,
		Content: []byte("The nightly settlement build fails now and then. Open a ticket, find the cause, fix it, and post the fix on the ticket.")})

	for rt.turn = 1; !m.done && rt.turn <= turns+20; rt.turn++ {
		t := rt.turn
		if t%60 == 30 {
			rt.add(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("u", t)), Role: pruneguard.RoleUser,
				Content: []byte("Any progress? Keep it short.")})
		}
		rt.check(ctx)
		prompt := rt.prompt()
		a := m.next(t, prompt)
		if m.needed == t && !m.sawID {
			pointers := 0
			for _, p := range prompt {
				pointers += len(pointerRE.FindAllString(p.Text, -1))
			}
			rt.printf("turn %d: the model must post the fix on its ticket; the id is not in its prompt (%d tokens), which shows %d pointers",
				t, rt.c.Tokens()+rt.extra(), pointers)
		}
		out := rt.act(ctx, a)
		switch a.Tool {
		case "create_ticket":
			class, _ := rt.c.ClassOf(out.ID)
			rt.printf("turn %d: create_ticket answers %s: %s (a mutation, not idempotent: calling it again opens another ticket)", t, out.Content, class)
		case "apply_patch":
			rt.printf("turn %d: apply_patch %s: the reads of the repository before it are stale now, so irreducible", t, out.Content)
		case spill.RecallToolName:
			var ans struct{ Messages []struct{ ID string } }
			_ = json.Unmarshal(out.Content, &ans)
			rt.printf("turn %d: the model calls recall %s: %d messages come back (%d tokens, a reconstructible result)", t, a.Args, len(ans.Messages), out.Tokens)
		case "comment_ticket":
			if m.from != "" {
				orig := rt.orig[m.from].Content
				same := string(orig) == m.fromText
				rt.printf("turn %d: the model reads %s in %s, recalled from %s; identical to what create_ticket answered: %v", t, m.ticket, m.from, m.fromKey, same)
				if !same {
					rt.fail("the recalled %s differs from the original: %q, not %q", m.from, m.fromText, orig)
				}
			}
			rt.printf("turn %d: comment_ticket %s answers %s", t, m.ticket, out.Content)
		}
	}
	return rt
}

// act appends the model's message and, for a tool call, runs it and
// appends its result, which it returns.
func (rt *runtime) act(ctx context.Context, a action) pruneguard.Message {
	t := rt.turn
	msg := pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("a", t)), Role: pruneguard.RoleAssistant}
	if a.Text != "" {
		msg.Content = []byte(a.Text)
	}
	if a.Tool == "" {
		rt.add(msg)
		return rt.orig[msg.ID]
	}
	k := pruneguard.Call{ID: pruneguard.CallID(fmt.Sprint("c", t)), Tool: a.Tool, Args: json.RawMessage(a.Args)}
	msg.Calls = []pruneguard.Call{k}
	rt.add(msg)
	out, isErr := rt.call(ctx, k)
	res := pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("r", t)), Role: pruneguard.RoleTool,
		Content: out, Answers: []pruneguard.CallID{k.ID}, IsError: isErr}
	rt.add(res)
	return rt.orig[res.ID]
}

// summary prints the session's figures, and those of base, the same
// session without spilling, if given; it checks what left the prompt and
// what the model did, and returns the exit code.
func (rt *runtime) summary(ctx context.Context, base *runtime) int {
	m := rt.m
	reconstructible, spilled := rt.verify(ctx)
	ws := rt.ws
	rt.printf("")
	rt.printf("turns %d, messages %d, prunes %d, segments %d, recalls by the model %d",
		rt.turn-1, len(rt.orig), rt.prunes, len(rt.keys), rt.recalls)
	rt.printf("prompt at the end %d tokens (the largest sent %d, window %d); without pruning it would hold %d",
		rt.c.Tokens()+rt.extra(), rt.maxPrompt, window, rt.unpruned)
	rt.printf("prunes that ended over the budget of %d: %d, %d of them by pointer text the Context does not count", budget, rt.overBudget, rt.overLines)
	rt.printf("pointer text at the end: %d tokens, %d lines in the system prompt and %d stubs showing their pointer",
		rt.pointerText(), len(rt.lines), len(rt.inPlace))
	rt.printf("left the prompt: %d messages; %d went as reconstructible and were obtained again, identical; %d read back identical from the store now",
		len(rt.left), reconstructible, spilled)
	rt.printf("tickets opened %d %v, comments posted on %s: %d", len(ws.tickets), ws.tickets, m.ticket, len(ws.comments[m.ticket]))

	if base != nil {
		rt.printf("without a spill store the same guard prunes %d times, %d of them ending over the budget (at %d tokens the last), and the ticket id never leaves the prompt",
			base.prunes, base.overBudget, base.lastAfter)
	}
	switch {
	case m.sawID:
		rt.fail("the ticket id never left the prompt: nothing was recalled")
	case m.from == "":
		rt.fail("the model did not recall the ticket id")
	}
	if len(ws.tickets) != 1 || m.ticket != ws.tickets[0] || len(ws.comments[ws.tickets[0]]) != 1 {
		rt.fail("the fix did not land once on the one ticket")
	}
	if rt.maxPrompt > window {
		rt.fail("a prompt of %d tokens was sent, over the window of %d", rt.maxPrompt, window)
	}
	if lost := len(rt.left) - reconstructible - spilled; lost > 0 || len(rt.failures) > 0 {
		rt.printf("NOT OK: %d messages lost, %d failures", lost, len(rt.failures))
		return 1
	}
	rt.printf("OK: nothing that left the prompt was lost")
	return 0
}

package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// action is what the model answers at one turn: text, a tool call, or
// both.
type action struct {
	Text string
	Tool string
	Args string
}

// model is the scripted model. It investigates for most of the session
// (reading files, grepping, running the flaky tests, writing notes), then
// patches the bug and must post the fix on the ticket it opened at the
// start. It knows the ticket id only from what its prompt shows: when the
// id is no longer there, it follows the pointers it finds with the recall
// tool.
type model struct {
	patchAt int // the turn it patches the bug

	ticket   string               // the ticket id, once it has read it
	from     pruneguard.MessageID // the message it read it in
	fromKey  string               // the recall key that brought it back, if any
	fromText string               // the content it read it in, as the recall answered it
	tried    map[string]bool      // recall keys already followed
	more     string               // the arguments of the next page of the latest recall answer
	recalled []string             // in order
	sawID    bool                 // the id was in the prompt when it needed it
	needed   int                  // the turn it first needed the id
	done     bool
}

var (
	ticketRE  = regexp.MustCompile(`"ticket":"([A-Z]+-[0-9]+)"`)
	pointerRE = regexp.MustCompile(`\[content moved to [^\]]*call ` + spill.RecallToolName + ` with key "([^"]+)" to read it back\]`)
)

// next is the model's answer to the prompt at turn t.
func (m *model) next(t int, prompt []part) action {
	last := prompt[len(prompt)-1]
	if last.Role == pruneguard.RoleUser && t > 1 {
		return action{Text: fmt.Sprintf("Still on it (turn %d): SettleBatch fails about two runs in three; I am reading the settlement path.", t)}
	}
	switch {
	case t == 1:
		return action{Text: "I'll open a ticket to track this first.", Tool: "create_ticket",
			Args: `{"title":"ledger: nightly settlement build fails intermittently"}`}
	case t < m.patchAt:
		return investigate(t)
	case t == m.patchAt:
		return action{Text: "Found it: settleBatch has no deadline, so a slow journal write hangs batch 17.", Tool: "apply_patch",
			Args: `{"path":"ledger/settle.go","diff":"+\tctx, cancel := context.WithTimeout(ctx, deadline)"}`}
	case t == m.patchAt+1:
		return action{Tool: "run_tests", Args: `{"package":"./ledger/..."}`}
	}
	return m.report(t, prompt)
}

// investigate is one turn of the long middle of the session.
func investigate(t int) action {
	files := []string{"settle", "batch", "ledger", "journal", "clock", "retry", "store", "audit", "export", "nightly"}
	patterns := []string{"func settle2", "func journal1", "deadline", "func retry3", "\"clock\", 4"}
	switch {
	case t%11 == 0:
		return action{Text: fmt.Sprintf("Notes at turn %d: the failures all involve batch 17 and a journal write that takes over 30s; "+
			"retry.go retries without backoff; clock.go is not involved. Next: compare the settle and journal paths.", t)}
	case t%7 == 0:
		return action{Tool: "run_tests", Args: `{"package":"./ledger/..."}`}
	case t%5 == 0:
		return action{Tool: "grep", Args: fmt.Sprintf(`{"pattern":%q}`, patterns[(t/5)%len(patterns)])}
	}
	return action{Tool: "read_file", Args: fmt.Sprintf(`{"path":"ledger/%s.go"}`, files[(t*7)%len(files)])}
}

// report posts the fix on the ticket. The id was read at turn 1; if the
// prompt no longer shows it, the model reads what each pointer says its
// segment holds and follows first those that name the tool that gave
// the id, then the others, oldest first, until a recall brings it back.
func (m *model) report(t int, prompt []part) action {
	if m.needed == 0 {
		m.needed = t
	}
	if m.tried == nil {
		m.tried = map[string]bool{}
	}
	if m.ticket == "" {
		m.find(prompt)
	}
	if m.ticket != "" {
		m.done = true
		return action{Text: "Posting the fix on " + m.ticket + ".", Tool: "comment_ticket",
			Args: fmt.Sprintf(`{"ticket":%q,"text":"Fixed: settleBatch now has a deadline; tests pass."}`, m.ticket)}
	}
	if m.more != "" { // the last answer has more pages
		more := m.more
		m.more = ""
		return action{Tool: spill.RecallToolName, Args: more}
	}
	for _, first := range []bool{true, false} {
		for _, p := range prompt {
			for _, k := range pointerRE.FindAllStringSubmatch(p.Text, -1) {
				if first != strings.Contains(k[0], "create_ticket") || m.tried[k[1]] {
					continue
				}
				m.tried[k[1]] = true
				m.recalled = append(m.recalled, k[1])
				return action{Tool: spill.RecallToolName, Args: fmt.Sprintf(`{"key":%q}`, k[1])}
			}
		}
	}
	// Nothing left to follow: it would have to open a second ticket.
	m.done = true
	return action{Text: "I cannot find the ticket id.", Tool: "create_ticket", Args: `{"title":"ledger: nightly settlement fix"}`}
}

// find looks for the ticket id in the prompt: in a message as it was
// written, or in a recall answer (a JSON object whose "messages" are the
// messages read back). When the latest recall answer has more pages, it
// notes the arguments of the next.
func (m *model) find(prompt []part) {
	for i, p := range prompt {
		var answer struct {
			Messages []struct {
				ID      pruneguard.MessageID `json:"id"`
				Content string               `json:"content"`
			} `json:"messages"`
			Next json.RawMessage `json:"next"`
		}
		if json.Unmarshal([]byte(p.Text), &answer) == nil && answer.Messages != nil {
			for _, r := range answer.Messages {
				if id := ticketRE.FindStringSubmatch(r.Content); id != nil {
					m.ticket, m.from, m.fromText = id[1], r.ID, r.Content
					m.fromKey = m.recalled[len(m.recalled)-1]
					return
				}
			}
			if i == len(prompt)-1 && answer.Next != nil {
				m.more = string(answer.Next)
			}
			continue
		}
		if id := ticketRE.FindStringSubmatch(p.Text); id != nil {
			m.ticket, m.sawID = id[1], true
			return
		}
	}
}

package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// ContextTurner is a [Turner] whose state is what a runtime keeps of a
// conversation: a pruneguard.Context, as Context.Save writes it, beside
// the count of turns each replica applied. A session starts with a user
// message; a turn restores the Context, appends an assistant call of a
// read-only tool and its result, runs Guard (which keeps the messages
// within its budget), and saves it. A turn refuses state whose count says the turn was applied
// already or an earlier one was lost, so a lost update fails the run at
// the next turn of the replica that lost it, and Check finds the rest.
//
// The zero ContextTurner guards with a budget of 4,000 tokens, evicting
// the oldest messages, and results of 500 tokens: about seven rounds stay
// in the Context. Its state still grows with the turns, by what the
// Context remembers of the results it pruned (up to 4,096 of them). A
// ContextTurner is a plain value, safe for concurrent use.
type ContextTurner struct {
	Guard        pruneguard.Guard // zero Budget: 4,000 tokens, OldestFirst
	ResultTokens int              // tokens of each result; zero means 500
}

// ContextLoad is the run of a load test on Contexts: 64 conversations of
// 200 turns per replica when full, the figure a fleet is measured by, and
// 8 of 20 otherwise, cheap enough for every test run.
func ContextLoad(full bool) StressConfig {
	if full {
		return StressConfig{Sessions: 64, Turns: 200, Turner: ContextTurner{}}
	}
	return StressConfig{Sessions: 8, Turns: 20, Turner: ContextTurner{}}
}

// contextState is the state a ContextTurner saves: a first line of the
// turns applied by each replica, in decimal, then the Context's state.
type contextState struct {
	Turns   []int
	Context []byte
}

func (st *contextState) encode() []byte {
	var b bytes.Buffer
	for i, n := range st.Turns {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(n))
	}
	b.WriteByte('\n')
	b.Write(st.Context)
	return b.Bytes()
}

func decodeState(state []byte) (*contextState, error) {
	line, rest, ok := bytes.Cut(state, []byte{'\n'})
	if !ok {
		return nil, errors.New("state: no line of turns")
	}
	st := &contextState{Context: rest}
	for _, f := range strings.Fields(string(line)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("state: %w", err)
		}
		st.Turns = append(st.Turns, n)
	}
	return st, nil
}

// readTool is the tool each turn calls.
var readTool = pruneguard.Tool{Name: "read", Annotations: pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}

// Turn applies turn t of replica to the Context state holds.
func (ct ContextTurner) Turn(state []byte, _, replica, t int) ([]byte, error) {
	st, c, err := ct.load(state)
	if err != nil {
		return nil, err
	}
	for len(st.Turns) <= replica {
		st.Turns = append(st.Turns, 0)
	}
	if st.Turns[replica] != t {
		return nil, fmt.Errorf("replica %d's turn %d meets a state holding %d of its turns: an update was lost or applied twice", replica, t, st.Turns[replica])
	}
	if state == nil {
		err = c.Append(pruneguard.Message{ID: "task", Role: pruneguard.RoleUser, Tokens: 20, Content: []byte("the task")})
	}
	if err != nil {
		return nil, err
	}
	if err := ct.apply(c, replica, t); err != nil {
		return nil, err
	}
	st.Turns[replica]++
	var b bytes.Buffer
	if err := c.Save(&b); err != nil {
		return nil, err
	}
	st.Context = b.Bytes()
	return st.encode(), nil
}

// load reads state, or starts a new Context for nil.
func (ct ContextTurner) load(state []byte) (*contextState, *pruneguard.Context, error) {
	if state == nil {
		c := pruneguard.NewContext(pruneguard.Config{})
		return &contextState{}, c, c.RegisterTool(readTool)
	}
	st, err := decodeState(state)
	if err != nil {
		return nil, nil, err
	}
	c, err := pruneguard.Restore(bytes.NewReader(st.Context), pruneguard.Config{})
	if err != nil {
		return nil, nil, err
	}
	return st, c, nil
}

// apply appends the messages of one turn and guards the Context.
func (ct ContextTurner) apply(c *pruneguard.Context, replica, t int) error {
	name := fmt.Sprintf("r%d.%d", replica, t)
	tokens := ct.ResultTokens
	if tokens <= 0 {
		tokens = 500
	}
	call := pruneguard.CallID(name + ".c")
	for _, m := range []pruneguard.Message{
		{ID: pruneguard.MessageID(name + ".a"), Role: pruneguard.RoleAssistant, Tokens: 30, Calls: []pruneguard.Call{{ID: call, Tool: readTool.Name, Args: []byte(`{"turn":"` + name + `"}`)}}},
		{ID: pruneguard.MessageID(name + ".r"), Role: pruneguard.RoleTool, Tokens: tokens, Answers: []pruneguard.CallID{call}, Content: []byte(strings.Repeat("x", 64) + name)},
	} {
		if err := c.Append(m); err != nil {
			return err
		}
	}
	g := ct.Guard
	if g.Budget <= 0 {
		g = pruneguard.Guard{Budget: 4000, Policy: pruneguard.OldestFirst{}}
	}
	_, err := g.Check(c)
	return err
}

// Check checks that state counts every turn of every replica, and that
// its Context holds the result of the turn saved last, the last turn of
// some replica.
func (ct ContextTurner) Check(state []byte, _, replicas, turns int) error {
	st, c, err := ct.load(state)
	if err != nil {
		return err
	}
	if len(st.Turns) != replicas {
		return fmt.Errorf("turns of %d replicas, want %d", len(st.Turns), replicas)
	}
	last := false
	for rep, n := range st.Turns {
		if n != turns {
			return fmt.Errorf("%d turns of replica %d, want %d: updates were lost", n, rep, turns)
		}
		_, ok := c.Message(pruneguard.MessageID(fmt.Sprintf("r%d.%d.r", rep, turns-1)))
		last = last || ok
	}
	if !last {
		return fmt.Errorf("the Context holds the last turn of no replica")
	}
	return nil
}

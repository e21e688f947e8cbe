// Command fleet serves scripted conversations from two replica processes
// that share a session store, as the replicas of a fleet behind a load
// balancer would, and checks that the fleet sends exactly what one
// process that never stopped sends.
//
// Two conversations run side by side. At each turn the runtime sends the
// whole history of each (Anthropic's Messages format), and each request
// lands on a replica: the two replicas serve one conversation each, at
// the same time, and swap at the next turn, so each conversation moves
// to the other replica at every turn. A replica is a child process
// running a wire.Conversations whose sessions live in the shared store
// (ConversationsConfig.Sessions): it loads the conversation's session,
// guards the body (pruning and compacting once the history outgrows the
// budget) and saves the session back with the version it loaded. The
// same requests go, one at a time, to a wire.Conversations in this
// process with no store at all: the reference.
//
// It prints, per turn, what each replica did, then the count of bodies
// that differ from the reference's. It exits 1 on any difference in a
// body or in what was pruned.
//
// The store is a directory (sessions.Dir) in a temporary folder, or
// Redis when an address is given:
//
//	go run .                       # in examples/fleet
//	go run . -redis 127.0.0.1:6379
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/sessions"
	redisstore "github.com/pruneguard/pruneguard/stores/redis"
	"github.com/pruneguard/pruneguard/wire"
)

// replicaEnv, set to 1 in a process's environment, makes it a replica:
// the command starts two so.
const replicaEnv = "PRUNEGUARD_FLEET_REPLICA"

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// options are the command line's; parse prints what it refuses.
type options struct {
	turns   int
	redis   string
	prefix  string
	dir     string
	alone   bool
	replica bool
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.turns, "turns", 40, "turns of each conversation")
	fs.StringVar(&o.redis, "redis", "", "address of a Redis server to keep the sessions in (default: a directory)")
	fs.StringVar(&o.prefix, "prefix", "", "key prefix on Redis (default: one per run)")
	fs.StringVar(&o.dir, "dir", "", "directory of the sessions (default: a new temporary one)")
	fs.BoolVar(&o.alone, "alone", false, "replicas share no store, each keeping its own sessions (to see the check fail)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.replica = os.Getenv(replicaEnv) == "1"
	if o.turns < 1 {
		err := errors.New("-turns must be at least 1")
		fmt.Fprintln(stderr, "fleet:", err)
		return o, err
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if err != nil {
		return 2 // said on stderr
	}
	if o.replica {
		err = serve(ctx, o, stdin, stdout)
	} else {
		err = lead(ctx, o, stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "fleet:", err)
		return 1
	}
	return 0
}

// config is how every replica, and the reference, guards a conversation:
// a 6,000-token window, pruned down to 4,000, compacting first.
func config() wire.ConversationsConfig {
	closed := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}
	return wire.ConversationsConfig{
		Session: wire.SessionConfig{
			Guard: pruneguard.Guard{
				Budget: 4000, Ceiling: 6000, Policy: pruneguard.OldestFirst{},
				Summarizer: pruneguard.Digest{MaxTokens: 300},
			},
			Trigger:  5000,
			Manifest: &wire.Manifest{Tools: []wire.ManifestTool{{Name: "lookup_order", Annotations: &closed}}},
			Config:   pruneguard.Config{TextClass: pruneguard.Reconstructible},
		},
	}
}

// store opens the shared session store the options name.
func store(o options) (sessions.Store, func(), error) {
	if o.redis != "" {
		client := goredis.NewClient(&goredis.Options{Addr: o.redis})
		// The sessions of a run expire an hour after their last save.
		return redisstore.Sessions{Client: client, Prefix: o.prefix, TTL: time.Hour}, func() { client.Close() }, nil
	}
	if o.dir == "" {
		return nil, nil, errors.New("no store: give -dir or -redis")
	}
	return sessions.Dir(o.dir), func() {}, nil
}

// request is what the lead sends a replica, and answer what it gets.
type request struct {
	Conversation string          `json:"conversation"`
	Body         json.RawMessage `json:"body"`
}

type answer struct {
	Body    json.RawMessage `json:"body,omitempty"`
	Summary string          `json:"summary"`
	Error   string          `json:"error,omitempty"`
}

// serve is a replica: it guards each request read from in, one per line,
// and writes the answer to out.
func serve(ctx context.Context, o options, in io.Reader, out io.Writer) error {
	st, closeStore, err := store(o)
	if err != nil {
		return err
	}
	defer closeStore()
	cfg := config()
	if !o.alone {
		cfg.Sessions = st
	}
	cs, err := wire.NewConversations(cfg)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 64<<20)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		var req request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return err
		}
		if err := enc.Encode(guard(ctx, cs, req)); err != nil {
			return err
		}
	}
	return sc.Err()
}

// guard guards one request with cs.
func guard(ctx context.Context, cs *wire.Conversations, req request) answer {
	body, rep, err := cs.Guard(wire.WithConversation(ctx, req.Conversation), wire.Anthropic, req.Body)
	if err != nil {
		return answer{Error: err.Error()}
	}
	return answer{Body: body, Summary: describe(rep)}
}

// describe says what a request's guard did.
func describe(rep wire.Report) string {
	s := fmt.Sprintf("%5d -> %5d tokens", rep.Before, rep.After)
	if len(rep.Evicted)+len(rep.Stubbed) > 0 {
		s += fmt.Sprintf(", evicted %d, stubbed %d", len(rep.Evicted), len(rep.Stubbed))
	}
	if n := len(rep.Summarized); n > 0 {
		s += fmt.Sprintf(", %d summary", n)
	}
	return s
}

// replica is a child process serving requests.
type replica struct {
	n   int
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func start(ctx context.Context, n int, args []string) (*replica, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), replicaEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 64<<20)
	return &replica{n: n, cmd: cmd, in: in, out: sc}, nil
}

// send writes a request; receive reads its answer.
func (r *replica) send(req request) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	_, err = r.in.Write(append(b, '\n'))
	return err
}

func (r *replica) receive() (answer, error) {
	if !r.out.Scan() {
		if err := r.out.Err(); err != nil {
			return answer{}, err
		}
		return answer{}, fmt.Errorf("replica %d stopped", r.n)
	}
	var a answer
	err := json.Unmarshal(r.out.Bytes(), &a)
	return a, err
}

func (r *replica) stop() error {
	r.in.Close()
	return r.cmd.Wait()
}

// lead starts the replicas, plays the conversations through them and
// through the reference, and compares.
func lead(ctx context.Context, o options, w io.Writer) error {
	args := []string{"-turns", strconv.Itoa(o.turns)}
	if o.alone {
		args = append(args, "-alone")
	}
	where := ""
	if o.redis != "" {
		if o.prefix == "" {
			o.prefix = fmt.Sprintf("pruneguard-fleet-%d:", time.Now().UnixNano())
		}
		args = append(args, "-redis", o.redis, "-prefix", o.prefix)
		where = "Redis at " + o.redis
	} else {
		dir, err := os.MkdirTemp("", "pruneguard-fleet-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		args = append(args, "-dir", filepath.Join(dir, "sessions"))
		where = "a directory (sessions.Dir)"
	}
	if o.alone {
		where += ", each keeping its own sessions instead"
	}
	fmt.Fprintf(w, "Two replicas share the sessions in %s; %d turns of two conversations.\n", where, o.turns)
	fmt.Fprintln(w, "Window 6000 tokens, trigger 5000, budget 4000; the guard compacts with pruneguard.Digest, then evicts.")
	reps := make([]*replica, 2)
	for i := range reps {
		r, err := start(ctx, i+1, args)
		if err != nil {
			return err
		}
		reps[i] = r
	}
	ref, err := wire.NewConversations(config())
	if err != nil {
		return err
	}
	diffs, err := play(ctx, o.turns, reps, ref, w)
	for _, r := range reps {
		if e := r.stop(); e != nil && err == nil {
			err = fmt.Errorf("replica %d: %w", r.n, e)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d requests; %d bodies differ from the single process's.\n", 2*o.turns, diffs)
	if diffs > 0 {
		return errors.New("the fleet sent other bodies than one process")
	}
	fmt.Fprintln(w, "OK")
	return nil
}

// play runs the turns: at turn t, replica t%2 serves the first
// conversation and the other replica the second, at the same time.
func play(ctx context.Context, turns int, reps []*replica, ref *wire.Conversations, w io.Writer) (int, error) {
	convs := []*script{newScript("alice/order-help", 1), newScript("bob/refund", 2)}
	diffs := 0
	for t := range turns {
		var sent [2]request
		for i, c := range convs {
			sent[i] = request{Conversation: c.name, Body: c.body()}
			if err := reps[(t+i)%2].send(sent[i]); err != nil {
				return diffs, err
			}
		}
		for i, c := range convs {
			r := reps[(t+i)%2]
			got, err := r.receive()
			if err != nil {
				return diffs, err
			}
			want := guard(ctx, ref, sent[i])
			same := got.Error == want.Error && string(got.Body) == string(want.Body) && got.Summary == want.Summary
			mark := "same as one process"
			if !same {
				diffs++
				mark = "DIFFERS from one process: " + firstDiff(got, want)
			}
			if got.Error != "" {
				fmt.Fprintf(w, "turn %2d %-17s replica %d: refused: %s; %s\n", t+1, c.name, r.n, got.Error, mark)
				continue
			}
			fmt.Fprintf(w, "turn %2d %-17s replica %d: %s; %s\n", t+1, c.name, r.n, got.Summary, mark)
			c.reply(t)
		}
	}
	return diffs, nil
}

// firstDiff says where two answers part.
func firstDiff(a, b answer) string {
	if a.Error != b.Error {
		return fmt.Sprintf("error %q against %q", a.Error, b.Error)
	}
	x, y := string(a.Body), string(b.Body)
	i := 0
	for i < len(x) && i < len(y) && x[i] == y[i] {
		i++
	}
	return fmt.Sprintf("bodies part at byte %d of %d and %d (%s against %s)", i, len(x), len(y), a.Summary, b.Summary)
}

// script is a scripted conversation: the runtime's whole history, as it
// sends it at each turn.
type script struct {
	name string
	seed int
	msgs []json.RawMessage
}

func newScript(name string, seed int) *script {
	s := &script{name: name, seed: seed}
	s.add("user", fmt.Sprintf("%q", "My order is A-"+strconv.Itoa(1000*seed+17)+". Track it and the orders placed with it, one lookup at a time."))
	s.toolUse(0)
	return s
}

func (s *script) add(role, content string) {
	s.msgs = append(s.msgs, json.RawMessage(`{"role":"`+role+`","content":`+content+`}`))
}

// toolUse adds the model's lookup of turn t and its result.
func (s *script) toolUse(t int) {
	id := fmt.Sprintf("toolu_%d_%03d", s.seed, t)
	order := fmt.Sprintf("A-%d", 1000*s.seed+17+t)
	s.add("assistant", `[{"type":"text","text":"Looking up `+order+`."},{"type":"tool_use","id":"`+id+`","name":"lookup_order","input":{"order":"`+order+`"}}]`)
	var rows []string
	for i := range 12 {
		rows = append(rows, fmt.Sprintf("%s line %d: item SKU-%05d, qty %d, shipped from depot %d", order, i, (s.seed*7919+t*31+i*17)%100000, 1+i%4, (t+i)%9))
	}
	result, _ := json.Marshal(strings.Join(rows, "; "))
	s.add("user", `[{"type":"tool_result","tool_use_id":"`+id+`","content":`+string(result)+`}]`)
}

// reply adds what the model answered at turn t: the next lookup.
func (s *script) reply(t int) { s.toolUse(t + 1) }

// body is the request the runtime sends: the whole history.
func (s *script) body() json.RawMessage {
	tools := `[{"name":"lookup_order","description":"Look an order up.","input_schema":{"type":"object","properties":{"order":{"type":"string"}},"required":["order"]}}]`
	b := `{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"You are a support agent.","tools":` + tools +
		`,"messages":[` + string(joinRaw(s.msgs)) + `]}`
	return json.RawMessage(b)
}

func joinRaw(ms []json.RawMessage) []byte {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = string(m)
	}
	return []byte(strings.Join(parts, ","))
}

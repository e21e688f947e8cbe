package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pruneguard/pruneguard/internal/storecheck"
	"github.com/pruneguard/pruneguard/sessions"
)

// StressConfig sizes a [Stress] run. Zero fields take their defaults.
type StressConfig struct {
	Sessions int // sessions raced on; default 64
	Turns    int // turns each replica takes on each session; default 200
	Padding  int // bytes each state carries besides its turns; default 8 KiB
	// Turner, when set, is the work of a turn and the state it saves (for
	// example a [ContextTurner], a runtime's Context); nil means a log of
	// turns after Padding bytes.
	Turner Turner
}

// Turner is the work of one turn of a [Stress] run on a session's state,
// and the record that proves which turns the state holds. Stress calls
// it from many goroutines at once.
type Turner interface {
	// Turn returns the state after turn t of replica on state, the
	// state loaded (nil for a new session) of session number i.
	Turn(state []byte, i, replica, t int) ([]byte, error)
	// Check returns an error unless state, the final state of session
	// number i, holds every one of the turns of each of replicas
	// replicas exactly once, each replica's in order.
	Check(state []byte, i, replicas, turns int) error
}

// StressResult is what a [Stress] run measured.
type StressResult struct {
	Replicas, Sessions, Turns int
	Attempts                  int // load-and-save pairs: every turn, and every retry after a conflict
	Conflicts                 int // Saves refused with a conflict, each retried
	Elapsed                   time.Duration
	Attempt                   Latency // of one Load, the turn's work and one Save
	Turn                      Latency // of one turn, its retries included
}

// Latency summarizes durations.
type Latency struct{ P50, P99, Max time.Duration }

// TurnsPerSecond is how many turns were saved per second, over all
// replicas and sessions.
func (r StressResult) TurnsPerSecond() float64 {
	return float64(r.Replicas*r.Sessions*r.Turns) / r.Elapsed.Seconds()
}

// String reports the run in one line.
func (r StressResult) String() string {
	return fmt.Sprintf("%d sessions x %d replicas x %d turns: %.0f turns/s, %d conflicts; load+turn+save p50 %v p99 %v max %v; turn p50 %v p99 %v max %v",
		r.Sessions, r.Replicas, r.Turns, r.TurnsPerSecond(), r.Conflicts,
		r.Attempt.P50, r.Attempt.P99, r.Attempt.Max, r.Turn.P50, r.Turn.P99, r.Turn.Max)
}

// Stress races replicas, as the replicas of a fleet race on the
// conversations they serve: for each session, each replica takes
// cfg.Turns turns at once with the others, each turn a load-modify-save
// (the modification cfg.Turner's, by default appending the turn's name
// to the state) that, on a conflict, loads again and redoes its work.
// Give each replica its own Store value (its own connections) on one
// shared store. Sessions are created by their first turn, under ids no
// earlier run used.
//
// When every turn is done Stress loads each session and checks, with
// cfg.Turner's Check, that it holds every turn of every replica exactly
// once, each replica's in order (and, by default, its padding intact):
// any lost update, update applied twice or damaged state is an error. A failed Load or Save stops the
// run with its error.
func Stress(ctx context.Context, replicas []sessions.Store, cfg StressConfig) (StressResult, error) {
	cfg = cfg.withDefaults()
	r := StressResult{Replicas: len(replicas), Sessions: cfg.Sessions, Turns: cfg.Turns}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	prefix := "stress-" + storecheck.RandomHex(6) + "-"
	var (
		wg              sync.WaitGroup
		mu              sync.Mutex
		attempts, turns []time.Duration
	)
	start := time.Now()
	for i := range cfg.Sessions {
		for rep, s := range replicas {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := worker{s: s, id: prefix + strconv.Itoa(i), session: i, replica: rep, turner: cfg.Turner}
				err := w.run(ctx, cfg.Turns)
				mu.Lock()
				defer mu.Unlock()
				attempts, turns = append(attempts, w.attempts...), append(turns, w.turns...)
				r.Conflicts += w.conflicts
				if err != nil {
					cancel(err)
				}
			}()
		}
	}
	wg.Wait()
	r.Elapsed = time.Since(start)
	r.Attempts = len(attempts)
	r.Attempt, r.Turn = summarize(attempts), summarize(turns)
	if err := context.Cause(ctx); err != nil {
		return r, err
	}
	var errs []error
	for i := range cfg.Sessions {
		errs = append(errs, verify(ctx, replicas[0], prefix+strconv.Itoa(i), i, cfg.Turner, len(replicas), cfg.Turns))
	}
	return r, joinSome(errs)
}

func (c StressConfig) withDefaults() StressConfig {
	if c.Sessions <= 0 {
		c.Sessions = 64
	}
	if c.Turns <= 0 {
		c.Turns = 200
	}
	if c.Padding <= 0 {
		c.Padding = 8 << 10
	}
	if c.Turner == nil {
		c.Turner = turnLog{padding: c.Padding}
	}
	return c
}

// padding is the bytes session i carries before its turns.
func padding(i, n int) []byte {
	unit := []byte("session " + strconv.Itoa(i) + " padding;")
	return bytes.Repeat(unit, n/len(unit)+1)[:n]
}

// worker is one replica serving one session.
type worker struct {
	s         sessions.Store
	id        string
	session   int
	replica   int
	turner    Turner
	attempts  []time.Duration
	turns     []time.Duration
	conflicts int
}

func (w *worker) run(ctx context.Context, turns int) error {
	for t := range turns {
		start := time.Now()
		for {
			begin := time.Now()
			err := w.turn(ctx, t)
			w.attempts = append(w.attempts, time.Since(begin))
			if err == nil {
				break
			}
			if !errors.Is(err, sessions.ErrConflict) {
				return err
			}
			w.conflicts++
		}
		w.turns = append(w.turns, time.Since(start))
	}
	return nil
}

// turn appends turn t of the worker's replica to the session's state.
func (w *worker) turn(ctx context.Context, t int) error {
	state, v, err := w.s.Load(ctx, w.id)
	if errors.Is(err, sessions.ErrNotFound) {
		state, v, err = nil, sessions.Absent, nil
	}
	if err != nil {
		return err
	}
	if state, err = w.turner.Turn(state, w.session, w.replica, t); err != nil {
		return fmt.Errorf("session %q: %w", w.id, err)
	}
	_, err = w.s.Save(ctx, w.id, state, v)
	return err
}

// turnLog is the Turner of a log of turns after padding bytes.
type turnLog struct{ padding int }

func (l turnLog) Turn(state []byte, i, replica, t int) ([]byte, error) {
	if state == nil {
		state = padding(i, l.padding)
	}
	return fmt.Appendf(state, "r%d.%d;", replica, t), nil
}

// verify checks that session i, under id, holds every turn of every
// replica exactly once, each replica's in order.
func verify(ctx context.Context, s sessions.Store, id string, i int, tr Turner, replicas, turns int) error {
	state, _, err := s.Load(ctx, id)
	if err != nil {
		return fmt.Errorf("Load(%q) after the run: %w", id, err)
	}
	if err := tr.Check(state, i, replicas, turns); err != nil {
		return fmt.Errorf("session %q: %w", id, err)
	}
	return nil
}

// Check checks that state holds its padding and then every turn of
// every replica exactly once, each replica's in order.
func (l turnLog) Check(state []byte, i, replicas, turns int) error {
	rest, ok := bytes.CutPrefix(state, padding(i, l.padding))
	if !ok {
		return errors.New("the padding is damaged")
	}
	next := make([]int, replicas) // the turn expected next of each replica
	for _, rec := range strings.Split(strings.TrimSuffix(string(rest), ";"), ";") {
		var rep, t int
		if _, err := fmt.Sscanf(rec, "r%d.%d", &rep, &t); err != nil || rep < 0 || rep >= replicas {
			return fmt.Errorf("a record %q no replica wrote", rec)
		}
		if t != next[rep] {
			return fmt.Errorf("replica %d's turn %d follows its turn %d: updates were lost or applied twice", rep, t, next[rep]-1)
		}
		next[rep]++
	}
	for rep, n := range next {
		if n != turns {
			return fmt.Errorf("%d turns of replica %d, want %d: updates were lost", n, rep, turns)
		}
	}
	return nil
}

func summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return Latency{P50: at(0.50), P99: at(0.99), Max: ds[len(ds)-1]}
}

// joinSome joins the first few of errs and counts the rest.
func joinSome(errs []error) error { return storecheck.JoinSome(errs) }

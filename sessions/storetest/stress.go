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
}

// StressResult is what a [Stress] run measured.
type StressResult struct {
	Replicas, Sessions, Turns int
	Attempts                  int // load-and-save pairs: every turn, and every retry after a conflict
	Conflicts                 int // Saves refused with a conflict, each retried
	Elapsed                   time.Duration
	Attempt                   Latency // of one Load and one Save
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
	return fmt.Sprintf("%d sessions x %d replicas x %d turns: %.0f turns/s, %d conflicts; load+save p50 %v p99 %v max %v; turn p50 %v p99 %v max %v",
		r.Sessions, r.Replicas, r.Turns, r.TurnsPerSecond(), r.Conflicts,
		r.Attempt.P50, r.Attempt.P99, r.Attempt.Max, r.Turn.P50, r.Turn.P99, r.Turn.Max)
}

// Stress races replicas, as the replicas of a fleet race on the
// conversations they serve: for each session, each replica takes
// cfg.Turns turns at once with the others, each turn a load-modify-save
// that appends the turn's name to the state and, on a conflict, loads
// again and redoes its work. Give each replica its own Store value (its
// own connections) on one shared store. Sessions are created by their
// first turn, under ids no earlier run used.
//
// When every turn is done Stress loads each session and checks that it
// holds every turn of every replica exactly once, each replica's in
// order, behind its padding intact: any lost update, update applied
// twice or damaged state is an error. A failed Load or Save stops the
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
				w := worker{s: s, id: prefix + strconv.Itoa(i), replica: rep, padding: padding(i, cfg.Padding)}
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
		errs = append(errs, verify(ctx, replicas[0], prefix+strconv.Itoa(i), padding(i, cfg.Padding), len(replicas), cfg.Turns))
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
	replica   int
	padding   []byte
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
		state, v, err = bytes.Clone(w.padding), sessions.Absent, nil
	}
	if err != nil {
		return err
	}
	state = fmt.Appendf(state, "r%d.%d;", w.replica, t)
	_, err = w.s.Save(ctx, w.id, state, v)
	return err
}

// verify checks that id holds its padding and then every turn of every
// replica exactly once, each replica's in order.
func verify(ctx context.Context, s sessions.Store, id string, pad []byte, replicas, turns int) error {
	state, _, err := s.Load(ctx, id)
	if err != nil {
		return fmt.Errorf("Load(%q) after the run: %w", id, err)
	}
	rest, ok := bytes.CutPrefix(state, pad)
	if !ok {
		return fmt.Errorf("Load(%q) after the run: the padding is damaged", id)
	}
	next := make([]int, replicas) // the turn expected next of each replica
	for _, rec := range strings.Split(strings.TrimSuffix(string(rest), ";"), ";") {
		var rep, t int
		if _, err := fmt.Sscanf(rec, "r%d.%d", &rep, &t); err != nil || rep < 0 || rep >= replicas {
			return fmt.Errorf("session %q holds a record %q no replica wrote", id, rec)
		}
		if t != next[rep] {
			return fmt.Errorf("session %q: replica %d's turn %d follows its turn %d: updates were lost or applied twice", id, rep, t, next[rep]-1)
		}
		next[rep]++
	}
	for rep, n := range next {
		if n != turns {
			return fmt.Errorf("session %q holds %d turns of replica %d, want %d: updates were lost", id, n, rep, turns)
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

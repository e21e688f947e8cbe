package storetest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"

	"github.com/pruneguard/pruneguard/sessions"
)

// racers is how many goroutines race on one id.
const racers = 8

// race runs racers Saves of id expecting expect at once, and checks that
// exactly one succeeded, that the others conflict, and that the
// winner's state is stored.
func race(ctx context.Context, s sessions.Store, id string, expect sessions.Version) error {
	states := make([][]byte, racers)
	versions := make([]sessions.Version, racers)
	results := make([]error, racers)
	var wg sync.WaitGroup
	for g := range racers {
		states[g] = []byte(fmt.Sprintf("saved by racer %d", g))
		wg.Add(1)
		go func() {
			defer wg.Done()
			versions[g], results[g] = s.Save(ctx, id, states[g], expect)
		}()
	}
	wg.Wait()
	winner := -1
	for g, err := range results {
		if err != nil {
			continue
		}
		if winner >= 0 {
			return fmt.Errorf("Save(%q, expecting %d): two concurrent Saves succeeded", id, expect)
		}
		winner = g
	}
	if winner < 0 {
		return fmt.Errorf("Save(%q, expecting %d): no concurrent Save succeeded: %w", id, expect, results[0])
	}
	var errs []error
	for g, err := range results {
		if g != winner {
			errs = append(errs, conflict("concurrent Save", id, err, expect, anyVersion))
		}
	}
	if err := want(ctx, s, id, states[winner], versions[winner]); err != nil {
		errs = append(errs, fmt.Errorf("state of the Save that succeeded: %w", err))
	}
	return errors.Join(errs...)
}

func racingCreates(ctx context.Context, s sessions.Store, k *ids) error {
	var errs []error
	for round := range 4 {
		errs = append(errs, race(ctx, s, k.id("create"+strconv.Itoa(round)), sessions.Absent))
	}
	return errors.Join(errs...)
}

func racingSaves(ctx context.Context, s sessions.Store, k *ids) error {
	id := k.id("update")
	v, err := save(ctx, s, id, []byte("before the race"), sessions.Absent)
	if err != nil {
		return err
	}
	for range 4 {
		if err := race(ctx, s, id, v); err != nil {
			return err
		}
		if _, v, err = s.Load(ctx, id); err != nil {
			return fmt.Errorf("Load(%q) after a race: %w", id, err)
		}
	}
	return nil
}

// counter has 32 goroutines increment a counter by load-modify-save,
// each retrying on conflicts until its increment is saved: the counter
// must end at exactly 32, and no version may be returned twice.
func counter(ctx context.Context, s sessions.Store, k *ids) error {
	const goroutines = 32
	id := k.id("counter")
	if _, err := save(ctx, s, id, []byte("0"), sessions.Absent); err != nil {
		return err
	}
	var (
		mu       sync.Mutex
		errs     []error
		versions = map[sessions.Version]bool{}
		wg       sync.WaitGroup
	)
	start := make(chan struct{})
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			v, err := increment(ctx, s, id)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, err)
			case versions[v]:
				errs = append(errs, fmt.Errorf("Save(%q) returned version %d twice", id, v))
			}
			versions[v] = true
		}()
	}
	close(start)
	wg.Wait()
	got, _, err := s.Load(ctx, id)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("Load(%q): %w", id, err))...)
	}
	if string(got) != strconv.Itoa(goroutines) {
		errs = append(errs, fmt.Errorf("counter = %s after %d increments, want %d: updates were lost or applied twice", describe(got), goroutines, goroutines))
	}
	return errors.Join(errs...)
}

// increment adds one to the decimal counter under id, retrying on
// conflicts, and returns the version it saved.
func increment(ctx context.Context, s sessions.Store, id string) (sessions.Version, error) {
	for {
		b, v, err := s.Load(ctx, id)
		if err != nil {
			return 0, fmt.Errorf("Load(%q): %w", id, err)
		}
		n, err := strconv.Atoi(string(b))
		if err != nil {
			return 0, fmt.Errorf("Load(%q) = %s, not a counter", id, describe(b))
		}
		runtime.Gosched() // let others load the same version
		nv, err := s.Save(ctx, id, []byte(strconv.Itoa(n+1)), v)
		if errors.Is(err, sessions.ErrConflict) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("Save(%q): %w", id, err)
		}
		return nv, nil
	}
}

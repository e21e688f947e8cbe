package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// A mode brings a past down to a budget, as a runtime would before a
// model call. Adding a mode to the benchmark is adding one to modes.
type mode struct {
	name string
	note string // what it does, for the legend
	run  func(past []byte, d wire.Dialect, budget int, tmp string) (output, error)
}

// output is what a mode sends: the body, and what the model can recall
// through pointers (each spilled segment's recall answer, by key).
type output struct {
	body   []byte
	recall map[string]string
}

// modes are the modes measured, in the table's order.
var modes = []mode{
	{"naive", "drop the oldest messages, keeping system messages", naive},
	{"guard-regen", "prune --unannotated regenerable --text reconstructible", guarded(wire.UnannotatedRegenerable, pruneguard.Reconstructible, false, false)},
	{"guard", "prune (tools and text irreducible)", guarded(wire.UnannotatedIrreducible, pruneguard.Irreducible, false, false)},
	{"guard-spill", "prune --spill DIR (tools and text irreducible)", guarded(wire.UnannotatedIrreducible, pruneguard.Irreducible, true, false)},
	{"guard-summary", "prune --summarize builtin (tools and text irreducible)", guarded(wire.UnannotatedIrreducible, pruneguard.Irreducible, false, true)},
	{"guard-summary-spill", "prune --summarize builtin --spill DIR (tools and text irreducible)", guarded(wire.UnannotatedIrreducible, pruneguard.Irreducible, true, true)},
}

// naive drops the oldest messages other than system messages until the
// body is within the budget (or nothing is left to drop). It knows no
// pairing: a result may lose its call.
func naive(past []byte, d wire.Dialect, budget int, _ string) (output, error) {
	b, err := wire.Read(past, d)
	if err != nil {
		return output{}, err
	}
	var order []int // what may go, oldest first
	for i, m := range b.Messages {
		if !isSystem(m) {
			order = append(order, i)
		}
	}
	drop := func(k int) ([]byte, int, error) {
		b, err := wire.Read(past, d)
		if err != nil {
			return nil, 0, err
		}
		if err := b.Remove(order[:k]); err != nil {
			return nil, 0, err
		}
		out, err := b.Marshal()
		if err != nil {
			return nil, 0, err
		}
		return out, wire.Tokens(b, nil), nil
	}
	// The fewest oldest messages to drop: tokens fall as k grows.
	var ferr error
	k := sort.Search(len(order)+1, func(k int) bool {
		_, n, err := drop(k)
		if err != nil {
			ferr = err
			return true
		}
		return n <= budget
	})
	if ferr != nil {
		return output{}, ferr
	}
	body, _, err := drop(min(k, len(order)))
	return output{body: body}, err
}

// guarded returns the mode of the prune command with the given classes,
// spilling to a directory store under tmp when spill is set, compacting
// with the built-in summarizer when summarize is: the oldest policy, the
// relaxed boundary, 32 rounds.
func guarded(un wire.Unannotated, text pruneguard.Class, spillTo, summarize bool) func([]byte, wire.Dialect, int, string) (output, error) {
	return func(past []byte, d wire.Dialect, budget int, tmp string) (output, error) {
		opts := wire.Options{
			Config:      pruneguard.Config{Boundary: pruneguard.BoundaryRelaxed, Regen: pruneguard.RegenDropUnsafe, TextClass: text},
			Unannotated: un,
		}
		var sp *spill.Spiller
		if spillTo {
			dir, err := os.MkdirTemp(tmp, "spill-")
			if err != nil {
				return output{}, err
			}
			defer os.RemoveAll(dir)
			sp = &spill.Spiller{Store: spill.Dir(dir)}
			opts.Spiller = sp
		}
		g, err := wire.Bind(past, d, opts)
		if err != nil {
			return output{}, err
		}
		guard := pruneguard.Guard{Budget: budget, Policy: pruneguard.OldestFirst{}, Rounds: 32}
		if summarize {
			guard.Summarizer = pruneguard.Digest{}
		}
		res, _, err := g.Check(guard)
		if err != nil {
			return output{}, err
		}
		var buf bytes.Buffer
		if _, err := g.WriteTo(&buf); err != nil {
			return output{}, err
		}
		out := output{body: buf.Bytes()}
		for _, s := range res.Spills {
			text, err := recallPages(sp, s.Pointer.Key)
			if err != nil {
				return output{}, fmt.Errorf("recall %s: %w", s.Pointer.Key, err)
			}
			if out.recall == nil {
				out.recall = map[string]string{}
			}
			out.recall[s.Pointer.Key] = text
		}
		return out, nil
	}
}

// recallPages reads every page of the recall of key, as a model would
// by following each answer's "next", and returns the answers as one JSON
// array.
func recallPages(sp *spill.Spiller, key string) (string, error) {
	args, _ := json.Marshal(map[string]string{"key": key})
	var pages []string
	for args != nil {
		text, err := sp.HandleRecall(context.Background(), args)
		if err != nil {
			return "", err
		}
		pages = append(pages, text)
		var a struct {
			Next json.RawMessage `json:"next"`
		}
		if err := json.Unmarshal([]byte(text), &a); err != nil {
			return "", err
		}
		args = a.Next
	}
	return "[" + strings.Join(pages, ",") + "]", nil
}

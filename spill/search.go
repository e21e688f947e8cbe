package spill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/internal/facts"
)

// The bounds of a query.
const (
	// MaxQueryLen is the longest query, in bytes.
	MaxQueryLen = 256
	// MaxQueryTerms is the most terms of a query that count; later ones
	// are ignored.
	MaxQueryTerms = 16
	// MaxHits is the most messages a query answers.
	MaxHits = 50
)

// Hit is one message a query found in a segment.
//
// The zero Hit is no hit.
type Hit struct {
	Pointer pruneguard.Pointer // the segment
	Index   int                // the message's position in it, from 0
	Score   int                // higher is better; always positive
	Message pruneguard.Message // as Recall gives it
}

// Search returns the messages of the Spiller's segments that match
// query, best first: at most [MaxHits], each with a positive score. The
// segments searched are those of its namespace (see [Spiller]): on a
// store that is a [Lister], every one the store holds, those earlier
// processes wrote included; on another store, those the Spiller wrote or
// verified. A segment found missing or damaged is skipped, and stops
// resolving; another failure to read the store fails the search.
//
// A query is words: split at white space and at quotes, brackets, ',',
// ';', '|' and '=', without the punctuation around them; at most
// [MaxQueryTerms] count. A message scores for each term it holds as a
// word, exactly (4) or in another case (3), or inside a longer word (1,
// for terms of three bytes or more), plus 2 when the term is exactly one
// of the message's facts (an id such as INC-4711, a path, a number); each
// term's score is multiplied by how rare the term is among the messages
// searched (1 plus the whole part of log2 of the messages over those that
// hold it). A message that holds the whole query, in any case, gains 2
// per term. Ties go to a message that is not a summary (a summary's
// facts are copies of those of the messages it replaced, and a later
// compaction copies them again, so an id the first turns gave can stand
// in every summary since), then to the segment with the smaller key,
// then to the earlier message. Scoring is deterministic: the same segments and query
// give the same hits. The words of a message are those of its content,
// its id, its calls' tools and arguments.
//
// A query that is empty, too long or has no word fails with
// [ErrBadRecall].
func (s *Spiller) Search(ctx context.Context, query string) ([]Hit, error) {
	if !s.ready() {
		return nil, ErrNoStore
	}
	ts, err := parseQuery(query)
	if err != nil {
		return nil, err
	}
	keys, err := s.searchKeys(ctx)
	if err != nil {
		return nil, err
	}
	var docs []doc
	for _, key := range keys {
		p := pruneguard.Pointer{Store: s.name(), Key: key}
		seg, err := s.read(ctx, "search", p)
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for i, m := range seg.ms {
			docs = append(docs, newDoc(p, i, m))
		}
	}
	return rank(docs, ts), nil
}

// searchKeys returns the keys of the segments a query searches, sorted.
func (s *Spiller) searchKeys(ctx context.Context) ([]string, error) {
	var keys []string
	if l, ok := s.Store.(Lister); ok {
		listed, err := l.List(ctx, s.keyPrefix())
		if err != nil {
			return nil, wrapKey("search", s.keyPrefix(), err)
		}
		keys = listed
	} else {
		s.mu.RLock()
		for k, e := range s.index {
			if e.err == nil {
				keys = append(keys, k)
			}
		}
		s.mu.RUnlock()
		slices.Sort(keys)
	}
	return slices.DeleteFunc(keys, func(k string) bool { return !s.searches(k) }), nil
}

// searches reports whether a query searches the segment of key: one of
// the Spiller's namespace, or, without a namespace, one written with
// none (a key with no '_').
func (s *Spiller) searches(key string) bool {
	if s.Namespace == "" {
		return strings.HasPrefix(key, segmentPrefix) && !strings.Contains(key, "_")
	}
	return s.owns(key)
}

// term is one word of a query.
type term struct {
	exact, lower string
}

// parseQuery returns the terms of query, each once (whatever its case).
func parseQuery(query string) ([]term, error) {
	if len(query) > MaxQueryLen {
		return nil, fmt.Errorf("%w: a query of %d bytes, more than %d", ErrBadRecall, len(query), MaxQueryLen)
	}
	var ts []term
	for _, w := range words(query) {
		t := term{exact: w, lower: strings.ToLower(w)}
		if len(ts) < MaxQueryTerms && !slices.ContainsFunc(ts, func(u term) bool { return u.lower == t.lower }) {
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("%w: a query with no word", ErrBadRecall)
	}
	return ts, nil
}

// normalQuery is the query as its terms spell it, one space apart.
func normalQuery(ts []term) string {
	ws := make([]string, len(ts))
	for i, t := range ts {
		ws[i] = t.exact
	}
	return strings.Join(ws, " ")
}

// words splits text into words: at white space, control characters,
// quotes, brackets, ',', ';', '|' and '=', without the punctuation
// around them ('#', '*', '!', '?', ':' before; '.', ':', '!', '?', '*'
// after). A word holds a letter or a digit.
func words(text string) []string {
	var out []string
	split := func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError || strings.ContainsRune("\"'`()[]{}<>,;|=", r)
	}
	for _, w := range strings.FieldsFunc(text, split) {
		w = strings.TrimLeft(w, "#*!?:")
		w = strings.TrimRight(w, ".:!?*")
		if strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			out = append(out, w)
		}
	}
	return out
}

// doc is a message as a query sees it. Its words and facts are found
// only once a term is in its text, so that a query costs little more
// than a pass over the messages that do not match.
type doc struct {
	p      pruneguard.Pointer
	i      int
	m      pruneguard.Message
	text   string          // its text: id, content, tools and arguments
	lower  string          // text, lower-case
	exact  map[string]bool // its words, once parsed
	lowers map[string]bool // its words, lower-case
	facts  map[string]bool // the texts of its facts
}

func newDoc(p pruneguard.Pointer, i int, m pruneguard.Message) doc {
	parts := []string{string(m.ID), string(m.Content)}
	for _, c := range m.Calls {
		parts = append(parts, c.Tool, string(c.Args))
	}
	text := strings.Join(parts, "\n")
	return doc{p: p, i: i, m: m, text: text, lower: strings.ToLower(text)}
}

// parse finds d's words and facts, once.
func (d *doc) parse() {
	if d.exact != nil {
		return
	}
	d.exact, d.lowers, d.facts = map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, w := range words(d.text) {
		d.exact[w] = true
		d.lowers[strings.ToLower(w)] = true
	}
	for _, f := range facts.Extract(string(d.m.Content)) {
		d.facts[f.Text] = true
	}
	for _, c := range d.m.Calls {
		for _, f := range facts.Extract(string(c.Args)) {
			d.facts[f.Text] = true
		}
	}
}

// match is how well d holds t, before rarity counts: 0 when it does not.
// A message whose text does not hold the term, in any case, does not.
func (d *doc) match(t term) int {
	if !strings.Contains(d.lower, t.lower) {
		return 0
	}
	d.parse()
	n := 0
	switch {
	case d.exact[t.exact]:
		n = 4
	case d.lowers[t.lower]:
		n = 3
	case len(t.lower) >= 3:
		n = 1
	}
	if d.facts[t.exact] {
		n += 2
	}
	return n
}

// holdsPhrase reports whether d holds phrase (lower-case, words one space
// apart), with any white space between its words.
func (d *doc) holdsPhrase(phrase string) bool {
	return strings.Contains(strings.Join(strings.Fields(d.lower), " "), phrase)
}

// rank scores docs for ts and returns the best, at most MaxHits.
func rank(docs []doc, ts []term) []Hit {
	scores := make([]int, len(docs))
	for _, t := range ts {
		m := make([]int, len(docs))
		df := 0
		for i := range docs {
			if m[i] = docs[i].match(t); m[i] > 0 {
				df++
			}
		}
		if df == 0 {
			continue
		}
		rarity := bits.Len(uint(len(docs) / df)) // 1 + floor(log2(N/df))
		for i := range docs {
			scores[i] += m[i] * rarity
		}
	}
	if len(ts) > 1 {
		phrase := strings.ToLower(normalQuery(ts))
		for i := range docs {
			if scores[i] > 0 && docs[i].holdsPhrase(phrase) {
				scores[i] += 2 * len(ts)
			}
		}
	}
	var hits []Hit
	for i, d := range docs {
		if scores[i] > 0 {
			hits = append(hits, Hit{Pointer: d.p, Index: d.i, Score: scores[i], Message: d.m})
		}
	}
	slices.SortStableFunc(hits, func(a, b Hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(isSummary(a), isSummary(b)),
			cmp.Compare(a.Pointer.Key, b.Pointer.Key), cmp.Compare(a.Index, b.Index))
	})
	return hits[:min(len(hits), MaxHits)]
}

// isSummary is 1 for a hit on a summary, 0 for any other.
func isSummary(h Hit) int {
	if h.Message.Role == pruneguard.RoleSummary {
		return 1
	}
	return 0
}

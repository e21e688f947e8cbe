package spill

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// RecallToolName is the name of the tool [RecallTool] describes.
const RecallToolName = "recall"

const recallSchema = `{"type":"object",` +
	`"description":"Read back messages that were moved out of the conversation to save context. Give either the key named in the placeholder that replaced them, to read that segment, or a query (words, ids, paths or numbers you remember) to search every moved message of this conversation. Answers JSON: the messages (ids, roles, content, calls), a page at a time; when there are more pages, call again with the \"next\" arguments it gives.",` +
	`"properties":{` +
	`"key":{"type":"string","description":"The key from a placeholder, for example seg-4f0c1a2b3c4d5e6f7a8b9c0d."},` +
	`"query":{"type":"string","maxLength":256,"description":"Words to search for, for example INC-4711 or \"exit 137 settle.go\". Exact ids match best."},` +
	`"page":{"type":"integer","minimum":1,"description":"The page to read, from 1; default 1."}},` +
	`"additionalProperties":false}`

// RecallTool describes the tool a runtime exposes to the model so it can
// read spilled content back: named [RecallToolName], taking {"key": K}
// with K the key of a pointer, or {"query": Q} with words to search the
// session's spilled messages for, and "page" for the pages of a long
// answer (see [Spiller.HandleRecall]). It is read-only and closed-world,
// so what it answers is reconstructible content that may itself be
// pruned (calling it again gives the same bytes, as long as the
// session's segments are the same). Its schema carries the description
// the model reads. Answer its calls with [Spiller.HandleRecall].
func RecallTool() pruneguard.Tool {
	return pruneguard.Tool{
		Name:   RecallToolName,
		Schema: json.RawMessage(recallSchema),
		Annotations: pruneguard.Annotations{
			ReadOnlyHint:    pruneguard.Bool(true),
			DestructiveHint: pruneguard.Bool(false),
			IdempotentHint:  pruneguard.Bool(true),
			OpenWorldHint:   pruneguard.Bool(false),
		},
	}
}

// recallArgs are the arguments of a recall call.
type recallArgs struct {
	Key   *string `json:"key"`
	Query *string `json:"query"`
	Page  *int    `json:"page"`
}

// readRecallArgs reads the arguments of a recall call. Keys match exactly,
// as the tool's schema spells them ("Key" is not "key"), and a key given
// twice is refused: which of the two a model meant is not said.
func readRecallArgs(args json.RawMessage) (recallArgs, error) {
	var a recallArgs
	if err := json.Unmarshal(args, &struct{}{}); err != nil {
		return a, err // not one JSON object, or data after it
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	if t, _ := dec.Token(); t != json.Delim('{') {
		return a, errors.New("the arguments are not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return a, err
		}
		key, _ := t.(string)
		if seen[key] {
			return a, fmt.Errorf("%q is given twice", key)
		}
		seen[key] = true
		var dst any
		switch key {
		case "key":
			dst = &a.Key
		case "query":
			dst = &a.Query
		case "page":
			dst = &a.Page
		default:
			dst = new(json.RawMessage)
		}
		if err := dec.Decode(dst); err != nil {
			return a, fmt.Errorf("%q: %v", key, strings.TrimPrefix(err.Error(), "json: "))
		}
	}
	return a, nil
}

// HandleRecall answers a call of the [RecallTool]. args is the call's
// JSON arguments: {"key": K} reads the segment of key K (K may also be
// written "store:key" as [PointerText] shows it); {"query": Q} searches
// the session's segments for the messages that best match Q (see
// [Spiller.Search]); either may add "page": N, from 1 (default 1).
//
// An answer is at most the Spiller's MaxRecallBytes (see [Spiller]) of
// JSON, an object:
//
//	{"key": K, "page": 1, "pages": 3, "messages": [...], "next": {"key": K, "page": 2}}
//	{"query": Q, "page": 1, "pages": 1, "messages": [...]}
//
// "key" or "query" repeats what was asked (a query as its words, one
// space apart); "page" is the page answered and "pages" how many there
// are; "next", on every page but the last, holds the arguments of the
// call that reads the next page. "messages" lists messages in order: a
// segment's in the order they were spilled, a query's best first (no
// hits: an empty list). Each is an object with the message's fields as
// [Spiller.Recall] gives them: "id", "role", "tokens", "content" (or
// "content_base64" for content that is not UTF-8), "calls" (each with
// "id", "tool", "args" or "args_base64", "server"), "answers", "class",
// "facts", "pinned", "needed_by", "requires", "is_error", each left out
// when empty; and "index", its position in its segment from 0. A query's
// messages add "key", their segment's, and "score" (see [Spiller.Search]).
// A message too large for one answer is split into parts, each with
// "part" (from 1) and "parts": every part holds the message's other
// fields, and the next stretch of its content and then of its calls'
// arguments, so that joining the parts' "content" (and each call's
// "args") in order gives them whole. A query's answer shows only the
// parts of such a message that hold a term; read it whole by key.
//
// Errors: a key of another namespace, unknown or forgotten fails with an
// error matching [ErrNotFound], a damaged segment with [ErrCorrupt],
// arguments with neither or both of "key" and "query", a bad "page" or a
// query without a word with [ErrBadRecall], and a message whose fields
// other than content and arguments do not fit in an answer with
// [ErrRecallBound]; the runtime should hand the error's text to the model
// as the tool's error result. The store is read with ctx.
func (s *Spiller) HandleRecall(ctx context.Context, args json.RawMessage) (string, error) {
	if !s.ready() {
		return "", ErrNoStore
	}
	a, err := readRecallArgs(args)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadRecall, strings.TrimPrefix(err.Error(), "json: "))
	}
	pg := 1
	if a.Page != nil {
		pg = *a.Page
	}
	switch {
	case (a.Key == nil) == (a.Query == nil):
		return "", fmt.Errorf("%w: give a \"key\" or a \"query\"", ErrBadRecall)
	case pg < 1:
		return "", fmt.Errorf("%w: page %d; pages count from 1", ErrBadRecall, pg)
	case a.Key != nil:
		return s.answerKey(ctx, *a.Key, pg)
	}
	return s.answerQuery(ctx, *a.Query, pg)
}

// answerKey answers page pg of the segment of key.
func (s *Spiller) answerKey(ctx context.Context, key string, pg int) (string, error) {
	key = strings.TrimPrefix(strings.TrimSpace(key), s.name()+":")
	p := pruneguard.Pointer{Store: s.name(), Key: key}
	b, known, err := s.fetch(ctx, "recall", p)
	if err != nil {
		return "", err
	}
	room := s.bound() - envelope(key, "")
	sum := sha256.Sum256(b)
	items, ok := s.cached(key, room, sum)
	if !ok {
		seg, err := s.check(ctx, "recall", p, b, known)
		if err != nil {
			return "", err
		}
		for i, m := range seg.ms {
			ps, err := pieces(item{Index: i, record: toRecord(m)}, room, nil)
			if err != nil {
				return "", keyErr("recall", key, err)
			}
			items = append(items, ps...)
		}
		s.cache(answered{key: key, room: room, sum: sum, items: items})
	}
	return page(answer{Key: key}, items, room, pg)
}

// answered is the items of the answers of one segment, as answerKey
// made them for one bound: a model that reads a segment's pages one after
// the other gets them without the segment being decoded and cut again
// each time; the store is read each time all the same, and its bytes
// must be those the items were made from.
type answered struct {
	key   string
	room  int
	sum   [sha256.Size]byte // of the stored bytes
	items []rawItem
}

// cachedSegments is how many segments' items a Spiller keeps.
const cachedSegments = 2

// cached returns the items of key's answers for room, if they were made
// from stored bytes with SHA-256 sum.
func (s *Spiller) cached(key string, room int, sum [sha256.Size]byte) ([]rawItem, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, a := range s.answers {
		if a.key == key && a.room == room && a.sum == sum {
			return a.items, true
		}
	}
	return nil, false
}

// cache keeps a, in place of the oldest kept.
func (s *Spiller) cache(a answered) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.answers) == cachedSegments {
		s.answers = s.answers[1:]
	}
	s.answers = append(s.answers, a)
}

// answerQuery answers page pg of the hits of query.
func (s *Spiller) answerQuery(ctx context.Context, query string, pg int) (string, error) {
	hits, err := s.Search(ctx, query)
	if err != nil {
		return "", err
	}
	ts, _ := parseQuery(query) // Search checked it
	q := normalQuery(ts)
	room := s.bound() - envelope("", q)
	var items []rawItem
	for _, h := range hits {
		keep := func(r record) bool { return holdsTerm(r, ts) }
		ps, err := pieces(item{Key: h.Pointer.Key, Index: h.Index, Score: h.Score, record: toRecord(h.Message)}, room, keep)
		if err != nil {
			return "", keyErr("recall", h.Pointer.Key, err)
		}
		if len(ps) == 0 { // the terms straddle parts: show the first
			ps, err = pieces(item{Key: h.Pointer.Key, Index: h.Index, Score: h.Score, record: toRecord(h.Message)}, room, firstPart())
			if err != nil {
				return "", keyErr("recall", h.Pointer.Key, err)
			}
		}
		items = append(items, ps...)
	}
	return page(answer{Query: q}, items, room, pg)
}

// holdsTerm reports whether a part of a message holds one of ts, in any
// case, in its content, id, tools or arguments.
func holdsTerm(r record, ts []term) bool {
	parts := []string{r.ID, r.Content, string(r.ContentBase64)}
	for _, c := range r.Calls {
		parts = append(parts, c.Tool, c.Args, string(c.ArgsBase64))
	}
	text := strings.ToLower(strings.Join(parts, "\n"))
	for _, t := range ts {
		if strings.Contains(text, t.lower) {
			return true
		}
	}
	return false
}

// firstPart keeps the first part only.
func firstPart() func(record) bool {
	n := 0
	return func(record) bool { n++; return n == 1 }
}

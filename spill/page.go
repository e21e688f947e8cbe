package spill

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// The bounds of a recall answer.
const (
	// DefaultMaxRecallBytes is the bound of a recall answer of a Spiller
	// whose MaxRecallBytes is zero.
	DefaultMaxRecallBytes = 8 << 10
	// MinRecallBytes is the smallest bound a Spiller keeps: a smaller
	// MaxRecallBytes counts as MinRecallBytes.
	MinRecallBytes = 2 << 10
)

// ErrRecallBound: a message's fields other than its content and call
// arguments (its ids, answers, steps) do not fit in one recall answer
// under the Spiller's MaxRecallBytes; raise it to read the message.
var ErrRecallBound = errors.New("spill: a message's fields do not fit in a recall answer")

// item is one message, or one part of a message, as a recall answer
// shows it: the message's record with where it is, and for a query its
// score.
type item struct {
	Key   string `json:"key,omitempty"`
	Index int    `json:"index"`
	Score int    `json:"score,omitempty"`
	Part  int    `json:"part,omitempty"`
	Parts int    `json:"parts,omitempty"`
	record
}

// answer is a recall answer; see [Spiller.HandleRecall].
type answer struct {
	Key      string      `json:"key,omitempty"`
	Query    string      `json:"query,omitempty"`
	Page     int         `json:"page"`
	Pages    int         `json:"pages"`
	Messages []rawItem   `json:"messages"`
	Next     *nextRecall `json:"next,omitempty"`
}

// nextRecall is the arguments of the recall that reads the next page.
type nextRecall struct {
	Key   string `json:"key,omitempty"`
	Query string `json:"query,omitempty"`
	Page  int    `json:"page"`
}

// rawItem is an item already encoded.
type rawItem = json.RawMessage

// bound returns the Spiller's bound of a recall answer.
func (s *Spiller) bound() int {
	switch {
	case s.MaxRecallBytes == 0:
		return DefaultMaxRecallBytes
	case s.MaxRecallBytes < MinRecallBytes:
		return MinRecallBytes
	}
	return s.MaxRecallBytes
}

// envelope returns how many bytes an answer for key or query takes
// besides its items and the commas between them, with page numbers of
// the most digits an answer gives.
func envelope(key, query string) int {
	const most = 1<<31 - 1
	a := answer{Key: key, Query: query, Page: most, Pages: most, Messages: []rawItem{},
		Next: &nextRecall{Key: key, Query: query, Page: most}}
	b, _ := marshal(a)
	return len(b)
}

// paginate packs items, in order, into pages of at most room bytes (the
// items and the commas between them) and returns the index of the first
// item of each page. No items make one empty page.
func paginate(items []rawItem, room int) []int {
	starts := []int{0}
	used := 0
	for i, it := range items {
		n := len(it)
		if used > 0 {
			n++ // the comma
		}
		if used > 0 && used+n > room {
			starts = append(starts, i)
			used, n = 0, len(it)
		}
		used += n
	}
	return starts
}

// page returns the answer that shows page p (from 1) of items.
func page(a answer, items []rawItem, room, p int) (string, error) {
	starts := paginate(items, room)
	if p < 1 || p > len(starts) {
		return "", fmt.Errorf("%w: page %d of %d", ErrBadRecall, p, len(starts))
	}
	end := len(items)
	if p < len(starts) {
		end = starts[p]
	}
	a.Page, a.Pages = p, len(starts)
	a.Messages = items[starts[p-1]:end]
	if a.Messages == nil {
		a.Messages = []rawItem{}
	}
	if p < len(starts) {
		a.Next = &nextRecall{Key: a.Key, Query: a.Query, Page: p + 1}
	}
	b, err := marshal(a)
	return string(b), err
}

// field is one of the fields of a record that a message may be split
// along: its content, or a call's arguments, as text or as bytes.
type field struct {
	text *string
	bin  *[]byte
}

func (f field) len() int {
	if f.bin != nil && *f.bin != nil {
		return len(*f.bin)
	}
	return len(*f.text)
}

// pieces encodes it, whose record is whole, as one item of at most room
// bytes, or as parts of at most room bytes each, split along its content
// and call arguments. keep, when set, says which parts to keep (the
// others are dropped, and parts keep their numbers); it sees each part's
// record.
func pieces(it item, room int, keep func(record) bool) ([]rawItem, error) {
	whole, err := marshal(it)
	if err != nil {
		return nil, err
	}
	if len(whole) <= room {
		return []rawItem{whole}, nil
	}
	parts, err := split(it, room)
	if err != nil {
		return nil, err
	}
	var out []rawItem
	for k, p := range parts {
		p.Part, p.Parts = k+1, len(parts)
		if keep != nil && !keep(p.record) {
			continue
		}
		b, err := marshal(p)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// split cuts it into parts of at most room bytes once encoded: each part
// holds every field of the record but the content and call arguments,
// and the next stretch of those, in order.
func split(it item, room int) ([]item, error) {
	whole := it.record
	var parts []item
	fi, off := 0, 0
	for {
		p := it
		p.record = bare(whole)
		p.Part, p.Parts = 1<<31-1, 1<<31-1 // as many digits as they may take
		srcs, dsts := fields(&whole), fields(&p.record)
		payload := false
		for fi < len(srcs) {
			n, err := fit(&p, dsts[fi], srcs[fi], off, room)
			if err != nil {
				return nil, err
			}
			payload = payload || n > 0
			if off+n < srcs[fi].len() {
				off += n
				break
			}
			fi, off = fi+1, 0
		}
		if !payload && fi < len(srcs) {
			return nil, fmt.Errorf("%w: message %q", ErrRecallBound, whole.ID)
		}
		parts = append(parts, p)
		if fi == len(srcs) {
			return parts, nil
		}
	}
}

// bare returns r without its content and call arguments.
func bare(r record) record {
	r.Content, r.ContentBase64 = "", nil
	r.Calls = append([]callRecord(nil), r.Calls...)
	for i := range r.Calls {
		r.Calls[i].Args, r.Calls[i].ArgsBase64 = "", nil
	}
	return r
}

// fields returns the fields of r a message is split along, in order.
func fields(r *record) []field {
	fs := []field{{text: &r.Content, bin: &r.ContentBase64}}
	for i := range r.Calls {
		fs = append(fs, field{text: &r.Calls[i].Args, bin: &r.Calls[i].ArgsBase64})
	}
	return fs
}

// fit sets dst to the longest stretch of src from off that keeps p
// within room bytes once encoded, and returns its length.
func fit(p *item, dst, src field, off, room int) (int, error) {
	isBin := src.bin != nil && *src.bin != nil
	// The encoded size with a one-byte stretch, less that byte's cost.
	if isBin {
		*dst.bin = []byte{0}
	} else {
		*dst.text = "x"
	}
	b, err := marshal(p)
	if err != nil {
		return 0, err
	}
	base, left := len(b)-1, room
	if isBin {
		base = len(b) - 4
	}
	left -= base
	n := 0
	if isBin {
		rest := (*src.bin)[off:]
		n = max(0, min(len(rest), left/4*3))
		*dst.bin = rest[:n]
	} else {
		rest := (*src.text)[off:]
		for used := 0; n < len(rest); {
			r, w := utf8.DecodeRuneInString(rest[n:])
			if used+escLen(r, w) > left {
				break
			}
			used += escLen(r, w)
			n += w
		}
		*dst.text = rest[:n]
	}
	if n == 0 {
		*dst.bin, *dst.text = nil, ""
	}
	return n, nil
}

// escLen is what rune r, of w bytes of UTF-8, takes in a JSON string as
// marshal writes it, or more.
func escLen(r rune, w int) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '\u2028' || r == '\u2029':
		return 6
	}
	return w
}

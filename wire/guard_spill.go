package wire

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// CodePointerNotSmaller is the code of a "wire" refusal of the eviction
// of spilled units whose pointer line, written into the system prompt,
// would cost as much as the messages it stands for.
const CodePointerNotSmaller = "pointer-not-smaller"

// CodeNoPointerPlace is the code of a "wire" refusal of the eviction of
// spilled messages from a body that has no system prompt to carry their
// pointer line (a Chat, Gemini or Bedrock body without one; see the
// package documentation on tombstone lines).
const CodeNoPointerPlace = "no-pointer-place"

// ErrNoPointerPlace is matched (with errors.Is) by the error a spill
// from a body with no system prompt to carry the pointer of spilled
// messages that would be evicted fails with: only tool results, whose
// stubs show their pointer, are spilled from such a body. A [Guarded] and
// a [Session] report such a spill as a refusal with code
// CodeNoPointerPlace, never among the Result's SpillErrors, which hold
// the spills a store failed.
var ErrNoPointerPlace = errors.New("wire: the body has no system prompt to carry a pointer line")

// spilling is what a Guarded with a Spiller keeps: the store, whether
// the body has a system prompt for pointer lines, the pointer of each
// message whose stub must show it, and the lines written shorter (see
// lines_fit.go).
type spilling struct {
	s     pruneguard.Spiller
	place bool
	ptr   map[int]pruneguard.Pointer
	short shortLines
}

// bodySpiller is the pruneguard.Spiller a Guarded gives its guard: it
// stores each message as the body held it (its provider JSON, byte for
// byte, as its Content), so that what is read back is what was sent.
type bodySpiller struct {
	g *Guarded
	// compacts is set when the guard has a Summarizer: what it spills may
	// be replaced by a summary carrying the pointer, which needs no
	// place in the system prompt (an eviction that would is refused by
	// the screen, CodeNoPointerPlace).
	compacts bool
}

// Resolvable reports whether the Guarded's Spiller resolves p.
func (b bodySpiller) Resolvable(p pruneguard.Pointer) bool { return b.g.sp.s.Resolvable(p) }

// SpillMessages stores ms, each with the provider JSON of the body
// message it stands for as its Content, as one segment.
func (b bodySpiller) SpillMessages(ctx context.Context, ms []pruneguard.Message) (pruneguard.Pointer, error) {
	g := b.g
	out := make([]pruneguard.Message, len(ms))
	for k, m := range ms {
		if m.Role == pruneguard.RoleSummary {
			// A summary, which the edit state may not have carried out
			// yet: stored as the dialect writes it.
			m.Content = g.src.provider().summary(string(m.Content))
			out[k] = m
			continue
		}
		i, ok := g.Index(m.ID)
		if !ok {
			return pruneguard.Pointer{}, fmt.Errorf("wire: spill of message %q, which the body does not hold", m.ID)
		}
		if !g.sp.place && len(m.Answers) == 0 && !b.compacts {
			return pruneguard.Pointer{}, fmt.Errorf("%w: message %q", ErrNoPointerPlace, m.ID)
		}
		m.Content = g.base(int32(i)).raw
		out[k] = m
	}
	return g.sp.s.SpillMessages(ctx, out)
}

// Discard implements pruneguard.Discarder: the Guarded's Spiller takes
// back the segment, when it can.
func (b bodySpiller) Discard(ctx context.Context, p pruneguard.Pointer) error {
	return discard(ctx, b.g.sp.s, p)
}

// placeRefused takes the spills of res that failed for want of a system
// prompt to carry their pointer line (ErrNoPointerPlace) out of
// res.SpillErrors, which a store that cannot be written alone fills, and
// returns them as refusals with code CodeNoPointerPlace; index gives a
// message's position in the history.
func placeRefused(res *pruneguard.Result, index func(pruneguard.MessageID) (int, bool)) []Refusal {
	var refs []Refusal
	res.SpillErrors = slices.DeleteFunc(res.SpillErrors, func(se *pruneguard.SpillError) bool {
		if !errors.Is(se, ErrNoPointerPlace) {
			return false
		}
		r := Refusal{Gate: "wire", Code: CodeNoPointerPlace, Units: slices.Clone(se.Units), Messages: slices.Clone(se.Messages)}
		for _, id := range r.Messages {
			if i, ok := index(id); ok {
				r.Indexes = append(r.Indexes, i)
			}
		}
		refs = append(refs, r)
		return true
	})
	return refs
}

// discard has sp take back the segment p points to, if sp is a
// pruneguard.Discarder.
func discard(ctx context.Context, sp pruneguard.Spiller, p pruneguard.Pointer) error {
	if d, ok := sp.(pruneguard.Discarder); ok {
		return d.Discard(ctx, p)
	}
	return nil
}

// newSpilling sets up spilling for opts on cfg: the Spiller resolves the
// pointers, so cfg.Resolver must be unset.
func newSpilling(opts Options, cfg *pruneguard.Config, place bool) (*spilling, error) {
	if opts.Spiller == nil {
		return nil, nil
	}
	if cfg.Resolver != nil {
		return nil, errors.New("wire: Spiller and Config.Resolver are both set; the Spiller resolves its own pointers")
	}
	cfg.Resolver = opts.Spiller
	if cfg.PointerTokens == 0 {
		cfg.PointerTokens = pointerTokens(cfg.Counter, opts.Spiller)
	}
	return &spilling{s: opts.Spiller, place: place, ptr: map[int]pruneguard.Pointer{}, short: shortLines{}}, nil
}

// samplePointer stands for the pointers a Spiller hands out when none is
// known yet: a *spill.Spiller's, its default name and a segment key.
var samplePointer = pruneguard.Pointer{Store: spill.DefaultName, Key: "seg-7c9e6679-7425-40de-944b-e07fc1f90ae7"}

// pointerWords is a Spiller that words the text of its own pointers, and
// says how long that text may be: *spill.Spiller is one.
type pointerWords interface {
	PointerText(pruneguard.Pointer) string
	LongestPointerText() string
}

// pointerTextOf returns how the pointers of sp are worded: by sp, or by
// [spill.PointerText].
func pointerTextOf(sp pruneguard.Spiller) func(pruneguard.Pointer) string {
	if w, ok := sp.(pointerWords); ok {
		return w.PointerText
	}
	return spill.PointerText
}

// withPointerText returns s, or, when s is a pruneguard.Digest without
// a PointerText, a copy that words its pointer lines as sp words its
// pointers, so that a summary shows the same pointer text a stub or a
// pointer line of the same store shows.
func withPointerText(s pruneguard.Summarizer, sp pruneguard.Spiller) pruneguard.Summarizer {
	switch d := s.(type) {
	case pruneguard.Digest:
		if d.PointerText == nil && sp != nil {
			d.PointerText = pointerTextOf(sp)
			return d
		}
	case *pruneguard.Digest:
		if d != nil && d.PointerText == nil && sp != nil {
			c := *d
			c.PointerText = pointerTextOf(sp)
			return c
		}
	}
	return s
}

// pointerTokens is the default Config.PointerTokens with a Spiller: what
// c counts for a pointer line of sp's as the system prompt carries it,
// at its longest.
func pointerTokens(c pruneguard.Counter, sp pruneguard.Spiller) int {
	if w, ok := sp.(pointerWords); ok {
		return countJSON(c, mustString("\n"+w.LongestPointerText()))
	}
	return countJSON(c, mustString("\n"+spill.PointerText(samplePointer)))
}

// notePointers records the pointers of the messages d stubs, so that
// their stubs show them; a message stubbed already keeps its stub.
func (g *Guarded) notePointers(d *pruneguard.Decision) {
	if g.sp == nil || len(d.Pointers) == 0 || len(d.Stub) == 0 {
		return
	}
	for _, n := range d.Pointers {
		if !slices.Contains(d.Stub, n.Message) {
			continue
		}
		i, ok := g.Index(n.Message)
		if !ok || g.seq.stubbed[i] || g.sp.ptr[i] == n.Pointer {
			continue
		}
		g.sp.ptr[i] = n.Pointer
		delete(g.stubs, i)
	}
}

// stubTextOf is the text stubbed message i carries: its pointer's text
// when its content was spilled, the stub text otherwise.
func (g *Guarded) stubTextOf(i int) string {
	if g.sp != nil {
		if p, ok := g.sp.ptr[i]; ok {
			return pointerTextOf(g.sp.s)(p)
		}
	}
	return g.stubText
}

// spilledWith returns the evicted spilled messages once d is applied
// too: those of the applied decisions, then those d evicts.
func (g *Guarded) spilledWith(d *pruneguard.Decision) []pruneguard.SpillNote {
	out := g.schema.spilled
	if d == nil || len(d.Pointers) == 0 || d.Summary != nil {
		return out // a summary carries its pointers (see guard_summary.go)
	}
	out = slices.Clip(out)
	for _, n := range d.Pointers {
		if slices.Contains(d.Evict, n.Message) {
			out = append(out, n)
		}
	}
	return out
}

// pointerLines are the lines standing for the evicted spilled messages
// in notes: one per pointer.
func (g *Guarded) pointerLines(notes []pruneguard.SpillNote) []string {
	if g.sp == nil {
		return spillLines(notes, spill.PointerText)
	}
	return spillLines(notes, lineText(g.sp.s, g.sp.short))
}

// fitLines writes the pointer lines the check added, those of no note
// in before (the notes of the lines before it), shorter when that alone
// brings the body within budget (see lines_fit.go).
func (g *Guarded) fitLines(notes []pruneguard.SpillNote, budget int) {
	if g.sp == nil || budget <= 0 || len(g.schema.spilled) == len(notes) {
		return
	}
	before := linePointers(notes)
	var added []pruneguard.Pointer
	for _, p := range linePointers(g.schema.spilled) {
		if !slices.Contains(before, p) {
			added = append(added, p)
		}
	}
	fitLines(g.sp.s, added, g.sp.short, func() int {
		se := g.schemaNow()
		was := g.sysTokens()
		g.setSys(se.tombs)
		g.msgTokens += g.sysTokens() - was
		g.overhead = -1
		return g.Tokens() - budget
	})
}

// pointerRefusals returns the evictions of d whose pointer line cannot
// be written, or would cost as much as what leaves with it: the
// messages of the units refused are set in bad, and the refusals
// returned. recs are d's records, made when nil.
func (g *Guarded) pointerRefusals(d *pruneguard.Decision, recs *[]pruneguard.Record, bad *map[int]bool) []Refusal {
	if g.sp == nil || len(d.Pointers) == 0 || len(d.Evict) == 0 || d.Summary != nil {
		return nil
	}
	lined := g.schema.spilled
	type group struct {
		freed int
		units []pruneguard.UnitID
	}
	var order []pruneguard.Pointer
	groups := map[pruneguard.Pointer]*group{}
	evicted := map[pruneguard.MessageID]int{}
	for k, id := range d.Evict {
		evicted[id] = k
	}
	for _, n := range d.Pointers {
		k, ok := evicted[n.Message]
		if !ok || slices.ContainsFunc(lined, func(m pruneguard.SpillNote) bool { return m.Pointer == n.Pointer }) {
			continue
		}
		i, ok := g.Index(n.Message)
		if !ok || g.seq.removed[i] {
			continue
		}
		gr := groups[n.Pointer]
		if gr == nil {
			gr = &group{}
			groups[n.Pointer] = gr
			order = append(order, n.Pointer)
		}
		if *recs == nil {
			*recs = d.Records()
		}
		gr.freed += g.written(i)
		if u := (*recs)[k].Unit; !slices.Contains(gr.units, u) {
			gr.units = append(gr.units, u)
		}
	}
	var refused []Refusal
	refusedUnits := map[pruneguard.UnitID]bool{}
	for _, p := range order {
		gr := groups[p]
		r := Refusal{Gate: "wire", Units: gr.units}
		switch {
		case !g.sp.place:
			r.Code = CodeNoPointerPlace
		case gr.freed <= countJSON(g.count, mustString("\n"+pointerTextOf(g.sp.s)(p))):
			r.Code = CodePointerNotSmaller
		default:
			continue
		}
		for _, u := range gr.units {
			refusedUnits[u] = true
		}
		refused = append(refused, r)
	}
	if len(refused) == 0 {
		return nil
	}
	if *bad == nil {
		*bad = map[int]bool{}
	}
	for k, rc := range *recs {
		if k >= len(d.Evict) || !refusedUnits[rc.Unit] {
			continue
		}
		if i, ok := g.Index(rc.Message); ok {
			(*bad)[i] = true
		}
	}
	for k := range refused {
		for _, rc := range (*recs)[:len(d.Evict)] {
			if slices.Contains(refused[k].Units, rc.Unit) {
				i, _ := g.Index(rc.Message)
				refused[k].Messages = append(refused[k].Messages, rc.Message)
				refused[k].Indexes = append(refused[k].Indexes, i)
			}
		}
	}
	return refused
}

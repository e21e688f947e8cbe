package wire

import (
	"bufio"
	"encoding/json"
	"io"
	"maps"
	"slices"

	"github.com/pruneguard/pruneguard"
)

// schemaEdits is a state of the tools arrays and the tombstone lines.
type schemaEdits struct {
	dropped    map[string]bool
	compressed map[string]json.RawMessage
	tombMap    map[string]string
	order      []string
	spilled    []pruneguard.SpillNote // evicted spilled messages
	tombs      []string               // tombstone lines, in order, then pointer lines
}

// schemaNow is the schema state of the applied decisions.
func (g *Guarded) schemaNow() *schemaEdits {
	se := &schemaEdits{dropped: g.schema.dropped, compressed: g.schema.compressed, tombMap: g.schema.tombstones, order: g.schema.tombOrder}
	for _, t := range g.schema.tombOrder {
		if s, ok := g.schema.tombstones[t]; ok {
			se.tombs = append(se.tombs, s)
		}
	}
	se.spilled = g.schema.spilled
	se.tombs = append(se.tombs, g.pointerLines(se.spilled)...)
	return se
}

// schemaWith is the schema state once decision d is applied too, leaving
// out d's edits of the tools in skip (their schemas stay as they are).
func (g *Guarded) schemaWith(d *pruneguard.Decision, skip map[string]bool) *schemaEdits {
	se := &schemaEdits{dropped: maps.Clone(g.schema.dropped), compressed: maps.Clone(g.schema.compressed)}
	for _, t := range d.DropSchemas {
		if !skip[t] {
			se.dropped[t] = true
		}
	}
	for _, cs := range d.Compress {
		if !skip[cs.Tool] {
			se.compressed[cs.Tool] = cs.Schema
		}
	}
	tombs := maps.Clone(g.schema.tombstones)
	order := slices.Clone(g.schema.tombOrder)
	for _, t := range d.Tombstones {
		if skip[t.Tool] {
			continue
		}
		if _, ok := tombs[t.Tool]; !ok {
			order = append(order, t.Tool)
		}
		tombs[t.Tool] = t.Text
	}
	for _, t := range d.Retire {
		delete(tombs, t)
	}
	se.tombMap, se.order = tombs, order
	for _, t := range order {
		if s, ok := tombs[t]; ok {
			se.tombs = append(se.tombs, s)
		}
	}
	se.spilled = g.spilledWith(d)
	se.tombs = append(se.tombs, g.pointerLines(se.spilled)...)
	return se
}

// topWith returns the body's top level with the schema edits and (when
// the provider keeps its prompt in a top-level field) the tombstone and
// pointer lines of se, as a body without messages.
func (g *Guarded) topWith(se *schemaEdits) *Body {
	nb := *g.src
	nb.Messages, nb.facts, nb.fields, nb.dirty = nil, nil, nil, false
	nb.editTools(se.dropped, se.compressed)
	nb.setTombstones(se.tombs)
	return &nb
}

// setSys writes the tombstone and pointer lines into the system message,
// for a provider that keeps its prompt in the history (g.sys is -1
// otherwise).
func (g *Guarded) setSys(lines []string) {
	if g.sys < 0 {
		return
	}
	g.sysFacts = nil
	if len(lines) == 0 {
		return
	}
	if raw, ok := g.src.provider().addLines(g.src.facts[g.sys].raw, lines); ok {
		if f, err := parseMessage(g.src.Dialect, raw); err == nil {
			g.sysFacts = &f
		}
	}
}

// sysTokens counts the tokens of the system message that carries the
// lines as written, or 0 when there is none.
func (g *Guarded) sysTokens() int {
	if g.sys < 0 || g.seq.removed[g.sys] {
		return 0
	}
	return g.written(g.sys)
}

// schemaSize is what a schema state costs: the body outside its messages
// and, when the lines go into the system message (g.sys), that message.
// The other messages do not change with it.
func (g *Guarded) schemaSize(se *schemaEdits) int {
	n := Overhead(g.topWith(se), g.count)
	if g.sys >= 0 && !g.seq.removed[g.sys] {
		if len(se.tombs) == 0 {
			n += int(g.tokens[g.sys])
		} else if raw, ok := g.src.provider().addLines(g.src.facts[g.sys].raw, se.tombs); ok {
			n += countJSON(g.count, raw)
		}
	}
	return n
}

// current returns message i as the applied edits write it.
func (g *Guarded) current(i int) *facts {
	switch {
	case i == g.sys && g.sysFacts != nil:
		return g.sysFacts
	case g.seq.stubbed[i]:
		f, _ := g.stubFacts(i)
		return f
	}
	return g.base(int32(i))
}

// edited reports whether the applied edits changed the messages.
func (g *Guarded) edited() bool {
	if g.seq.kept != g.seq.n || g.sysFacts != nil || g.sum != nil && len(g.sum.at) > 0 {
		return true
	}
	for i := g.seq.head; i >= 0; i = g.seq.next[i] {
		if g.seq.stubbed[i] {
			return true
		}
	}
	return false
}

// Body returns the body with every applied decision carried out: evicted
// messages removed, stubbed results replaced by the stub text, withdrawn
// schemas removed from the tools array (compressed ones replaced) and
// tombstone lines added to the system prompt. The body read is not
// changed. The messages are made anew on every call; [Guarded.WriteTo]
// writes the same bytes without making them.
func (g *Guarded) Body() *Body {
	nb := g.topWith(g.schemaNow())
	nb.facts = make([]facts, 0, g.seq.kept)
	for i := g.seq.head; i >= 0; {
		f, next := g.writtenFrom(i)
		nb.facts = append(nb.facts, *f)
		i = next
	}
	nb.dirty = g.edited()
	nb.Messages = make([]Message, len(nb.facts))
	for i := range nb.facts {
		nb.Messages[i] = nb.facts[i].message()
	}
	return nb
}

// WriteTo writes the body with every applied decision carried out, the
// bytes Body().Marshal() returns: the kept messages are written as they
// were read (stubbed ones as stubbed), between the body's own bytes
// before and after them. It implements io.WriterTo.
func (g *Guarded) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	top := g.topWith(g.schemaNow())
	edits := top.topEdits(nil)
	var err error
	if !g.edited() {
		err = g.src.top.write(bw, edits, "", nil)
	} else {
		err = g.src.top.write(bw, edits, g.src.key, g.writeHistory)
	}
	if err == nil {
		err = bw.Flush()
	}
	return cw.n, err
}

// writeHistory writes the message array as the applied edits leave it.
func (g *Guarded) writeHistory(w io.Writer) error {
	if g.src.inputString && g.seq.kept == 1 {
		_, err := w.Write(g.current(int(g.seq.head)).raw)
		return err
	}
	put := func(b []byte) error { _, err := w.Write(b); return err }
	if err := put([]byte{'['}); err != nil {
		return err
	}
	for i := g.seq.head; i >= 0; {
		if i != g.seq.head {
			if err := put([]byte{','}); err != nil {
				return err
			}
		}
		f, next := g.writtenFrom(i)
		if err := put(f.raw); err != nil {
			return err
		}
		i = next
	}
	return put([]byte{']'})
}

// countWriter counts what it writes.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// rest counts the tokens of the current body outside its messages.
func (g *Guarded) rest() int {
	if g.overhead < 0 {
		g.overhead = Overhead(g.topWith(g.schemaNow()), g.count)
	}
	return g.overhead
}

// Tokens counts the tokens of the current body, as the Counter counts
// them: the messages as written (each counted once, a stub when it is
// made) and the rest of the body (system prompt with its tombstone
// lines, tools and settings), what [Tokens] gives for [Guarded.Body]. It
// is kept up to date as decisions are applied.
func (g *Guarded) Tokens() int { return g.msgTokens + g.joinTokens() + g.rest() }

// Overhead returns the tokens of the current body that the Context does
// not count: [Guarded.Tokens] less the Context's Tokens. The Context
// counts each message (a stubbed one as Config.StubTokens, or, showing a
// pointer, Config.PointerTokens), the schemas of the tools it holds, the
// tombstones that stand and, with Config.PointerTokens, one pointer line
// per pointer evicted; the rest is the body's settings and system
// prompt, the tools arrays around the schemas, and what a stub or a line
// as written differs from the Context's estimate of it (which may make
// the overhead negative). [Guarded.Check] takes it off the budget it hands the
// Context's guard.
func (g *Guarded) Overhead() int { return g.Tokens() - g.ctx.Tokens() }

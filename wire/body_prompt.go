package wire

import (
	"encoding/json"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// The system prompt: where each provider keeps it (its table's prompt
// fields), and the one routine that writes tombstone and pointer lines
// into it, for a guarded body, a rendered one and a session's.

// addLines writes lines into a system prompt as the provider keeps it:
// cur is the value of its prompt field or, for a provider that keeps its
// prompt in the history (Chat), its system message; nil when there is
// none, in which case one is made. The lines go one per line, after the
// prompt's own text. ok is false when cur cannot take them.
func (p *provider) addLines(cur json.RawMessage, lines []string) (json.RawMessage, bool) {
	return p.addPromptText(cur, joinLines(lines))
}

// placeLines writes lines into the system prompt of a request being
// written: into the top-level field top holds it in, made when absent,
// or, for a provider that keeps its prompt in the history, into the
// first system or developer message of ps, or a system message put
// first when there is none.
func placeLines(p *provider, top *topFields, ps []rpiece, lines []string) []rpiece {
	if len(lines) == 0 {
		return ps
	}
	if !p.promptInHistory {
		key := p.promptKey(top.vals)
		cur, _ := top.get(key)
		if v, ok := p.addLines(cur, lines); ok {
			top.set(key, v)
		}
		return ps
	}
	for i := range ps {
		if ps[i].isSystemMessage() {
			if raw, ok := p.addLines(ps[i].raw, lines); ok {
				ps[i].raw = raw
				return ps
			}
		}
	}
	raw, _ := p.addLines(nil, lines)
	return append([]rpiece{{role: "system", synth: true, raw: raw}}, ps...)
}

// setTombstones writes lines into the body's system prompt when the
// provider keeps it in a top-level field (a guarded body's Chat system
// message takes them as a message; see Guarded.setSys). They go into the
// prompt as read, so a second call replaces the lines of the first. A
// body the lines cannot go into gets none (see hasSystemPrompt;
// Body.Context then lets the core make no tombstone).
func (b *Body) setTombstones(lines []string) {
	p := b.provider()
	if len(lines) == 0 || p.promptInHistory {
		return
	}
	orig := b.top.fields
	key := p.promptKey(orig)
	if v, ok := p.addLines(orig[key], lines); ok {
		b.setField(key, v)
	}
}

// hasSystemPrompt reports whether the body has a system prompt that
// tombstone and pointer lines can go into (see promptPlace).
func (b *Body) hasSystemPrompt() bool {
	p := b.provider()
	return p.promptPlace(b.field, p.promptInHistory && b.systemMessage() >= 0)
}

// promptPlace is the one rule for where tombstone and pointer lines may
// go, for a guarded body and a session alike: into a system prompt the
// request has, never into one added for them. Some models and servers
// reject a system prompt (OpenAI o1-mini, chat templates without a
// system role such as Gemma's, Gemma on the Gemini API, Bedrock models
// without system support), so a request without one gets no lines: a
// prune that would need one is refused (CodeNoPointerPlace) or makes no
// tombstone. The request has a place when its top-level fields (read
// with field) hold a prompt the provider keeps there (Anthropic and
// Responses always have one: their servers accept an instructions or
// system field for every model), or when it has a system message of its
// own (sys: a Chat system or developer message, or a system message
// given as an event, which the request writes into its prompt).
func (p *provider) promptPlace(field func(key string) json.RawMessage, sys bool) bool {
	return sys || p.hasPrompt(field)
}

// noTopPrompt is the hasPrompt of a provider that keeps its system
// prompt in the history (Chat): no top-level field holds one.
func noTopPrompt(func(string) json.RawMessage) bool { return false }

// systemMessage returns the index of the first system or developer
// message, or -1.
func (b *Body) systemMessage() int {
	for i := range b.facts {
		if isSystem(&b.facts[i]) {
			return i
		}
	}
	return -1
}

// joinLines joins tombstone and pointer lines, one per line.
func joinLines(lines []string) string {
	n := 0
	for _, l := range lines {
		n += len(l) + 1
	}
	b := make([]byte, 0, n)
	for i, l := range lines {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, l...)
	}
	return string(b)
}

// afterText is text appended to s, a blank line apart when s has text.
func afterText(s, text string) string {
	if s == "" {
		return text
	}
	return s + "\n\n" + text
}

// spillLines returns one line per distinct pointer, in order.
func spillLines(notes []pruneguard.SpillNote, text func(pruneguard.Pointer) string) []string {
	return pointerTexts(linePointers(notes), text)
}

// pointerTexts returns the text of each pointer of ps, in order, or nil
// for none.
func pointerTexts(ps []pruneguard.Pointer, text func(pruneguard.Pointer) string) []string {
	if len(ps) == 0 {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = text(p)
	}
	return out
}

// tombstoneLines returns the line of each tombstoned tool among tools,
// in order: the text given for it in given, or the text of the core's
// tombstones.
func tombstoneLines(tools []pruneguard.ToolState, given []pruneguard.Tombstone) []string {
	text := map[string]string{}
	for _, t := range given {
		text[t.Tool] = t.Text
	}
	var lines []string
	for _, ts := range tools {
		if !ts.Tombstoned {
			continue
		}
		line := text[ts.Tool.Name]
		if strings.TrimSpace(line) == "" {
			line = pruneguard.TombstoneText(ts.Tool.Name, ts.Tool.Mutating())
		}
		lines = append(lines, line)
	}
	return lines
}

// plainText is a text block without a type: a Gemini part, a Bedrock
// content block.
func plainText(text string) json.RawMessage {
	return jk.marshal(map[string]any{"text": text})
}

// textBlocks writes texts as an array of text blocks.
func textBlocks(texts []string, block func(string) json.RawMessage) json.RawMessage {
	blocks := make([]json.RawMessage, len(texts))
	for i, t := range texts {
		blocks[i] = block(t)
	}
	return joinArray(blocks)
}

// promptAt returns a prompt key that does not depend on the request.
func promptAt(key string) func(map[string]json.RawMessage) string {
	return func(map[string]json.RawMessage) string { return key }
}

// alwaysPrompt is the hasPrompt of a provider whose system prompt every
// model accepts: lines may go into it even when the body has none.
func alwaysPrompt(func(string) json.RawMessage) bool { return true }

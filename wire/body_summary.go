package wire

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// A summary message is what a compaction puts in the place of the run of
// messages it replaces ([pruneguard.Summary]): the text the Summarizer
// wrote, as a message of the user's side, so that every provider takes
// it and the model does not read it as its own words (the text says what
// it is: [pruneguard.Digest] starts with a bracketed header). Each
// provider's table says how it is written (provider.summary); in Bedrock,
// which merges nothing and wants roles to alternate, the text joins the
// user message right before it (provider.summaryJoins).

// summaryFacts returns the summary message of text as provider p writes
// it, read, marked as a summary; false when it cannot be read (it always
// can: the providers' readers take what their writers write).
func summaryFacts(p *provider, text string) (facts, bool) {
	f, err := parseMessage(p.dialect, p.summary(text))
	if err != nil {
		return facts{}, false
	}
	f.joins = p.summaryJoins
	return f, true
}

// summaryText returns the text of a summary message: its text parts, one
// line apart.
func summaryText(f *facts) string { return string(f.text()) }

// joinSummary returns user message raw with the text of summary s added
// as a text block after its own blocks, every byte of raw before the end
// of its blocks kept as it was; false when raw has no blocks to add to.
// It is how a summary is written in a provider whose table sets
// summaryJoins, when the message before it is a user message.
func joinSummary(p *provider, raw json.RawMessage, s *facts) (json.RawMessage, bool) {
	top, err := readTop(raw)
	if err != nil {
		return nil, false
	}
	sp, ok := top.spans[p.turnKey]
	if !ok || sp[1] <= sp[0] || raw[sp[1]-1] != ']' {
		return nil, false
	}
	block := p.textBlock(summaryText(s))
	end := sp[1] - 1
	out := make([]byte, 0, len(raw)+len(block)+1)
	out = append(out, raw[:end]...)
	if len(bytes.TrimSpace(raw[sp[0]+1:end])) > 0 {
		out = append(out, ',')
	}
	out = append(out, block...)
	return append(out, raw[end:]...), true
}

// joined reports whether summary message s is written inside the message
// before it, prev (nil for none): s joins, and prev is a user message.
func joined(s, prev *facts) bool {
	return s != nil && s.joins && prev != nil && prev.role == "user"
}

// joinedFacts returns prev with summary s joined to it, read; false when
// they cannot be joined.
func joinedFacts(p *provider, prev, s *facts) (facts, bool) {
	raw, ok := joinSummary(p, prev.raw, s)
	if !ok {
		return facts{}, false
	}
	f, err := parseMessage(p.dialect, raw)
	if err != nil {
		return facts{}, false
	}
	return f, true
}

// ---- the text the model reads --------------------------------------------------

// modelText returns what message f says as the model reads it, for the
// facts a summary of it must carry: the text of its text parts and the
// content of its tool results (a string as its text, text blocks as
// their text, JSON as it is), one line apart; never the envelope's
// structural keys and ids (tool_use_id, call_id, type). The arguments of
// its calls are not included: the Context holds them.
func modelText(p *provider, f *facts) []byte {
	out := f.text()
	if f.nresults == 0 && !f.server || p.results == nil {
		return out
	}
	obj, ok := asObject(f.raw)
	if !ok {
		return out
	}
	p.results(obj, func(content json.RawMessage) {
		t := contentText(content)
		if len(bytes.TrimSpace(t)) == 0 {
			return
		}
		if len(out) > 0 {
			out = append(out, '\n')
		}
		out = append(out, t...)
	})
	return out
}

// contentText returns the text of a result's content: a string decoded;
// of an array, its strings and the text of its blocks (a "text" string,
// Bedrock's "json" value, a shell output's stdout and stderr), one line
// apart, media blocks left out; any other JSON as it is.
func contentText(content json.RawMessage) []byte {
	content = bytes.TrimSpace(content)
	switch kindOf(content) {
	case '"':
		return []byte(unquote(content))
	case '[':
	default:
		return content
	}
	items, _ := asArray(content)
	var parts []string
	for _, it := range items {
		if kindOf(it) == '"' {
			parts = append(parts, unquote(it))
			continue
		}
		blk, ok := asObject(it)
		if !ok {
			continue
		}
		if t, ok := blk["text"]; ok && kindOf(t) == '"' {
			parts = append(parts, unquote(t))
		}
		if j, ok := blk["json"]; ok {
			parts = append(parts, string(bytes.TrimSpace(j)))
		}
		for _, k := range []string{"stdout", "stderr"} {
			if t, ok := blk[k]; ok && kindOf(t) == '"' {
				parts = append(parts, unquote(t))
			}
		}
	}
	return []byte(strings.Join(parts, "\n"))
}

// resultBlocks calls add with the content of each block of obj[key] that
// isResult reports a result, under contentKey.
func resultBlocks(obj map[string]json.RawMessage, key, contentKey string, isResult func(blk map[string]json.RawMessage) (map[string]json.RawMessage, bool), add func(json.RawMessage)) {
	items, _ := asArray(obj[key])
	for _, it := range items {
		blk, ok := asObject(it)
		if !ok {
			continue
		}
		if r, ok := isResult(blk); ok {
			if c, ok := r[contentKey]; ok {
				add(c)
			}
		}
	}
}

// textSource returns the pruneguard.TextSource of a body's messages, for
// Config.Text: the text of the message with id, as the model reads it
// (see modelText), from at, which finds the message's facts (nil for
// none).
func textSource(p *provider, at func(id pruneguard.MessageID) *facts) pruneguard.TextSource {
	return pruneguard.TextFunc(func(id pruneguard.MessageID) []byte {
		f := at(id)
		if f == nil {
			return nil
		}
		return modelText(p, f)
	})
}

// summaryCounter counts a summary's text as provider p writes the summary
// message, with count: what the message costs in the body (one written
// inside the user message before it costs a little less).
type summaryCounter struct {
	p     *provider
	count pruneguard.Counter
}

// Count implements pruneguard.Counter.
func (s summaryCounter) Count(text []byte) int { return countJSON(s.count, s.p.summary(string(text))) }

package main

import (
	"strings"

	"github.com/dlclark/regexp2"
	"github.com/pkoukk/tiktoken-go"
)

// patterns are the pre-tokenizer expressions of tiktoken (current
// tiktoken_ext/openai_public.py), spelled for regexp2:
//   - regexp2 has no possessive quantifiers, so cl100k_base's are written
//     as the atomic groups they abbreviate, and its $ (end of text) as \z;
//   - regexp2 ignores case by lowering both sides, where tiktoken's Rust
//     engine uses Unicode simple case folding, under which U+017F (long s)
//     matches s; so the case-insensitive contractions are spelled out with
//     every rune that folds to each letter (only s has one outside ASCII).
var patterns = map[string]string{
	"o200k_base": strings.Join([]string{
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS\x{17F}]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?`,
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS\x{17F}]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?`,
		`\p{N}{1,3}`,
		` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
		`\s*[\r\n]+`,
		`\s+(?!\S)`,
		`\s+`,
	}, "|"),
	"cl100k_base": `'(?:[sS\x{17F}dDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|(?>[^\r\n\p{L}\p{N}]?)(?>\p{L}+)|(?>\p{N}{1,3})| ?(?>[^\s\p{L}\p{N}]+)(?>[\r\n]*)|(?>\s+)\z|\s*[\r\n]|\s+(?!\S)|\s`,
}

var special = map[string]map[string]int{
	"o200k_base":  {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
	"cl100k_base": {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
}

// A reference is the independent implementation of one encoding.
type reference struct {
	enc *tiktoken.Tiktoken
	re  *regexp2.Regexp
}

func newReference(name string) (*reference, error) {
	toks, err := readTiktoken(name)
	if err != nil {
		return nil, err
	}
	ranks := make(map[string]int, len(toks))
	for r, t := range toks {
		ranks[string(t)] = r
	}
	bpe, err := tiktoken.NewCoreBPE(ranks, special[name], patterns[name])
	if err != nil {
		return nil, err
	}
	set := map[string]any{}
	for k := range special[name] {
		set[k] = true
	}
	enc := tiktoken.NewTiktoken(bpe, &tiktoken.Encoding{Name: name, PatStr: patterns[name], MergeableRanks: ranks, SpecialTokens: special[name]}, set)
	return &reference{enc: enc, re: regexp2.MustCompile(patterns[name], regexp2.None)}, nil
}

// encode returns the ids of text, special tokens read as ordinary text.
func (r *reference) encode(text string) []int { return r.enc.EncodeOrdinary(text) }

// pieces returns the pre-tokenizer's pieces of text.
func (r *reference) pieces(text string) []string {
	var out []string
	m, err := r.re.FindStringMatch(text)
	for ; m != nil && err == nil; m, err = r.re.FindNextMatch(m) {
		out = append(out, m.String())
	}
	if err != nil {
		panic(err)
	}
	return out
}

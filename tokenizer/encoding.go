package tokenizer

import (
	_ "embed"
	"sync"
)

//go:embed data/o200k_base.bin.gz
var o200kRanks string

//go:embed data/cl100k_base.bin.gz
var cl100kRanks string

// An Encoding is one of OpenAI's byte pair encodings: its pre-tokenizer,
// its ranked tokens and its special tokens. Obtain one from [O200k] or
// [Cl100k]; the tables load on first use, once, from data embedded in the
// package.
//
// An Encoding is safe for concurrent use by multiple goroutines.
//
// The zero value is not an encoding: its methods panic.
type Encoding struct {
	name    string
	ranks   string // gzip'd rank data
	size    int    // number of ranked tokens; their ids are 0 to size-1
	special map[int]string
	split   func(b []byte, i int) int

	once   sync.Once
	vocab  *vocab
	caches cachePool
}

var o200k = &Encoding{
	name:  "o200k_base",
	ranks: o200kRanks,
	size:  199998,
	special: map[int]string{
		199999: "<|endoftext|>",
		200018: "<|endofprompt|>",
	},
	split: splitO200k,
}

var cl100k = &Encoding{
	name:  "cl100k_base",
	ranks: cl100kRanks,
	size:  100256,
	special: map[int]string{
		100257: "<|endoftext|>",
		100258: "<|fim_prefix|>",
		100259: "<|fim_middle|>",
		100260: "<|fim_suffix|>",
		100276: "<|endofprompt|>",
	},
	split: splitCl100k,
}

// O200k returns o200k_base, the encoding of gpt-4o, gpt-4.1, gpt-5 and
// the o-series models. Every call returns the same Encoding.
func O200k() *Encoding { return o200k }

// Cl100k returns cl100k_base, the encoding of gpt-4, gpt-3.5-turbo and
// the text-embedding-3 models. Every call returns the same Encoding.
func Cl100k() *Encoding { return cl100k }

// Name returns the encoding's name as tiktoken spells it, such as
// "o200k_base".
func (e *Encoding) Name() string { return e.name }

func (e *Encoding) load() *vocab {
	e.once.Do(func() {
		classOnce.Do(buildClasses)
		v, err := loadVocab(e.ranks, e.size)
		if err != nil {
			panic("tokenizer: embedded ranks of " + e.name + ": " + err.Error())
		}
		e.vocab = v
	})
	return e.vocab
}

// Count returns the number of tokens in b: len(e.Encode(string(b))),
// computed without building the ids. b need not be valid UTF-8; see
// [Encoding.Encode]. Count has the method shape of a token counter, so an
// Encoding serves wherever one is asked for.
func (e *Encoding) Count(b []byte) int {
	v := e.load()
	c := e.caches.get()
	n := 0
	for i := 0; i < len(b); {
		j := e.split(b, i)
		n += v.countCached(c, b[i:j])
		i = j
	}
	e.caches.put(c)
	return n
}

// Encode returns the ids of the tokens of text, as tiktoken's
// encode_ordinary does: text that spells a special token, such as
// "<|endoftext|>", is encoded as the ordinary characters it is made of.
//
// Text that is not valid UTF-8 is encoded all the same, each byte that
// does not start a valid rune being cut like U+FFFD would be and encoded
// as itself, so that Decode(Encode(s)) == s for every string s.
func (e *Encoding) Encode(text string) []int {
	v := e.load()
	c := e.caches.get()
	b := []byte(text)
	ids := make([]int, 0, len(b)/4+1)
	for i := 0; i < len(b); {
		j := e.split(b, i)
		ids = v.appendCached(c, ids, b[i:j])
		i = j
	}
	e.caches.put(c)
	return ids
}

// Decode returns the text of the tokens with the given ids, special tokens
// included. The text need not be valid UTF-8 when ids is not the encoding
// of a whole text. An id the encoding does not know yields a
// [*TokenError] naming it, and no text.
func (e *Encoding) Decode(ids []int) (string, error) {
	v := e.load()
	out := make([]byte, 0, 4*len(ids))
	for _, id := range ids {
		switch s, ok := e.special[id]; {
		case id >= 0 && id < e.size:
			out = append(out, v.token(id)...)
		case ok:
			out = append(out, s...)
		default:
			return "", &TokenError{Encoding: e.name, ID: id}
		}
	}
	return string(out), nil
}

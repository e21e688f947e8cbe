// Package tokenizer counts and encodes text in the byte pair encodings of
// OpenAI's models: o200k_base ([O200k]: gpt-4o, gpt-4.1, gpt-5 and the
// o-series) and cl100k_base ([Cl100k]: gpt-4, gpt-3.5-turbo). It is a Go
// implementation of what tiktoken does, written for this module, and it
// gives the same token ids as tiktoken.
//
// The rank files ship inside the package (gzip'd, 1.6 MB for both), so
// nothing is fetched at run time. An encoding loads its tables on first
// use, once, and holds them for the life of the process (4.6 MB for
// o200k_base, 2.4 MB for cl100k_base).
//
// [Encoding.Count] has the shape of a token counter, Count(b []byte) int,
// so an Encoding serves wherever one is asked for. It takes message text
// or raw JSON alike and counts without building ids. It remembers the
// counts of recent pieces of text (words, keys, punctuation) in caches of
// 256 KiB that goroutines borrow from a pool, so that, once warm, it does
// not allocate.
//
// # How text becomes tokens
//
// An encoding first cuts text into pieces with a regular expression that
// keeps words, runs of digits, punctuation and white space apart, then
// encodes each piece by byte pair merges over the ranked tokens. The
// expressions need lookahead, which package regexp lacks; this package
// runs them as hand-written scanners, tested equal to a backtracking regular
// expression engine over the recorded transcripts in this repository and
// random and fuzzed text. Character classes come from package unicode, so
// a rune assigned in a Unicode version newer than Go's tables may be cut
// differently from tiktoken's.
//
// Text that spells a special token, such as "<|endoftext|>", is ordinary
// text to Encode and Count, as it is to tiktoken's encode_ordinary. Text
// need not be valid UTF-8: a stray byte is cut as U+FFFD would be and
// encoded as itself, so that decoding gives the bytes back.
package tokenizer

package wiretest

import (
	"bytes"
	"fmt"
)

// CacheBreaks counts the accepted requests whose prefix differs from the
// whole request before them: those a provider's prompt cache cannot serve
// from the previous request. A request's prefix is every field but the
// history, and the history without the messages the client added since
// the request before; grew[i] is how many messages it added before
// request i, and grew must cover every accepted request. The first
// request breaks nothing.
func (p *Provider) CacheBreaks(grew []int) int {
	breaks := 0
	var prev [][]byte
	var prevRest []byte
	for i := range p.Count() {
		msgs, rest := p.split(i)
		if prev != nil {
			prefix := msgs[:max(0, len(msgs)-grew[i])]
			same := len(prefix) == len(prev) && bytes.Equal(rest, prevRest)
			for k := 0; same && k < len(prefix); k++ {
				same = bytes.Equal(prefix[k], prev[k])
			}
			if !same {
				breaks++
			}
		}
		prev, prevRest = msgs, rest
	}
	return breaks
}

// split returns the messages of request i as they stand in its body, and
// the body without them.
func (p *Provider) split(i int) (msgs [][]byte, rest []byte) {
	b := p.Read(i)
	all := make([]int, len(b.Messages))
	for k, m := range b.Messages {
		msgs = append(msgs, m.Raw)
		all[k] = k
	}
	if err := b.Remove(all); err != nil {
		panic(fmt.Sprintf("wiretest: request %d: %v", i, err)) // every index is in range
	}
	rest, err := b.Marshal()
	if err != nil {
		panic(fmt.Sprintf("wiretest: request %d: %v", i, err))
	}
	return msgs, rest
}

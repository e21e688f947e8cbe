package tokenizer

import (
	"errors"
	"fmt"
)

// ErrUnknownToken is matched, through errors.Is, by every [*TokenError].
var ErrUnknownToken = errors.New("tokenizer: unknown token id")

// A TokenError reports an id that is neither a token nor a special token
// of the encoding asked to decode it. It is plain data, safe to share
// between goroutines; its zero value names id 0 of no encoding.
type TokenError struct {
	Encoding string // the encoding's name, such as "o200k_base"
	ID       int    // the offending id
}

// Error names the id and the encoding.
func (e *TokenError) Error() string {
	return fmt.Sprintf("tokenizer: %s has no token with id %d", e.Encoding, e.ID)
}

// Is reports whether target is [ErrUnknownToken].
func (e *TokenError) Is(target error) bool { return target == ErrUnknownToken }

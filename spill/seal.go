package spill

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// sealMagic starts every sealed record; its last byte is the format
// version.
const sealMagic = "pgspill\x01"

// Seal frames content for a store that keeps raw bytes: a header holding
// a magic number, the key, the content's length and its SHA-256, then the
// content. [Unseal] checks every part of the header, so a truncated,
// damaged or misplaced record is refused instead of being returned as
// content.
func Seal(key string, content []byte) []byte {
	h := sealHeader(key, content)
	return append(h, content...)
}

// sealHeader returns the header Seal puts before content.
func sealHeader(key string, content []byte) []byte {
	sum := sha256.Sum256(content)
	h := make([]byte, 0, len(sealMagic)+1+len(key)+8+len(sum)+len(content))
	h = append(h, sealMagic...)
	h = append(h, byte(len(key)))
	h = append(h, key...)
	h = binary.BigEndian.AppendUint64(h, uint64(len(content)))
	return append(h, sum[:]...)
}

// Unseal checks a record Seal made for key and returns its content, a
// subslice of sealed. Any mismatch (magic, key, length, checksum) is an
// error matching [ErrCorrupt].
func Unseal(key string, sealed []byte) ([]byte, error) {
	b, ok := bytes.CutPrefix(sealed, []byte(sealMagic))
	if !ok {
		return nil, fmt.Errorf("%w: no record header", ErrCorrupt)
	}
	if len(b) < 1 || len(b) < 1+int(b[0]) {
		return nil, fmt.Errorf("%w: truncated header", ErrCorrupt)
	}
	if got := string(b[1 : 1+int(b[0])]); got != key {
		return nil, fmt.Errorf("%w: record of key %q", ErrCorrupt, got)
	}
	b = b[1+int(b[0]):]
	if len(b) < 8+sha256.Size {
		return nil, fmt.Errorf("%w: truncated header", ErrCorrupt)
	}
	n := binary.BigEndian.Uint64(b)
	sum := b[8 : 8+sha256.Size]
	b = b[8+sha256.Size:]
	if uint64(len(b)) != n {
		return nil, fmt.Errorf("%w: %d content bytes, header says %d", ErrCorrupt, len(b), n)
	}
	if got := sha256.Sum256(b); !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	return b, nil
}

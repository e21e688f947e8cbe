package spill

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// The magic numbers that start a sealed record; the last byte is the
// layout's version. Version 1 gives the key's length in one byte, so it
// holds keys shorter than 256 bytes; version 2 gives it as a uvarint.
// Seal writes version 1 whenever it can, so that readers that know only
// version 1 read every record a store's keys can name.
const (
	sealMagic1 = "pgspill\x01"
	sealMagic2 = "pgspill\x02"
)

// Seal frames content for a store that keeps raw bytes: a header holding
// a magic number, the key, the content's length and its SHA-256, then the
// content. [Unseal] checks every part of the header, so a truncated,
// damaged or misplaced record is refused instead of being returned as
// content. The key may be of any length.
func Seal(key string, content []byte) []byte {
	h := sealHeader(key, content)
	return append(h, content...)
}

// sealHeader returns the header Seal puts before content.
func sealHeader(key string, content []byte) []byte {
	sum := sha256.Sum256(content)
	h := make([]byte, 0, len(sealMagic2)+binary.MaxVarintLen64+len(key)+8+len(sum)+len(content))
	if len(key) < 256 {
		h = append(h, sealMagic1...)
		h = append(h, byte(len(key)))
	} else {
		h = append(h, sealMagic2...)
		h = binary.AppendUvarint(h, uint64(len(key)))
	}
	h = append(h, key...)
	h = binary.BigEndian.AppendUint64(h, uint64(len(content)))
	return append(h, sum[:]...)
}

// Unseal checks a record Seal made for key and returns its content, a
// subslice of sealed. Any mismatch (magic, key, length, checksum) is an
// error matching [ErrCorrupt].
func Unseal(key string, sealed []byte) ([]byte, error) {
	b, n, err := sealedKey(sealed)
	if err != nil {
		return nil, err
	}
	if got := string(b[:n]); got != key {
		return nil, fmt.Errorf("%w: record of key %q", ErrCorrupt, got)
	}
	b = b[n:]
	if len(b) < 8+sha256.Size {
		return nil, fmt.Errorf("%w: truncated header", ErrCorrupt)
	}
	size := binary.BigEndian.Uint64(b)
	sum := b[8 : 8+sha256.Size]
	b = b[8+sha256.Size:]
	if uint64(len(b)) != size {
		return nil, fmt.Errorf("%w: %d content bytes, header says %d", ErrCorrupt, len(b), size)
	}
	if got := sha256.Sum256(b); !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	return b, nil
}

// sealedKey reads the magic number and the key's length: it returns the
// record from the key on, and the key's length, which b holds.
func sealedKey(sealed []byte) (b []byte, n int, err error) {
	if b, ok := bytes.CutPrefix(sealed, []byte(sealMagic1)); ok {
		if len(b) < 1 || len(b) < 1+int(b[0]) {
			return nil, 0, fmt.Errorf("%w: truncated header", ErrCorrupt)
		}
		return b[1:], int(b[0]), nil
	}
	b, ok := bytes.CutPrefix(sealed, []byte(sealMagic2))
	if !ok {
		return nil, 0, fmt.Errorf("%w: no record header", ErrCorrupt)
	}
	size, w := binary.Uvarint(b)
	// Version 2 is written only for keys of 256 bytes or more, in the
	// shortest form.
	if w <= 0 || size < 256 || w != len(binary.AppendUvarint(nil, size)) || uint64(len(b)-w) < size {
		return nil, 0, fmt.Errorf("%w: truncated or malformed header", ErrCorrupt)
	}
	return b[w:], int(size), nil
}

package sessions

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// sealMagic starts every sealed record; its last byte is the format
// version.
const sealMagic = "pgsessn\x01"

// Seal frames the state of a session for a store that keeps raw bytes: a
// header holding a magic number, the id, the version and the state's
// length, then the state, then the SHA-256 of all that. [Unseal] checks
// every part, so a truncated, damaged or misplaced record is refused
// instead of being returned as state. Stores in other packages use it
// as the stores of this package do.
func Seal(id string, v Version, state []byte) []byte {
	b := make([]byte, 0, len(sealMagic)+1+len(id)+16+len(state)+sha256.Size)
	b = append(b, sealMagic...)
	b = append(b, byte(len(id)))
	b = append(b, id...)
	b = binary.BigEndian.AppendUint64(b, uint64(v))
	b = binary.BigEndian.AppendUint64(b, uint64(len(state)))
	b = append(b, state...)
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

// Unseal checks a record Seal made for id and returns its state, a
// subslice of sealed, and its version. Any mismatch (magic, id, length,
// checksum) is an error matching [ErrCorrupt].
func Unseal(id string, sealed []byte) ([]byte, Version, error) {
	v, b, err := sealedHeader(id, sealed)
	if err != nil {
		return nil, Absent, err
	}
	if len(b) < 8 {
		return nil, Absent, fmt.Errorf("%w: truncated header", ErrCorrupt)
	}
	n := binary.BigEndian.Uint64(b)
	b = b[8:]
	if n > uint64(len(b)) || uint64(len(b))-n != sha256.Size {
		return nil, Absent, fmt.Errorf("%w: %d bytes of state and checksum, header says %d of state", ErrCorrupt, len(b), n)
	}
	body := sealed[:len(sealed)-sha256.Size]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sealed[len(body):]) {
		return nil, Absent, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	return b[:n], v, nil
}

// sealedHeader reads the magic number, id and version at the start of a
// record Seal made for id, and returns the version and the rest of the
// record. The version is not checked against the checksum; Unseal
// checks it.
func sealedHeader(id string, sealed []byte) (Version, []byte, error) {
	b, ok := bytes.CutPrefix(sealed, []byte(sealMagic))
	if !ok {
		return Absent, nil, fmt.Errorf("%w: no record header", ErrCorrupt)
	}
	if len(b) < 1 || len(b) < 1+int(b[0])+8 {
		return Absent, nil, fmt.Errorf("%w: truncated header", ErrCorrupt)
	}
	if got := string(b[1 : 1+int(b[0])]); got != id {
		return Absent, nil, fmt.Errorf("%w: record of id %q", ErrCorrupt, got)
	}
	b = b[1+int(b[0]):]
	v := Version(binary.BigEndian.Uint64(b))
	if v == Absent {
		return Absent, nil, fmt.Errorf("%w: version 0", ErrCorrupt)
	}
	return v, b[8:], nil
}

// sealedHeaderLen is the most bytes sealedHeader reads.
const sealedHeaderLen = len(sealMagic) + 1 + MaxIDLen + 8

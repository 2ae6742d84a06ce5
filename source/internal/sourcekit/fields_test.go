package sourcekit

import (
	"encoding/binary"
	"errors"
	"testing"
)

// TestFieldReader: every field of a record reads back, and every cut of
// the record fails with ErrTruncated, sticky, and returns zeros.
func TestFieldReader(t *testing.T) {
	var rec []byte
	rec = append(rec, 7)
	rec = binary.AppendUvarint(rec, 300)
	rec = binary.AppendVarint(rec, -5)
	rec = binary.AppendUvarint(rec, 3)
	rec = append(rec, "key"...)
	rec = binary.LittleEndian.AppendUint32(rec, 5)
	rec = append(rec, "value"...)
	read := func(data []byte) (*FieldReader, [5]any) {
		r := &FieldReader{Data: data}
		return r, [5]any{r.Byte(), r.Uvarint(), r.Varint(), string(r.Bytes()), string(r.Bytes32())}
	}
	r, got := read(rec)
	if r.Err != nil || len(r.Data) != 0 || got != [5]any{byte(7), uint64(300), int64(-5), "key", "value"} {
		t.Fatalf("read %v, left %d, err %v", got, len(r.Data), r.Err)
	}
	for n := range len(rec) {
		r, got := read(rec[:n])
		if !errors.Is(r.Err, ErrTruncated) {
			t.Fatalf("cut at %d: err %v", n, r.Err)
		}
		if got[4] != "" || r.Data != nil {
			t.Fatalf("cut at %d: read %v after the failure, left %d", n, got, len(r.Data))
		}
	}
}

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

// BenchmarkFieldReader reads one record of a source's snapshot codec: a
// flag byte, a revision, a time, a key and a value.
//
//	go test -run '^$' -bench FieldReader -benchmem ./source/internal/sourcekit/
func BenchmarkFieldReader(b *testing.B) {
	var rec []byte
	rec = append(rec, 1)
	rec = binary.AppendUvarint(rec, 123456789)
	rec = binary.AppendVarint(rec, 1764340000000000000)
	rec = binary.AppendUvarint(rec, 24)
	rec = append(rec, "/registry/pods/ns/name-0"...)
	rec = binary.LittleEndian.AppendUint32(rec, 64)
	rec = append(rec, make([]byte, 64)...)
	b.SetBytes(int64(len(rec)))
	var sink int
	for b.Loop() {
		r := FieldReader{Data: rec}
		sink += int(r.Byte()) + int(r.Uvarint()) + int(r.Varint()) + len(r.Bytes()) + len(r.Bytes32())
		if r.Err != nil || len(r.Data) != 0 {
			b.Fatal(r.Err)
		}
	}
	_ = sink
}

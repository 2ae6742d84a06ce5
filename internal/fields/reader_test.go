package fields

import (
	"encoding/binary"
	"errors"
	"testing"
)

// TestReader: every field of a record reads back, and every cut of
// the record fails with errTruncated, sticky, and returns zeros.
func TestReader(t *testing.T) {
	var rec []byte
	rec = append(rec, 7)
	rec = binary.AppendUvarint(rec, 300)
	rec = binary.AppendVarint(rec, -5)
	rec = binary.AppendUvarint(rec, 3)
	rec = append(rec, "key"...)
	rec = binary.LittleEndian.AppendUint32(rec, 5)
	rec = append(rec, "value"...)
	read := func(data []byte) (*Reader, [5]any) {
		r := &Reader{Data: data}
		return r, [5]any{r.Byte(), r.Uvarint(), r.Varint(), string(r.Bytes()), string(r.Bytes32())}
	}
	r, got := read(rec)
	if r.Err != nil || len(r.Data) != 0 || got != [5]any{byte(7), uint64(300), int64(-5), "key", "value"} {
		t.Fatalf("read %v, left %d, err %v", got, len(r.Data), r.Err)
	}
	for n := range len(rec) {
		r, got := read(rec[:n])
		if !errors.Is(r.Err, errTruncated) {
			t.Fatalf("cut at %d: err %v", n, r.Err)
		}
		if got[4] != "" || r.Data != nil {
			t.Fatalf("cut at %d: read %v after the failure, left %d", n, got, len(r.Data))
		}
	}
}

// BenchmarkReader reads one record of a source's snapshot codec: a
// flag byte, a revision, a time, a key and a value.
//
//	go test -run '^$' -bench Reader -benchmem ./internal/fields/
func BenchmarkReader(b *testing.B) {
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
		r := Reader{Data: rec}
		sink += int(r.Byte()) + int(r.Uvarint()) + int(r.Varint()) + len(r.Bytes()) + len(r.Bytes32())
		if r.Err != nil || len(r.Data) != 0 {
			b.Fatal(r.Err)
		}
	}
	_ = sink
}

// TestReaderFail: a caller's failure sticks like the reader's own, the
// first failure wins, and later reads return zeros.
func TestReaderFail(t *testing.T) {
	mine := errors.New("bad flag")
	tests := []struct {
		name string
		read func(r *Reader)
		want error
	}{
		{name: "the caller's", read: func(r *Reader) { r.Byte(); r.Fail(mine) }, want: mine},
		{name: "the caller's twice", read: func(r *Reader) { r.Fail(mine); r.Fail(errors.New("second")) }, want: mine},
		{name: "the reader's first", read: func(r *Reader) { r.Take(100); r.Fail(mine) }, want: errTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reader{Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}}
			tt.read(r)
			if !errors.Is(r.Err, tt.want) {
				t.Fatalf("err %v, want %v", r.Err, tt.want)
			}
			if r.Data != nil {
				t.Fatalf("%d bytes left after the failure", len(r.Data))
			}
			if got := [5]any{r.Byte(), r.Uvarint(), r.Varint(), len(r.Bytes()), len(r.Bytes32())}; got != [5]any{byte(0), uint64(0), int64(0), 0, 0} {
				t.Fatalf("reads after the failure: %v", got)
			}
			if !errors.Is(r.Err, tt.want) {
				t.Fatalf("err after more reads %v, want %v", r.Err, tt.want)
			}
		})
	}
}

// TestReaderZero: the zero Reader's first read fails.
func TestReaderZero(t *testing.T) {
	var r Reader
	if r.Uvarint() != 0 || !errors.Is(r.Err, errTruncated) {
		t.Fatalf("zero Reader: err %v", r.Err)
	}
}

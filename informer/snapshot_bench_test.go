package informer

import (
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// rawCodec is the cheapest codec of a fmtObj: two length-prefixed strings.
// With it the snapshot benchmarks measure the layout's own cost (framing,
// checksums, chunking, keys, parallel decode), not a codec's.
type rawCodec struct{}

func (rawCodec) Format() string { return "raw" }

func (rawCodec) AppendEncode(dst []byte, o *fmtObj) ([]byte, error) {
	dst = binary.AppendUvarint(dst, uint64(len(o.Name)))
	dst = append(dst, o.Name...)
	dst = binary.AppendUvarint(dst, uint64(len(o.Data)))
	return append(dst, o.Data...), nil
}

func (rawCodec) Decode(b []byte) (*fmtObj, error) {
	name, b, ok := cutRawString(b)
	if !ok {
		return nil, errors.New("name")
	}
	data, _, ok := cutRawString(b)
	if !ok {
		return nil, errors.New("data")
	}
	return &fmtObj{Name: name, Data: data}, nil
}

// cutRawString returns the length-prefixed string at the start of b and
// what follows it.
func cutRawString(b []byte) (string, []byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", nil, false
	}
	return string(b[k : k+int(n)]), b[k+int(n):], true
}

// BenchmarkSnapshotLayout measures writing and reading 100k objects of
// 1 KB in the snapshot layout with the cheapest codec: what the layout adds
// to a source's codec. Reported per object.
//
//	go test -run '^$' -bench BenchmarkSnapshotLayout -benchmem ./informer/
func BenchmarkSnapshotLayout(b *testing.B) {
	const n = 100_000
	objs := fmtObjs(n, 1000)
	b.Run("encode/1-goroutine", func(b *testing.B) {
		for b.Loop() {
			if _, err := encodeSnapshot(io.Discard, "id", "1", objs, rawCodec{}, 1); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/object")
	})
	var data []byte
	{
		w := &sliceWriter{}
		if _, err := encodeSnapshot(w, "id", "1", objs, rawCodec{}, 1); err != nil {
			b.Fatal(err)
		}
		data = w.b
	}
	b.Run("decode/all-cores", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeSnapshot(data, "id", rawCodec{}, fmtKey, snapshotWorkers()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/object")
		b.ReportMetric(float64(len(data))/n, "bytes/object")
	})
}

type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

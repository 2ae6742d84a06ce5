package k8s

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/ginformer/ginformer/source/k8s/internal/wire"
)

// BenchmarkSnapshotCodec weighs the snapshot codec of pods against the
// wire, for 20,000 served pods (benchPod: about 8 KB of protobuf each on
// the wire, managedFields included): client-go decoding the list, the
// source decoding each item from the wire, and the snapshot codec
// encoding and decoding the cached pods (managedFields dropped). All on
// one goroutine, so ns/pod is CPU per pod (the informer spreads both over
// its cores). Reported: ns/pod, and bytes per pod on the wire (wireB/pod)
// and in the snapshot (diskB/pod, before the snapshot layout's own bytes).
//
//	go test ./source/k8s -run '^$' -bench SnapshotCodec -benchmem -benchtime 3x
func BenchmarkSnapshotCodec(b *testing.B) {
	const n = 20_000
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "99999"}}
	for i := range n {
		list.Items = append(list.Items, *benchPod(i))
	}
	var body []byte
	{
		ser := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
		enc := scheme.Codecs.EncoderForVersion(ser, corev1.SchemeGroupVersion)
		var buf bytesBuffer
		if err := enc.Encode(list, &buf); err != nil {
			b.Fatal(err)
		}
		body = buf.b
	}
	raw, err := wire.Unwrap(body)
	if err != nil {
		b.Fatal(err)
	}
	_, items, err := wire.SplitList(raw, 2)
	if err != nil {
		b.Fatal(err)
	}
	wire := 0
	for _, it := range items {
		wire += len(it)
	}
	// The cached pods: decoded by the source, as an informer holds them.
	cached := newCodec[corev1.Pod, *corev1.Pod](Options{}).decodeList(formatProto, items, nil)
	snap := newCodec[corev1.Pod, *corev1.Pod](Options{}).snapshotCodec()
	encoded := make([][]byte, n)
	disk := 0
	for i, p := range cached {
		if encoded[i], err = snap.AppendEncode(nil, p); err != nil {
			b.Fatal(err)
		}
		disk += len(encoded[i])
	}
	perPod := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/pod")
		b.ReportMetric(float64(wire)/n, "wireB/pod")
		b.ReportMetric(float64(disk)/n, "diskB/pod")
	}
	b.Run("wire/client-go", func(b *testing.B) {
		dec := scheme.Codecs.UniversalDeserializer()
		for range b.N {
			if _, _, err := dec.Decode(body, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
		perPod(b)
	})
	b.Run("wire/ginformer", func(b *testing.B) {
		for range b.N {
			c := newCodec[corev1.Pod, *corev1.Pod](Options{})
			objs := make([]corev1.Pod, n)
			var scratch []byte
			for i, it := range items {
				if err := c.decode(formatProto, it, &objs[i], &scratch); err != nil {
					b.Fatal(err)
				}
			}
		}
		perPod(b)
	})
	b.Run("snapshot/encode", func(b *testing.B) {
		var buf []byte
		for range b.N {
			for _, p := range cached {
				if buf, err = snap.AppendEncode(buf[:0], p); err != nil {
					b.Fatal(err)
				}
			}
		}
		perPod(b)
	})
	b.Run("snapshot/decode", func(b *testing.B) {
		for range b.N {
			// A fresh source per run, as after a restart: its string table
			// and known objects start empty.
			c := newCodec[corev1.Pod, *corev1.Pod](Options{}).snapshotCodec()
			for _, e := range encoded {
				if _, err := c.Decode(e); err != nil {
					b.Fatal(err)
				}
			}
		}
		perPod(b)
	})
}

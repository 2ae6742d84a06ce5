package consistency

import (
	"context"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// benchWriter returns a writer over a fake client and an informer that does
// not run (the benchmarks drive its record directly).
func benchWriter(b *testing.B) *Writer[*corev1.ConfigMap, *corev1.ConfigMap] {
	b.Helper()
	client := fake.NewClientset().CoreV1().ConfigMaps("ns")
	src, err := k8s.New(client, func(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items }, k8s.Options{})
	if err != nil {
		b.Fatal(err)
	}
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *corev1.ConfigMap]{Source: src, KeyFunc: k8s.Key[*corev1.ConfigMap]})
	if err != nil {
		b.Fatal(err)
	}
	w, err := NewWriter[*corev1.ConfigMap](client, inf, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Close)
	return w
}

// The costs a Writer adds: a read whose writes the cache has already shown
// (the common case: no context, no timer), the handler's work per event the
// cache applies, and recording a write whose event the cache then applies.
func BenchmarkWriter(b *testing.B) {
	b.Run("Get-caughtUp", func(b *testing.B) {
		w := benchWriter(b)
		key := informer.NamespacedKey{Namespace: "ns", Name: "a"}
		w.rec.wrote(key, version{rv: "10", n: 10})
		w.rec.observe(10)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := w.Get(ctx, key); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("handler-event", func(b *testing.B) {
		w := benchWriter(b)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "12345"}}
		b.ReportAllocs()
		for b.Loop() {
			w.observe(cm)
		}
	})
	b.Run("write-then-event", func(b *testing.B) {
		w := benchWriter(b)
		keys := make([]informer.NamespacedKey, 1024)
		for i := range keys {
			keys[i] = informer.NamespacedKey{Namespace: "ns", Name: strconv.Itoa(i)}
		}
		rvs := make([]string, 1<<16)
		for i := range rvs {
			rvs[i] = strconv.Itoa(i + 1)
		}
		b.ReportAllocs()
		n := uint64(0)
		for b.Loop() {
			n++
			w.rec.wrote(keys[n%1024], version{rv: rvs[n%(1<<16)], n: n})
			w.rec.observe(n)
		}
	})
}

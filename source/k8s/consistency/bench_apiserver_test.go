package consistency_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ginformer/ginformer/source/k8s/consistency"
)

// An update, then a read of the updated object from the cache, against the
// apiserver: through the writer (the read waits for the update) and with
// NoWait (the cache as it is). stale/op is the share of reads that returned
// the object as it was before the update.
func BenchmarkReadAfterUpdate(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts []consistency.ReadOption
	}{{"wait", nil}, {"nowait", []consistency.ReadOption{consistency.NoWait()}}} {
		b.Run(mode.name, func(b *testing.B) {
			f := newCMFixture(b, consistency.Options{})
			ctx := b.Context()
			obj, err := f.w.Create(ctx, cm("a", 0), metav1.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			stale, i := 0, 0
			var read time.Duration
			for b.Loop() {
				i++
				obj.Data["gen"] = fmt.Sprint(i)
				if obj, err = f.w.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				got, ok, err := f.w.Get(ctx, f.key("a"), mode.opts...)
				read += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if !ok || gen(got.Data) != i {
					stale++
				}
			}
			b.ReportMetric(float64(stale)/float64(i), "stale/op")
			b.ReportMetric(float64(read.Nanoseconds())/float64(i), "read-ns/op")
		})
	}
}

// How long the informer takes to apply the resourceVersion of a List of a
// quiet resource (see docs/k8s.md, "When a List's resourceVersion can be
// waited on"): the wait ends at the watch's next bookmark, up to about a
// minute. Run it with -benchtime=1x.
func BenchmarkWaitForListVersion(b *testing.B) {
	f := newCMFixture(b, consistency.Options{})
	ctx := b.Context()
	if _, err := f.w.Create(ctx, cm("q", 1), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := f.w.WaitForWrites(ctx); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		// Another resource's write moves etcd's revision past the
		// ConfigMaps' last change.
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: "s-"}}
		if _, err := needEnv(b).Client.CoreV1().Secrets(f.ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		l, err := f.client.List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		err = f.inf.WaitForVersion(wctx, l.ResourceVersion)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
}

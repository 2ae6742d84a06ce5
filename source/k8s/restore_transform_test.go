package k8s_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// rewoundSource is a Kubernetes source whose caught-up watch (the watch of
// an informer restored from a snapshot) starts from an older version than
// the informer asks for, from, so that it replays changes the snapshot
// already holds; and whose snapshot codec remembers the objects it
// decoded (the restored objects, which the cache holds).
type rewoundSource struct {
	*k8s.Source[*corev1.Secret]
	from     string   // "" for no rewinding
	restored sync.Map // *corev1.Secret → struct{}
}

func (s *rewoundSource) Watch(ctx context.Context, o informer.WatchOptions) (informer.Watcher[*corev1.Secret], error) {
	if s.from != "" && o.NotifyCaughtUp && o.Version != "" {
		o.Version = s.from
	}
	return s.Source.Watch(ctx, o)
}

func (s *rewoundSource) SnapshotCodec() informer.Codec[*corev1.Secret] {
	return recordingCodec{s.Source.SnapshotCodec(), &s.restored}
}

type recordingCodec struct {
	informer.Codec[*corev1.Secret]
	decoded *sync.Map
}

func (c recordingCodec) Decode(data []byte) (*corev1.Secret, error) {
	obj, err := c.Codec.Decode(data)
	if err == nil {
		c.decoded.Store(obj, struct{}{})
	}
	return obj, err
}

// A creation replayed while an informer restored from a snapshot catches
// up is decoded afresh: the transform, which strips managedFields in
// place, never receives a restored object (the cache's own, which readers
// share), while a reader goes through the cache meanwhile (-race).
func TestRestoredObjectsNotTransformedAgain(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	ctx := t.Context()
	secrets := e.Client.CoreV1().Secrets(ns)
	create := func(name string) string {
		t.Helper()
		s, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
			StringData: map[string]string{"k": name}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return s.ResourceVersion
	}
	before := create("before")
	const n = 10
	for i := range n {
		create(fmt.Sprint("created-", i))
	}
	path := filepath.Join(t.TempDir(), "secrets.snap")

	var twice atomic.Int32 // restored objects handed to the transform
	var replayed atomic.Int32
	run := func(src *rewoundSource, reader bool) *informer.SharedInformer[informer.NamespacedKey, *corev1.Secret] {
		inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *corev1.Secret]{
			Source: src, KeyFunc: k8s.Key[*corev1.Secret],
			Snapshot: informer.SnapshotOptions[*corev1.Secret]{Store: informer.NewSnapshotFile(path), Interval: -1},
			Transform: func(s *corev1.Secret) (*corev1.Secret, error) {
				if _, ok := src.restored.Load(s); ok {
					twice.Add(1)
				}
				if s.Name != "before" && src.from != "" {
					replayed.Add(1)
				}
				s.ManagedFields = nil // in place
				return s, nil
			},
			Logger: logr.Discard(),
		})
		require.NoError(t, err)
		rctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _ = inf.Run(rctx) })
		if reader {
			wg.Go(func() {
				for rctx.Err() == nil {
					for _, s := range inf.Lister().All() {
						_ = len(s.ManagedFields)
					}
				}
			})
		}
		t.Cleanup(func() { cancel(); wg.Wait() })
		wctx, wcancel := context.WithTimeout(ctx, waitFor)
		defer wcancel()
		require.NoError(t, informer.WaitForSync(wctx, inf))
		require.Equal(t, n+1, inf.Lister().Len())
		cancel()
		wg.Wait() // writes the snapshot
		return inf
	}
	newSource := func(from string) *rewoundSource {
		return &rewoundSource{Source: secretSource(t, ns), from: from}
	}
	first := run(newSource(""), false)
	require.NotEmpty(t, first.Health().SnapshotVersion, "a snapshot written at stop")

	src := newSource(before)
	second := run(src, true)
	require.NotEmpty(t, second.Health().RestoredVersion, "restored from the snapshot")
	require.Positive(t, replayed.Load(), "the creations after %s replayed while catching up", before)
	require.Zero(t, twice.Load(), "restored objects handed to the transform again")
}

// secretSource returns a typed source of the Secrets of ns (a resource the
// apiserver caches, as a caught-up watch needs), managedFields kept.
func secretSource(t testing.TB, ns string) *k8s.Source[*corev1.Secret] {
	t.Helper()
	src, err := k8s.New(env.Client.CoreV1().Secrets(ns), secretItems, k8s.Options{KeepManagedFields: true})
	require.NoError(t, err)
	require.True(t, src.Decoding())
	return src
}

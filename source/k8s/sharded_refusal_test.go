package k8s

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
)

// refusingLW refuses every request with a ShardSelector, as an apiserver
// that does not accept the selector would, and records what it was sent.
type refusingLW struct {
	mu   sync.Mutex
	sent []string // the ShardSelector of each request, "-" for none
}

func (f *refusingLW) record(sel string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sel == "" {
		f.sent = append(f.sent, "-")
		return nil
	}
	f.sent = append(f.sent, "sel")
	return apierrors.NewBadRequest("invalid shard selector: too many ranges")
}

func (f *refusingLW) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.sent
	f.sent = nil
	return out
}

func (f *refusingLW) List(_ context.Context, o metav1.ListOptions) (*corev1.ConfigMapList, error) {
	if err := f.record(o.ShardSelector); err != nil {
		return nil, err
	}
	l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
	for i := range 50 {
		l.Items = append(l.Items, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: fmt.Sprintf("cm-%02d", i), UID: types.UID(fmt.Sprintf("%08x-1111-4222-8333-%012x", i*2654435761, i*40503)),
		}})
	}
	return l, nil
}

func (f *refusingLW) Watch(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
	if err := f.record(o.ShardSelector); err != nil {
		return nil, err
	}
	return watch.NewFake(), nil
}

// TestShardedSelectorRefused: a server that refuses the selector gets the
// request again without it, and no selector until the slice changes.
func TestShardedSelectorRefused(t *testing.T) {
	lw := &refusingLW{}
	base, err := New(lw, func(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items }, Options{})
	require.NoError(t, err)
	half, err := Split(0, 2)
	require.NoError(t, err)
	slices := NewStaticSlices(half)
	src, err := NewSharded(ShardedOptions[*corev1.ConfigMap]{Source: base, Slices: slices})
	require.NoError(t, err)

	page, err := src.List(t.Context(), informer.ListOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"sel", "-"}, lw.take(), "refused, then sent again without the selector")
	require.Equal(t, FilterClient, src.Mode())
	require.NotEmpty(t, page.Items)
	require.Less(t, len(page.Items), 50)
	for _, o := range page.Items {
		require.True(t, half.Contains(shard.Hash(string(o.UID))))
	}
	_, err = src.List(t.Context(), informer.ListOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"-"}, lw.take(), "no selector for the same slice")

	// A new slice tries the selector again; a streaming list's probe is
	// refused, and the watch opens without it.
	other, err := Split(1, 2)
	require.NoError(t, err)
	slices.Set(other)
	w, err := src.Watch(t.Context(), informer.WatchOptions{SendInitialEvents: true})
	require.NoError(t, err)
	w.Stop()
	for range w.Events() {
	}
	require.Equal(t, []string{"sel", "-"}, lw.take(), "probe refused, watch without the selector")
	require.Equal(t, FilterClient, src.Mode())
}

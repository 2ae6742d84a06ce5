package informer_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// TestInformerFirstListWithDuplicateKeys: a first list that names a key twice
// reaches handlers as client-go's informer delivers it (the key's entry holds
// a Replaced delta per listing): an initial add of the first listing, then an
// update to the second; the cache holds the second; each key counts once for
// the sync. Small and large lists take different paths (one by one, and a
// store built whole on two goroutines).
func TestInformerFirstListWithDuplicateKeys(t *testing.T) {
	for _, n := range []int{3, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				list := []*item{{Name: "a", Group: "g", V: 1}}
				for i := range n - 2 {
					list = append(list, &item{Name: fmt.Sprint("k", i), Group: "g", V: 1})
				}
				list = append(list, &item{Name: "a", Group: "h", V: 2})
				src := informer.SourceFuncs[*item]{
					ListFunc: func(context.Context, informer.ListOptions) (informer.ListPage[*item], error) {
						return informer.ListPage[*item]{Items: slices.Clone(list), Version: "1"}, nil
					},
					WatchFunc: func(ctx context.Context, _ informer.WatchOptions) (informer.Watcher[*item], error) {
						return informer.NewWatchStream[*item](ctx, 0), nil
					},
				}
				inf := newInformer(t, src, nil)
				h := &calls{}
				reg, err := inf.AddHandler(h, informer.HandlerOptions{})
				require.NoError(t, err)
				start(t, inf)
				require.NoError(t, informer.WaitForSync(t.Context(), inf, reg))
				got := h.got()
				require.Len(t, got, n)
				assert.Equal(t, []string{"add* a=1", "update a=1->2"}, got[:2], "the key's deltas, in list order, at its first place")
				assert.Equal(t, n-1, inf.Lister().Len())
				a, ok := inf.Lister().Get("a")
				require.True(t, ok)
				assert.Equal(t, 2, a.V)
				keys, err := inf.Lister().IndexKeys("group", "h")
				require.NoError(t, err)
				assert.Equal(t, []string{"a"}, slices.Collect(keys))
			})
		})
	}
}

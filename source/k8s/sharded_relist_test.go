package k8s_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/source/k8s"
)

// noBackoff is a backoff no test outlives: a relist that waited on it
// would fail the test's wait, whatever the machine's load, where a bound
// on the relist's time would fail a slow machine too.
var noBackoff = informer.Backoff{Initial: time.Hour, Max: time.Hour}

// errorLog collects the errors an informer reports.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) handle(_ context.Context, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

func (l *errorLog) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errs)
}

// With a backoff of an hour, a slice change is no failure: each of several
// changes in a row, with no write in between, relists at once and reports
// no error; WaitLoaded returns once the cache holds exactly the new slice
// (issue 21: the reflector backed off as after a failure, and an idle watch
// between two changes made the second one wait).
func TestShardedSliceChangesRelistAtOnce(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	const objects = 300
	createMany(t, e.Client, ns, "cm-", objects)
	uids := apiState(t, e.Client, ns)
	for _, tc := range []struct {
		name  string
		paged bool
	}{{"streaming list", false}, {"paged list", true}} {
		t.Run(tc.name, func(t *testing.T) {
			client, err := kubernetes.NewForConfig(rest.CopyConfig(e.Config))
			require.NoError(t, err)
			base, err := k8s.New(client.CoreV1().ConfigMaps(ns), cmItems, k8s.Options{})
			require.NoError(t, err)
			slices := k8s.NewStaticSlices(split(t, 0, 2))
			src, err := k8s.NewSharded(k8s.ShardedOptions[*corev1.ConfigMap]{Source: base, Slices: slices})
			require.NoError(t, err)
			var errs errorLog
			inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *corev1.ConfigMap]{
				Name: "sharded", Source: src, KeyFunc: k8s.Key[*corev1.ConfigMap],
				ListWatch:    informer.ListWatchOptions{DisableStreamingList: tc.paged, PageSize: 100, Backoff: noBackoff},
				ErrorHandler: errs.handle,
			})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(t.Context())
			var wg sync.WaitGroup
			wg.Go(func() { _ = inf.Run(ctx) })
			defer wg.Wait()
			defer cancel()
			wctx, wcancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer wcancel()
			_, err = src.WaitLoaded(wctx, inf)
			require.NoError(t, err)

			var took []time.Duration
			for i, set := range []shard.Set{split(t, 1, 2), split(t, 0, 3), split(t, 1, 4), split(t, 2, 3), split(t, 3, 4), split(t, 0, 1), split(t, 1, 3)} {
				at := time.Now()
				slices.Set(set)
				sl, err := src.WaitLoaded(wctx, inf)
				require.NoError(t, err, "change %d", i+1)
				took = append(took, time.Since(at))
				require.True(t, sl.Shards.Equal(set), "change %d", i+1)
				want := 0
				for _, uid := range uids {
					if set.Contains(shard.Hash(uid)) {
						want++
					}
				}
				got := 0
				for k, o := range inf.Lister().All() {
					require.True(t, set.Contains(src.Hash(o)), "change %d: %s outside the slice", i+1, k.Name)
					got++
				}
				require.Equal(t, want, got, "change %d: the cache holds the slice once WaitLoaded returns", i+1)
			}
			t.Logf("slice change to cache loaded: %v", took)
			assert.Empty(t, errs.all(), "a slice change is no error")
		})
	}
}

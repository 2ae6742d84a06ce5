package k8s_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// The tests of server-side sharding share a second control plane with the
// ShardedListAndWatch gate on, started on first use (about 5 s) and stopped
// by TestMain. The default env has the gate off: the fallback runs there.
var (
	gatedOnce sync.Once
	gatedEnv  *k8stest.Env
	gatedErr  error
)

func needGatedEnv(t *testing.T) *k8stest.Env {
	t.Helper()
	needEnv(t)
	gatedOnce.Do(func() { gatedEnv, gatedErr = startGated() })
	require.NoError(t, gatedErr)
	return gatedEnv
}

func startGated() (*k8stest.Env, error) {
	return k8stest.Start(k8stest.Config{FeatureGates: map[string]bool{k8stest.ShardedListAndWatch: true}})
}

// createMany creates n ConfigMaps named cm-00000… in ns with 16 writers.
func createMany(t *testing.T, c kubernetes.Interface, ns, prefix string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				_, err := c.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%05d", prefix, i)},
					Data:       map[string]string{"gen": "1"},
				}, metav1.CreateOptions{})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// sharded is one replica: its own client, a static slice, a sharded source
// and an informer whose handler records what it is told.
type sharded struct {
	name   string
	slices *k8s.StaticSlices
	src    *k8s.Sharded[*corev1.ConfigMap]
	inf    *cmInformer

	// mu guards the handler's records.
	mu        sync.Mutex
	added     map[string]bool // keys added after mark
	movedAway map[string]bool // deletions inferred by a relist, outside the slice now
	deleted   map[string]bool // deletions observed (FinalStateUnknown false)
}

type replicaOptions struct {
	disableStreaming    bool
	disableServerFilter bool
}

func startSharded(t *testing.T, e *k8stest.Env, ns, name string, set shard.Set, ro replicaOptions) *sharded {
	t.Helper()
	client, err := kubernetes.NewForConfig(rest.CopyConfig(e.Config))
	require.NoError(t, err)
	base, err := k8s.New(client.CoreV1().ConfigMaps(ns), func(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items }, k8s.Options{})
	require.NoError(t, err)
	r := &sharded{name: name, slices: k8s.NewStaticSlices(set), added: map[string]bool{}, movedAway: map[string]bool{}, deleted: map[string]bool{}}
	r.src, err = k8s.NewSharded(k8s.ShardedOptions[*corev1.ConfigMap]{
		Source: base, Slices: r.slices, DisableServerFilter: ro.disableServerFilter, Logger: testr.New(t).WithName(name),
	})
	require.NoError(t, err)
	r.inf, err = informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *corev1.ConfigMap]{
		Name: name, Source: r.src, KeyFunc: k8s.Key[*corev1.ConfigMap],
		ListWatch: informer.ListWatchOptions{
			Backoff:              informer.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond},
			DisableStreamingList: ro.disableStreaming,
		},
	})
	require.NoError(t, err)
	_, err = r.inf.AddHandler(informer.HandlerFuncs[informer.NamespacedKey, *corev1.ConfigMap]{
		AddFunc: func(o *corev1.ConfigMap, _ bool) {
			r.mu.Lock()
			r.added[o.Name] = true
			r.mu.Unlock()
		},
		DeleteFunc: func(d informer.Deletion[informer.NamespacedKey, *corev1.ConfigMap]) {
			r.mu.Lock()
			defer r.mu.Unlock()
			switch {
			case !d.FinalStateUnknown:
				r.deleted[d.Key.Name] = true
			case !r.src.InSlice(d.Object):
				r.movedAway[d.Key.Name] = true
			}
		},
	}, informer.HandlerOptions{Name: "record"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.inf.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return r
}

// mark forgets what the handler recorded so far.
func (r *sharded) mark() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.added)
	clear(r.movedAway)
	clear(r.deleted)
}

// cached returns the names in the replica's cache with their "gen".
func (r *sharded) cached() map[string]string {
	out := map[string]string{}
	for k, o := range r.inf.Lister().All() {
		out[k.Name] = o.Data["gen"]
	}
	return out
}

// settledOn reports whether the caches hold every ConfigMap of want (name →
// uid) exactly once, each in the slice of the replica caching it, all at
// generation gen (any if "").
func settledOn(rs []*sharded, want map[string]string, gen string) error {
	seen := map[string]string{}
	for _, r := range rs {
		sl, _, _ := r.slices.Slice(context.Background())
		for k, o := range r.inf.Lister().All() {
			if other, dup := seen[k.Name]; dup {
				return fmt.Errorf("%s cached by %s and %s", k.Name, other, r.name)
			}
			seen[k.Name] = r.name
			if !sl.Shards.Contains(shard.Hash(string(o.UID))) {
				return fmt.Errorf("%s caches %s outside its slice", r.name, k.Name)
			}
			if uid, ok := want[k.Name]; !ok || uid != string(o.UID) {
				return fmt.Errorf("%s caches %s (uid %s), not in the API (%q)", r.name, k.Name, o.UID, uid)
			}
			if gen != "" && o.Data["gen"] != gen {
				return fmt.Errorf("%s caches %s at gen %s, want %s", r.name, k.Name, o.Data["gen"], gen)
			}
		}
	}
	if len(seen) != len(want) {
		return fmt.Errorf("caches hold %d objects, the API %d", len(seen), len(want))
	}
	return nil
}

// apiState lists the namespace: name → uid.
func apiState(t *testing.T, c kubernetes.Interface, ns string) map[string]string {
	t.Helper()
	l, err := c.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	out := make(map[string]string, len(l.Items))
	for _, o := range l.Items {
		out[o.Name] = string(o.UID)
	}
	return out
}

func waitSettledOn(t *testing.T, c kubernetes.Interface, ns, gen string, rs ...*sharded) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var err error
	for time.Since(start) < time.Minute {
		if err = settledOn(rs, apiState(t, c, ns), gen); err == nil {
			return time.Since(start)
		}
		<-tick.C
	}
	t.Fatalf("not settled after a minute: %v", err)
	return 0
}

func split(t *testing.T, i, n int) shard.Set {
	t.Helper()
	s, err := k8s.Split(i, n)
	require.NoError(t, err)
	return s
}

// shardScenario runs 3 replicas over 3000 ConfigMaps of e, checks the
// slices, the watch traffic of 300 updates and a slice change, and
// returns nothing: the assertions on traffic depend on want (the mode the
// replicas must report).
func shardScenario(t *testing.T, e *k8stest.Env, want k8s.FilterMode, ro replicaOptions) {
	const objects, updates = 3000, 300
	ns := e.Namespace(t)
	createMany(t, e.Client, ns, "cm-", objects)
	var rs []*sharded
	for i := range 3 {
		o := ro
		o.disableStreaming = o.disableStreaming || i == 1 // replica 1 lists in pages, the others stream
		rs = append(rs, startSharded(t, e, ns, fmt.Sprintf("r%d", i), split(t, i, 3), o))
	}
	took := waitSettledOn(t, e.Client, ns, "1", rs...)
	t.Logf("%d objects: 3 replicas settled in %v", objects, took)
	for _, r := range rs {
		recv, deliv := r.src.Counts()
		n := r.inf.Lister().Len()
		t.Logf("%s: mode %v, caches %d, received %d, delivered %d", r.name, r.src.Mode(), n, recv, deliv)
		require.Equal(t, want, r.src.Mode(), r.name)
		require.EqualValues(t, n, deliv, "%s delivered its slice once", r.name)
		if want == k8s.FilterServer {
			require.Equal(t, recv, deliv, "%s received only its slice", r.name)
		} else {
			require.EqualValues(t, objects, recv, "%s received everything", r.name)
		}
	}

	// Watch traffic: each replica receives the updates of its slice (server
	// filter) or all of them (client filter), and delivers its slice's.
	uids := apiState(t, e.Client, ns)
	before := make([][2]uint64, len(rs))
	for i, r := range rs {
		before[i][0], before[i][1] = r.src.Counts()
	}
	wantUpd := make([]uint64, len(rs))
	for i := range updates {
		name := fmt.Sprintf("cm-%05d", i*objects/updates)
		for j, r := range rs {
			sl, _, _ := r.slices.Slice(t.Context())
			if sl.Shards.Contains(shard.Hash(uids[name])) {
				wantUpd[j]++
			}
		}
	}
	for i := range updates {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i*objects/updates), Namespace: ns}, Data: map[string]string{"gen": "2"}}
		_, err := e.Client.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	updated := func() bool {
		n := 0
		for _, r := range rs {
			for _, g := range r.cached() {
				if g == "2" {
					n++
				}
			}
		}
		return n == updates
	}
	require.Eventually(t, updated, time.Minute, 10*time.Millisecond)
	if want != k8s.FilterServer {
		// Filtering on the client, every replica receives every update,
		// those outside its slice too: the caches being complete says
		// nothing of those, which may still be on their way.
		require.Eventually(t, func() bool {
			for i, r := range rs {
				if recv, _ := r.src.Counts(); recv-before[i][0] < updates {
					return false
				}
			}
			return true
		}, time.Minute, 10*time.Millisecond)
	}
	for i, r := range rs {
		recv, deliv := r.src.Counts()
		dr, dd := recv-before[i][0], deliv-before[i][1]
		t.Logf("%s: %d updates: received %d, delivered %d (slice: %d)", r.name, updates, dr, dd, wantUpd[i])
		require.Equal(t, wantUpd[i], dd, r.name)
		if want == k8s.FilterServer {
			require.Equal(t, wantUpd[i], dr, r.name)
		} else {
			require.EqualValues(t, updates, dr, r.name)
		}
	}

	// A slice change: two replicas take everything, the third nothing,
	// while 100 ConfigMaps are created. Objects that left arrive as
	// inferred deletions outside the new slice, objects that came as adds;
	// none is lost or doubled.
	olds := make([]map[string]string, len(rs))
	for i, r := range rs {
		olds[i] = r.cached()
		r.mark()
	}
	empty, err := shard.NewSet(shard.DefaultShards)
	require.NoError(t, err)
	// Readers see the old slice or the new one: the replica losing
	// everything goes from all its objects to none in one step.
	oldLen := len(olds[2])
	sampling := make(chan struct{})
	var partial []int
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			if n := rs[2].inf.Lister().Len(); n > 0 && n < oldLen {
				partial = append(partial, n)
			}
			select {
			case <-sampling:
				return
			default:
				runtime.Gosched()
			}
		}
	})
	for i, set := range []shard.Set{split(t, 0, 2), split(t, 1, 2), empty} {
		rs[i].slices.Set(set)
	}
	createMany(t, e.Client, ns, "late-", 100)
	took = waitSettledOn(t, e.Client, ns, "", rs...)
	close(sampling)
	sampler.Wait()
	require.Empty(t, partial, "a reader saw the emptied replica's cache half-way")
	t.Logf("slice change: settled in %v", took)
	require.Zero(t, rs[2].inf.Lister().Len(), "the replica with no shards caches nothing")
	for i, r := range rs {
		now := r.cached()
		r.mu.Lock()
		wantAway := map[string]bool{}
		for name := range olds[i] {
			if _, ok := now[name]; !ok {
				wantAway[name] = true
			}
		}
		require.Equal(t, wantAway, r.movedAway, "%s: objects that moved away arrive as inferred deletions outside the slice", r.name)
		require.Empty(t, r.deleted, "%s: nothing was deleted", r.name)
		for name := range now {
			if _, ok := olds[i][name]; !ok {
				require.True(t, r.added[name], "%s: %s moved in or was created: an add", r.name, name)
			}
		}
		added := len(r.added)
		r.mu.Unlock()
		t.Logf("%s: %d moved away, %d added, mode %v", r.name, len(wantAway), added, r.src.Mode())
		require.Equal(t, want, r.src.Mode(), r.name)
	}
}

// TestShardedServerSide: with the gate on, each replica receives only its
// slice, on lists, streaming lists and watches.
func TestShardedServerSide(t *testing.T) {
	shardScenario(t, needGatedEnv(t), k8s.FilterServer, replicaOptions{})
}

// TestShardedClientFallback: with the gate off, the apiserver ignores the
// selector; the same slices come out of the client-side filter, and each
// replica receives everything.
func TestShardedClientFallback(t *testing.T) {
	shardScenario(t, needEnv(t), k8s.FilterClient, replicaOptions{})
}

// keyHashSlices is a SliceSource with the wrong hash (shard.HashKey, the
// default of shard.Owner) for NewSharded to refuse.
type keyHashSlices struct{ *k8s.StaticSlices }

func (keyHashSlices) Hash(key string) uint64 { return shard.HashKey(key) }

// apiHashSlices hashes as the apiserver does.
type apiHashSlices struct{ *k8s.StaticSlices }

func (apiHashSlices) Hash(key string) uint64 { return shard.Hash(key) }

func TestNewShardedOptions(t *testing.T) {
	base, err := k8s.New(fake.NewClientset().CoreV1().ConfigMaps("x"), func(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items }, k8s.Options{})
	require.NoError(t, err)
	all := split(t, 0, 1)
	for _, tc := range []struct {
		name string
		opts k8s.ShardedOptions[*corev1.ConfigMap]
		ok   bool
	}{
		{"no source", k8s.ShardedOptions[*corev1.ConfigMap]{Slices: k8s.NewStaticSlices(all)}, false},
		{"no slices", k8s.ShardedOptions[*corev1.ConfigMap]{Source: base}, false},
		{"unknown field", k8s.ShardedOptions[*corev1.ConfigMap]{Source: base, Slices: k8s.NewStaticSlices(all), Field: "metadata.uid"}, false},
		{"key hash", k8s.ShardedOptions[*corev1.ConfigMap]{Source: base, Slices: keyHashSlices{k8s.NewStaticSlices(all)}}, false},
		{"api hash", k8s.ShardedOptions[*corev1.ConfigMap]{Source: base, Slices: apiHashSlices{k8s.NewStaticSlices(all)}}, true},
		{"namespace", k8s.ShardedOptions[*corev1.ConfigMap]{Source: base, Slices: k8s.NewStaticSlices(all), Field: shard.FieldNamespace}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := k8s.NewSharded(tc.opts)
			if !tc.ok {
				require.ErrorIs(t, err, informer.ErrInvalidOptions)
				return
			}
			require.NoError(t, err)
			require.Equal(t, k8s.FilterUnknown, src.Mode())
		})
	}
	_, err = k8s.Split(3, 3)
	require.ErrorIs(t, err, shard.ErrInvalidShards)
	union := shard.Set{}
	for i := range 5 {
		s := split(t, i, 5)
		require.True(t, union.Intersect(s).Empty())
		union = union.Union(s)
	}
	require.Equal(t, shard.DefaultShards, union.Len())
}

// TestShardedOptionsOnServer: DisableServerFilter filters on the client on
// a server that could filter; Field namespace places whole namespaces.
func TestShardedOptionsOnServer(t *testing.T) {
	e := needGatedEnv(t)
	ns := e.Namespace(t)
	createMany(t, e.Client, ns, "cm-", 60)
	nsShard := shard.ShardOf(shard.Hash(ns), shard.DefaultShards)
	mine, err := shard.NewSet(shard.DefaultShards, nsShard)
	require.NoError(t, err)
	others := split(t, 0, 1).Minus(mine)
	var evens []int // 128 separate ranges: the longest selector 256 shards give
	for i := 0; i < shard.DefaultShards; i += 2 {
		evens = append(evens, i)
	}
	alternate, err := shard.NewSet(shard.DefaultShards, evens...)
	require.NoError(t, err)
	require.Len(t, alternate.Ranges(), 128)

	client, err := kubernetes.NewForConfig(rest.CopyConfig(e.Config))
	require.NoError(t, err)
	base, err := k8s.New(client.CoreV1().ConfigMaps(ns), func(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items }, k8s.Options{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		field    string
		set      shard.Set
		noServer bool
		want     int
		mode     k8s.FilterMode
	}{
		{"uid, client only", shard.FieldUID, split(t, 0, 2), true, -1, k8s.FilterClient},
		{"uid, 128 ranges", shard.FieldUID, alternate, false, -1, k8s.FilterServer},
		{"namespace, its shard", shard.FieldNamespace, mine, false, 60, k8s.FilterServer},
		{"namespace, other shards", shard.FieldNamespace, others, false, 0, k8s.FilterServer},
		{"namespace, other shards, client only", shard.FieldNamespace, others, true, 0, k8s.FilterClient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := k8s.NewSharded(k8s.ShardedOptions[*corev1.ConfigMap]{
				Source: base, Slices: k8s.NewStaticSlices(tc.set), Field: tc.field, DisableServerFilter: tc.noServer,
			})
			require.NoError(t, err)
			inf, _ := startInformer(t, src, informer.ListWatchOptions{})
			n := inf.Lister().Len()
			if tc.want >= 0 {
				require.Equal(t, tc.want, n)
			} else {
				require.Less(t, n, 60)
			}
			for _, o := range inf.Lister().All() {
				require.True(t, src.InSlice(o))
			}
			recv, deliv := src.Counts()
			require.EqualValues(t, n, deliv)
			if tc.noServer {
				require.EqualValues(t, 60, recv)
			} else {
				require.Equal(t, deliv, recv)
			}
			require.Equal(t, tc.mode, src.Mode())
		})
	}
}

// TestShardedDynamicAndMetadata: the echo is found in the lists of dynamic
// (unstructured) clients. Metadata clients get filtered lists without it:
// kube-apiserver v1.37.1 drops shardInfo when it converts a list to a
// PartialObjectMetadataList (asPartialObjectMetadataList copies only the
// resourceVersion and continue token), so the mode says client although
// the server filtered.
func TestShardedDynamicAndMetadata(t *testing.T) {
	e := needGatedEnv(t)
	ns := e.Namespace(t)
	createMany(t, e.Client, ns, "cm-", 40)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	half := split(t, 0, 2)
	check := func(t *testing.T, want k8s.FilterMode, mode func() k8s.FilterMode, list func() (int, error), counts func() (uint64, uint64)) {
		n, err := list()
		require.NoError(t, err)
		require.Equal(t, want, mode())
		recv, deliv := counts()
		require.EqualValues(t, n, deliv)
		require.Equal(t, recv, deliv)
		require.Less(t, n, 40)
	}
	t.Run("dynamic", func(t *testing.T) {
		base, err := k8s.NewDynamic(dynamic.NewForConfigOrDie(e.Config).Resource(gvr).Namespace(ns), k8s.Options{})
		require.NoError(t, err)
		src, err := k8s.NewSharded(k8s.ShardedOptions[*unstructured.Unstructured]{Source: base, Slices: k8s.NewStaticSlices(half)})
		require.NoError(t, err)
		check(t, k8s.FilterServer, src.Mode, func() (int, error) {
			p, err := src.List(t.Context(), informer.ListOptions{})
			return len(p.Items), err
		}, src.Counts)
	})
	t.Run("metadata", func(t *testing.T) {
		base, err := k8s.NewMetadata(metadata.NewForConfigOrDie(e.Config).Resource(gvr).Namespace(ns), k8s.Options{})
		require.NoError(t, err)
		src, err := k8s.NewSharded(k8s.ShardedOptions[*metav1.PartialObjectMetadata]{Source: base, Slices: k8s.NewStaticSlices(half)})
		require.NoError(t, err)
		check(t, k8s.FilterClient, src.Mode, func() (int, error) {
			p, err := src.List(t.Context(), informer.ListOptions{})
			return len(p.Items), err
		}, src.Counts)
	})
}

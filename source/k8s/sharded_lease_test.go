package k8s_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/shard/shardtest"
	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
	"github.com/ginformer/ginformer/source/k8s/lease"
)

// leaseSharded is one replica of the combined test: a client with
// connections of its own (net.Cut cuts them), a lease.Membership, a
// shard.Owner over the apiserver's hash, a Sharded source fed by the Owner,
// and an informer whose handler samples Owns.
type leaseSharded struct {
	name  string
	net   *k8stest.Net
	m     *lease.Membership
	owner *shard.Owner
	src   *k8s.Sharded[*corev1.ConfigMap]
	inf   *cmInformer

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	// mu guards the handler's counts.
	mu        sync.Mutex
	movedAway int // deletions inferred by a relist, outside the slice now
	deleted   int // deletions observed (FinalStateUnknown false), or inferred inside the slice
	owned     int // handler calls that found Owns true
}

func startLeaseSharded(t *testing.T, e *k8stest.Env, ns, name string, rec *shardtest.Ownership) *leaseSharded {
	t.Helper()
	r := &leaseSharded{name: name, net: &k8stest.Net{}}
	// A dialer of its own: client-go shares no transport with the other replicas.
	client, err := kubernetes.NewForConfig(r.net.Config(e.Config))
	require.NoError(t, err)
	r.m, err = lease.New(lease.Options{
		Client: client.CoordinationV1().Leases(ns), Group: "cms", Name: name,
		LeaseDuration: k8stest.LeaseDuration, Logger: k8stest.Quiet(),
	})
	require.NoError(t, err)
	r.owner, err = shard.NewOwner(shard.OwnerOptions{
		Membership: r.m, Hash: shard.Hash, OnChange: rec.OnChange(name),
		RetryInterval: 100 * time.Millisecond, Logger: k8stest.Quiet(),
	})
	require.NoError(t, err)
	base, err := k8s.New(client.CoreV1().ConfigMaps(ns), cmItems, k8s.Options{})
	require.NoError(t, err)
	r.src, err = k8s.NewSharded(k8s.ShardedOptions[*corev1.ConfigMap]{Source: base, Slices: r.owner, Logger: k8stest.Quiet()})
	require.NoError(t, err)
	r.inf, err = informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *corev1.ConfigMap]{
		// The default backoff: a slice change relists at once (issue 21).
		Name: name, Source: r.src, KeyFunc: k8s.Key[*corev1.ConfigMap], Logger: k8stest.Quiet(),
	})
	require.NoError(t, err)
	// A controller's handler: it would act on an object only if Owns
	// says so; every true answer is recorded with the instants around it.
	see := func(o *corev1.ConfigMap) {
		key := r.src.ShardKey(o)
		before := time.Now()
		if r.owner.Owns(key) {
			rec.Sample(name, shard.ShardOf(shard.Hash(key), shard.DefaultShards), before, time.Now())
			r.mu.Lock()
			r.owned++
			r.mu.Unlock()
		}
	}
	_, err = r.inf.AddHandler(informer.HandlerFuncs[informer.NamespacedKey, *corev1.ConfigMap]{
		AddFunc:    func(o *corev1.ConfigMap, _ bool) { see(o) },
		UpdateFunc: func(_, o *corev1.ConfigMap) { see(o) },
		DeleteFunc: func(d informer.Deletion[informer.NamespacedKey, *corev1.ConfigMap]) {
			see(d.Object)
			r.mu.Lock()
			defer r.mu.Unlock()
			if d.FinalStateUnknown && !r.src.InSlice(d.Object) {
				r.movedAway++
			} else {
				r.deleted++
			}
		},
	}, informer.HandlerOptions{Name: "owns"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.wg.Go(func() { _ = r.owner.Run(ctx) })
	r.wg.Go(func() { _ = r.inf.Run(ctx) })
	t.Cleanup(r.stop)
	return r
}

// stop leaves gracefully (or, after a cut, as well as it can).
func (r *leaseSharded) stop() {
	r.once.Do(func() {
		r.cancel()
		r.wg.Wait()
		r.net.Cut() // close the idle connections
	})
}

func (r *leaseSharded) counts() (movedAway, deleted int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.movedAway, r.deleted
}

func (r *leaseSharded) resetCounts() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.movedAway, r.deleted = 0, 0
}

// leaseShardedOwners reports whether every replica holds, and is assigned
// as its slice, exactly the assignment of the replicas' names.
func leaseShardedOwners(rs []*leaseSharded) error {
	var names []string
	for _, r := range rs {
		names = append(names, r.name)
	}
	a, _ := shard.Assign(0, names)
	for _, r := range rs {
		want := a.Set(r.name)
		if held := r.owner.Held(); !held.Equal(want) {
			return fmt.Errorf("%s holds %d shards, assigned %d", r.name, held.Len(), want.Len())
		}
		if sl, _ := r.owner.CurrentSlice(); !sl.Shards.Equal(want) {
			return fmt.Errorf("%s caches a slice of %d shards, assigned %d", r.name, sl.Shards.Len(), want.Len())
		}
	}
	return nil
}

// leaseShardedCaches reports whether the owners are settled and the caches
// hold every ConfigMap of want (name → uid, or name → uid/resourceVersion
// when rv is set) exactly once, each in the slice of the replica caching it.
// It returns who caches what.
func leaseShardedCaches(rs []*leaseSharded, want map[string]string, rv bool) (map[string]string, error) {
	if err := leaseShardedOwners(rs); err != nil {
		return nil, err
	}
	seen := make(map[string]string, len(want))
	for _, r := range rs {
		sl, _ := r.owner.CurrentSlice()
		for k, o := range r.inf.Lister().All() {
			if other, dup := seen[k.Name]; dup {
				return nil, fmt.Errorf("%s cached by %s and %s", k.Name, other, r.name)
			}
			seen[k.Name] = r.name
			if !sl.Shards.Contains(r.src.Hash(o)) {
				return nil, fmt.Errorf("%s caches %s outside its slice", r.name, k.Name)
			}
			got := string(o.UID)
			if rv {
				got += "/" + o.ResourceVersion
			}
			if want[k.Name] != got {
				return nil, fmt.Errorf("%s caches %s at %s, the API has %q", r.name, k.Name, got, want[k.Name])
			}
		}
	}
	if len(seen) != len(want) {
		return nil, fmt.Errorf("caches hold %d objects, the API %d", len(seen), len(want))
	}
	return seen, nil
}

// pollUntil checks cond every 20 ms until it returns nil, at most limit,
// and returns how long that took.
func pollUntil(t *testing.T, limit time.Duration, cond func() error) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("not settled after %v: %v", limit, err)
		}
		<-tick.C
	}
}

// apiVersions lists the namespace: name → uid/resourceVersion.
func apiVersions(t *testing.T, c kubernetes.Interface, ns string) map[string]string {
	t.Helper()
	l, err := c.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	out := make(map[string]string, len(l.Items))
	for _, o := range l.Items {
		out[o.Name] = string(o.UID) + "/" + o.ResourceVersion
	}
	return out
}

// TestShardedLeaseReplicas is the Kubernetes acceptance test of sharding
// (issue 15): against the kube-apiserver with ShardedListAndWatch on, 3
// replicas, each with its own client and connections, each a
// lease.Membership, a shard.Owner and a Sharded informer fed by the Owner,
// over 3000 ConfigMaps. See leaseShardScenario for what it checks.
func TestShardedLeaseReplicas(t *testing.T) {
	leaseShardScenario(t, needGatedEnv(t), k8s.FilterServer)
}

// TestShardedLeaseReplicasFallback: the same with the gate off, where every
// replica receives everything and keeps its slice.
func TestShardedLeaseReplicasFallback(t *testing.T) {
	leaseShardScenario(t, needEnv(t), k8s.FilterClient)
}

// leaseShardScenario checks that once settled the caches partition the
// collection and each replica receives only its slice on lists and watches
// (want FilterServer) or everything (FilterClient); that a replica cut off
// without releasing its Lease has its shards owned and its objects cached
// by the others within the lease duration and one relist; that a join
// moves only about 1/N of the shards and objects, seen by the handlers as
// moves; and, with a writer updating ConfigMaps throughout, that no shard
// is ever owned by two replicas at once (OnChange intervals on one clock
// disjoint, and every Owns seen true in a handler, or by a sampler on the
// cut-off replica, inside its own replica's interval).
func leaseShardScenario(t *testing.T, e *k8stest.Env, want k8s.FilterMode) {
	const objects, updates = 3000, 300
	ns := e.Namespace(t)
	start := time.Now()
	createMany(t, e.Client, ns, "cm-", objects)
	uids := apiState(t, e.Client, ns)
	t.Logf("%d ConfigMaps created in %v", objects, time.Since(start).Round(time.Millisecond))

	rec := shardtest.NewOwnership()
	rs := []*leaseSharded{
		startLeaseSharded(t, e, ns, "r0", rec),
		startLeaseSharded(t, e, ns, "r1", rec),
		startLeaseSharded(t, e, ns, "r2", rec),
	}
	took := pollUntil(t, 30*time.Second, func() error { _, err := leaseShardedCaches(rs, uids, false); return err })
	t.Logf("3 replicas: shards owned and every object cached exactly once after %v", took.Round(time.Millisecond))
	for _, r := range rs {
		recv, deliv := r.src.Counts()
		t.Logf("  %s: %d shards, mode %v, caches %d, received %d, delivered %d",
			r.name, r.owner.Held().Len(), r.src.Mode(), r.inf.Lister().Len(), recv, deliv)
		require.Equal(t, want, r.src.Mode(), r.name)
		checkTraffic(t, r, want, objects)
	}

	// Watch traffic: each replica receives exactly its slice's updates
	// (server) or all of them (client), and delivers its slice's.
	before := make([][2]uint64, len(rs))
	wantUpd := make([]uint64, len(rs))
	var names []string
	for i := range updates {
		name := fmt.Sprintf("cm-%05d", i*objects/updates)
		names = append(names, name)
		for j, r := range rs {
			if r.owner.Held().Contains(shard.Hash(uids[name])) {
				wantUpd[j]++
			}
		}
	}
	for i, r := range rs {
		before[i][0], before[i][1] = r.src.Counts()
	}
	updateMany(t, e.Client, ns, names, "2")
	pollUntil(t, 30*time.Second, func() error {
		n := 0
		for _, r := range rs {
			for _, o := range r.inf.Lister().All() {
				if o.Data["gen"] == "2" {
					n++
				}
			}
		}
		if n != updates {
			return fmt.Errorf("%d of %d updates cached", n, updates)
		}
		// Every update cached is not every update received: in client
		// mode a replica also receives the updates of the others' slices,
		// which change nothing it caches, so wait for those too.
		for i, r := range rs {
			recv, _ := r.src.Counts()
			wantRecv := wantUpd[i]
			if want == k8s.FilterClient {
				wantRecv = updates
			}
			if got := recv - before[i][0]; got < wantRecv {
				return fmt.Errorf("%s received %d of %d updates", r.name, got, wantRecv)
			}
		}
		return nil
	})
	for i, r := range rs {
		recv, deliv := r.src.Counts()
		dr, dd := recv-before[i][0], deliv-before[i][1]
		t.Logf("  %s: %d updates: received %d, delivered %d (its slice: %d)", r.name, updates, dr, dd, wantUpd[i])
		require.Equal(t, wantUpd[i], dd, r.name)
		if want == k8s.FilterServer {
			require.Equal(t, wantUpd[i], dr, "%s received another slice's updates", r.name)
		} else {
			require.EqualValues(t, updates, dr, "%s received every update", r.name)
		}
	}

	// From here on a writer updates a random ConfigMap every 5 ms, so that
	// handlers are called throughout the handoffs.
	wctx, stopWriter := context.WithCancel(t.Context())
	var writer sync.WaitGroup
	writer.Go(func() {
		rng := rand.New(rand.NewPCG(15, 3))
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for g := 3; ; g++ {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", rng.IntN(objects)), Namespace: ns},
				Data:       map[string]string{"gen": strconv.Itoa(g)},
			}
			_, _ = e.Client.CoreV1().ConfigMaps(ns).Update(wctx, cm, metav1.UpdateOptions{})
		}
	})
	quiesce := func() {
		stopWriter()
		writer.Wait()
	}
	defer quiesce()

	// A replica cut off: no renewal, no delete of its Lease, no release
	// written. Its owner stops owning when its validity ends (a sampler
	// checks Owns on the keys it cached, as its handlers would); the others
	// take its shards once they judged its Lease expired, and cache its
	// objects after one relist.
	killed := rs[1]
	var keys []string
	for _, o := range killed.inf.Lister().All() {
		keys = append(keys, killed.src.ShardKey(o))
	}
	sctx, stopSampling := context.WithCancel(t.Context())
	var sampler sync.WaitGroup
	sampler.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, k := range keys {
				if before := time.Now(); killed.owner.Owns(k) {
					rec.Sample(killed.name, shard.ShardOf(shard.Hash(k), shard.DefaultShards), before, time.Now())
				}
			}
			select {
			case <-sctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	defer func() { stopSampling(); sampler.Wait() }()
	killed.net.Cut()
	rs = []*leaseSharded{rs[0], rs[2]}
	// The bounds are liveness bounds, generous for a loaded machine: how
	// soon is logged, not asserted (a relist of a slice took 3.7–7.5 s at
	// load average 40).
	owned := pollUntil(t, 30*time.Second, func() error { return leaseShardedOwners(rs) })
	cached := owned + pollUntil(t, 30*time.Second, func() error { _, err := leaseShardedCaches(rs, uids, false); return err })
	t.Logf("cut off: its shards owned elsewhere %v after the cut, its objects cached elsewhere %v after (one relist: %v; lease duration %v)",
		owned.Round(time.Millisecond), cached.Round(time.Millisecond), (cached - owned).Round(time.Millisecond), k8stest.LeaseDuration)
	// The lease duration runs from the others' observation of the last
	// renewal (up to a third of it before the cut); then a delete, a get,
	// an update of the claims object and the claims. Then one relist of a
	// slice (the whole collection with the client filter) on a loaded
	// machine.
	for _, r := range rs {
		lctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		sl, err := r.src.WaitLoaded(lctx, r.inf)
		cancel()
		require.NoError(t, err, r.name)
		require.True(t, sl.Shards.Equal(r.owner.Held()), "%s: WaitLoaded returns the slice it holds", r.name)
	}
	require.True(t, killed.owner.Held().Empty(), "the cut-off replica still holds shards after its lease's validity")
	stopSampling()
	sampler.Wait()

	// A join: only the newcomer's shards move, about 1/N; the objects
	// that leave a cache reach its handler as moves, not deletions.
	whoBefore, err := leaseShardedCaches(rs, uids, false)
	require.NoError(t, err)
	heldBefore := map[string]shard.Set{}
	for _, r := range rs {
		heldBefore[r.name] = r.owner.Held()
		r.resetCounts()
	}
	rs = append(rs, startLeaseSharded(t, e, ns, "r3", rec))
	var whoAfter map[string]string
	took = pollUntil(t, 30*time.Second, func() (err error) { whoAfter, err = leaseShardedCaches(rs, uids, false); return err })
	newcomer := rs[len(rs)-1]
	movedShards := 0
	for _, r := range rs[:len(rs)-1] {
		after := r.owner.Held()
		require.True(t, after.Minus(heldBefore[r.name]).Empty(), "%s gained shards on a join", r.name)
		movedShards += heldBefore[r.name].Len() - after.Len()
	}
	require.Equal(t, newcomer.owner.Held().Len(), movedShards)
	movedObjects, movesSeen := 0, 0
	for name, now := range whoAfter {
		if whoBefore[name] != now {
			require.Equal(t, newcomer.name, now, "%s moved between old replicas", name)
			movedObjects++
		}
	}
	// Handlers are told after the cache changed: wait for them.
	pollUntil(t, 30*time.Second, func() error {
		movesSeen = 0
		for _, r := range rs[:len(rs)-1] {
			away, _ := r.counts()
			movesSeen += away
		}
		if movesSeen < movedObjects {
			return fmt.Errorf("handlers saw %d of %d moves", movesSeen, movedObjects)
		}
		return nil
	})
	for _, r := range rs[:len(rs)-1] {
		_, deleted := r.counts()
		require.Zero(t, deleted, "%s: a move reached the handler as a deletion", r.name)
	}
	t.Logf("join: %d of %d shards (1/N = %d) and %d of %d objects moved, all to the newcomer, settled %v after it started; %d moves seen by the handlers",
		movedShards, shard.DefaultShards, shard.DefaultShards/3, movedObjects, objects, took.Round(time.Millisecond), movesSeen)
	require.Equal(t, newcomer.inf.Lister().Len(), movedObjects)
	require.Equal(t, movedObjects, movesSeen, "every object that left a cache reached its handler as a move")
	require.LessOrEqual(t, movedShards, shard.DefaultShards/3+25, "a join moved more than about 1/N of the shards")
	require.InDelta(t, objects/3, movedObjects, objects/8, "a join moved more than about 1/N of the objects")

	// The writer stops: the caches hold the API's last version of every
	// object, each once; every replica received only its slices.
	quiesce()
	pollUntil(t, 30*time.Second, func() error {
		_, err := leaseShardedCaches(rs, apiVersions(t, e.Client, ns), true)
		return err
	})
	for _, r := range append(rs, killed) {
		recv, deliv := r.src.Counts()
		t.Logf("  %s: mode %v, received %d, delivered %d", r.name, r.src.Mode(), recv, deliv)
		require.Equal(t, want, r.src.Mode(), r.name)
		checkTraffic(t, r, want, objects)
	}

	handlerSamples := 0
	for _, r := range append(rs, killed) {
		r.stop()
		r.mu.Lock()
		handlerSamples += r.owned
		r.mu.Unlock()
	}
	t.Logf("%d handler calls found Owns true; the others are the cut-off replica's sampler's", handlerSamples)
	rec.Check(t)
}

// checkTraffic: with the server filter a replica received only what it
// delivered; with the client filter it received every object at least once
// and delivered less.
func checkTraffic(t *testing.T, r *leaseSharded, want k8s.FilterMode, objects int) {
	t.Helper()
	recv, deliv := r.src.Counts()
	if want == k8s.FilterServer {
		require.Equal(t, recv, deliv, "%s received objects outside its slices", r.name)
		return
	}
	require.GreaterOrEqual(t, recv, uint64(objects), "%s received less than everything", r.name)
	require.Less(t, deliv, recv, "%s delivered everything", r.name)
}

// updateMany sets data "gen" of the named ConfigMaps to gen, with 8 writers.
func updateMany(t *testing.T, c kubernetes.Interface, ns string, names []string, gen string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(names); i += 8 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: names[i], Namespace: ns}, Data: map[string]string{"gen": gen}}
				if _, err := c.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
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

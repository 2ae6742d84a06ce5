package etcd_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/shard/shardtest"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/lease"
)

// sampleOwns asks owner whether it owns key and, if it does, records that
// replica saw Owns(key) true at some instant between the clock readings
// taken before and after the call (a single reading taken before the call
// could precede an acquisition the call then saw).
func sampleOwns(rec *shardtest.Ownership, owner *shard.Owner, replica, key string) {
	before := time.Now()
	if owner.Owns(key) {
		rec.Sample(replica, shard.ShardOf(shard.HashKey(key), shard.DefaultShards), before, time.Now())
	}
}

type shardReplica struct {
	name     string
	client   *clientv3.Client
	member   *lease.Membership
	owner    *shard.Owner
	src      *etcd.Sharded[obj]
	inf      *informer.SharedInformer[string, *etcd.Object[obj]]
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// shardTTL is the replicas' lease TTL: etcd's minimum here is 1 s (1.5
// election timeouts of 50 ms, rounded up), but keepalives every TTL/3 miss
// a 1 s lease on a loaded machine under -race.
const shardTTL = 2 * time.Second

func quiet() logr.Logger { return logr.FromSlogHandler(slog.DiscardHandler) }

// startShardReplica runs a membership, an owner and a sharded informer with
// a client of its own.
func startShardReplica(t *testing.T, name, members, data string, rec *shardtest.Ownership) *shardReplica {
	t.Helper()
	c, err := srv.Client()
	require.NoError(t, err)
	return startShardReplicaWith(t, c, shardTTL, name, members, data, rec)
}

// startShardReplicaWith is startShardReplica with client c (closed by stop)
// and lease TTL ttl.
func startShardReplicaWith(t *testing.T, c *clientv3.Client, ttl time.Duration, name, members, data string, rec *shardtest.Ownership) *shardReplica {
	t.Helper()
	return startShardReplicaLW(t, c, ttl, name, members, data, rec,
		informer.ListWatchOptions{Backoff: informer.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond}})
}

// startShardReplicaLW is startShardReplicaWith with the informer's list and
// watch options lw.
func startShardReplicaLW(t *testing.T, c *clientv3.Client, ttl time.Duration, name, members, data string, rec *shardtest.Ownership, lw informer.ListWatchOptions) *shardReplica {
	t.Helper()
	r := &shardReplica{name: name, client: c}
	m, err := lease.New(lease.Options{Client: c, Prefix: members, Name: name, TTL: ttl, Logger: quiet()})
	require.NoError(t, err)
	r.member = m
	r.owner, err = shard.NewOwner(shard.OwnerOptions{Membership: m, OnChange: rec.OnChange(name), RetryInterval: 100 * time.Millisecond, Logger: quiet()})
	require.NoError(t, err)
	base, err := etcd.New(etcd.Options[obj]{Client: c, Prefix: data, StripPrefix: true, Logger: quiet()})
	require.NoError(t, err)
	r.src, err = etcd.NewSharded(etcd.ShardedOptions[obj]{Source: base, Slices: r.owner})
	require.NoError(t, err)
	r.inf, err = informer.NewSharedInformer(informer.Options[string, *etcd.Object[obj]]{
		Name: name, Source: r.src, KeyFunc: etcd.KeyFunc[obj], Logger: quiet(),
		ListWatch: lw,
	})
	require.NoError(t, err)
	see := func(key string) { sampleOwns(rec, r.owner, name, key) }
	_, err = r.inf.AddHandler(informer.HandlerFuncs[string, *etcd.Object[obj]]{
		AddFunc:    func(o *etcd.Object[obj], _ bool) { see(o.Key) },
		UpdateFunc: func(_, o *etcd.Object[obj]) { see(o.Key) },
		DeleteFunc: func(d informer.Deletion[string, *etcd.Object[obj]]) { see(d.Key) },
	}, informer.HandlerOptions{Name: "owns"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.wg.Go(func() { _ = r.owner.Run(ctx) })
	r.wg.Go(func() { _ = r.inf.Run(ctx) })
	t.Cleanup(r.stop)
	return r
}

// stop leaves gracefully (the owner releases, the lease is revoked).
func (r *shardReplica) stop() { r.stopOnce.Do(r.stopNow) }

func (r *shardReplica) stopNow() {
	r.cancel()
	r.wg.Wait()
	_ = r.client.Close()
}

// kill cuts the replica off: its client closes (no keepalive, no revoke),
// the process keeps running, so its owner must stop owning by itself when
// the lease's validity ends. It returns a function that samples the
// replica's Owns on keys every few milliseconds until called.
func (r *shardReplica) kill(rec *shardtest.Ownership, keys []string) (stopSampling func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, k := range keys {
				sampleOwns(rec, r.owner, r.name, k)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	_ = r.client.Close()
	return func() {
		cancel()
		wg.Wait()
	}
}

// settled reports whether the replicas hold and cache exactly the
// assignment of their names, and the caches hold every key of want once
// (at its mod revision, unless that is 0).
func settled(rs []*shardReplica, want map[string]int64) error {
	var names []string
	for _, r := range rs {
		names = append(names, r.name)
	}
	a, _ := shard.Assign(0, names)
	seen := map[string]string{}
	for _, r := range rs {
		mine := a.Set(r.name)
		if !r.owner.Held().Equal(mine) {
			return fmt.Errorf("%s holds %d shards, assigned %d", r.name, r.owner.Held().Len(), mine.Len())
		}
		for k, o := range r.inf.Lister().All() {
			if other, dup := seen[k]; dup {
				return fmt.Errorf("%s cached by %s and %s", k, other, r.name)
			}
			seen[k] = r.name
			if !mine.Contains(shard.HashKey(k)) {
				return fmt.Errorf("%s caches %s outside its slice", r.name, k)
			}
			if rev, ok := want[k]; !ok || (rev != 0 && rev != o.ModRevision) {
				return fmt.Errorf("%s caches %s at %d, etcd has %d", r.name, k, o.ModRevision, rev)
			}
		}
	}
	if len(seen) != len(want) {
		return fmt.Errorf("caches hold %d keys, etcd %d", len(seen), len(want))
	}
	return nil
}

// etcdState reads the data prefix: key (stripped) → mod revision.
func etcdState(t *testing.T, c *clientv3.Client, prefix string) map[string]int64 {
	t.Helper()
	resp, err := c.Get(t.Context(), prefix, clientv3.WithPrefix())
	require.NoError(t, err)
	out := make(map[string]int64, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[string(kv.Key)[len(prefix):]] = kv.ModRevision
	}
	return out
}

// waitSettled waits (up to limit) until the replicas have settled on the
// current content of etcd, and returns how long it took.
func waitSettled(t *testing.T, c *clientv3.Client, prefix string, limit time.Duration, rs ...*shardReplica) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var err error
	for time.Since(start) < limit {
		if err = settled(rs, etcdState(t, c, prefix)); err == nil {
			return time.Since(start)
		}
		<-tick.C
	}
	t.Fatalf("not settled after %v: %v", limit, err)
	return 0
}

func TestShardedEtcd(t *testing.T) {
	c := client(t)
	base := newPrefix(t)
	members, data := base+"members/", base+"data/"
	w := writer{c: c, prefix: data}
	const keys = 3000
	w.seed(t, keys, "k%04d", 0)

	// A writer keeps updating keys through every phase.
	wctx, stopWriter := context.WithCancel(t.Context())
	var writerDone sync.WaitGroup
	writerDone.Go(func() {
		rng := rand.New(rand.NewPCG(1, 5))
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for gen := 1; ; gen++ {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			_, _ = w.put(wctx, obj{Name: fmt.Sprintf("k%04d", rng.IntN(keys)), Gen: gen})
		}
	})
	quiesce := func() {
		stopWriter()
		writerDone.Wait()
	}
	defer quiesce()

	rec := shardtest.NewOwnership()
	rs := []*shardReplica{
		startShardReplica(t, "replica-0", members, data, rec),
		startShardReplica(t, "replica-1", members, data, rec),
		startShardReplica(t, "replica-2", members, data, rec),
	}
	// Settling needs the writer paused only for the final comparison; the
	// phases below check the shard movement with the writer running and
	// compare caches with etcd once it stopped.
	waitOwners := func(limit time.Duration, rs ...*shardReplica) time.Duration {
		t.Helper()
		start := time.Now()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			var names []string
			for _, r := range rs {
				names = append(names, r.name)
			}
			a, _ := shard.Assign(0, names)
			ok := true
			for _, r := range rs {
				sl, _ := r.owner.CurrentSlice()
				ok = ok && r.owner.Held().Equal(a.Set(r.name)) && sl.Shards.Equal(a.Set(r.name))
			}
			if ok {
				return time.Since(start)
			}
			require.Less(t, time.Since(start), limit, "owners not settled")
			<-tick.C
		}
	}
	allKeys := map[string]int64{}
	for i := range keys {
		allKeys[fmt.Sprintf("k%04d", i)] = 0
	}
	waitKeys := func(rs ...*shardReplica) time.Duration {
		t.Helper()
		start := time.Now()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			err := settled(rs, allKeys)
			if err == nil {
				return time.Since(start)
			}
			require.Less(t, time.Since(start), 10*time.Second, "caches not settled: %v", err)
			<-tick.C
		}
	}
	d := waitOwners(10*time.Second, rs...)
	t.Logf("3 replicas: owners settled in %v", d.Round(time.Millisecond))
	d = waitKeys(rs...)
	t.Logf("3 replicas: every key cached exactly once %v later", d.Round(time.Millisecond))
	before, _ := shard.Assign(0, []string{"replica-0", "replica-1", "replica-2"})
	for _, r := range rs {
		t.Logf("  %s: %d shards, %d ranges", r.name, r.owner.Held().Len(), len(r.owner.Held().Ranges()))
	}

	// A join moves only the newcomer's shards, about 1/4.
	rs = append(rs, startShardReplica(t, "replica-3", members, data, rec))
	d = waitOwners(10*time.Second, rs...)
	after := rs[0].owner.Assignment()
	moved := 0
	for s := range shard.DefaultShards {
		if before.Owner(s) != after.Owner(s) {
			require.Equal(t, "replica-3", after.Owner(s))
			moved++
		}
	}
	t.Logf("join: %d of 256 shards moved (1/N = 64), owners settled in %v", moved, d.Round(time.Millisecond))
	d = waitKeys(rs...)
	t.Logf("join: every key cached exactly once %v later", d.Round(time.Millisecond))
	require.InDelta(t, 64, moved, 5*8)

	// A crash: the lease is not revoked; its shards are owned elsewhere
	// after the lease expires.
	killed := rs[1]
	var sampled []string
	for i := 0; len(sampled) < 50; i++ {
		if k := fmt.Sprintf("k%04d", i); killed.owner.Owns(k) {
			sampled = append(sampled, k)
		}
	}
	killedAt := time.Now()
	stopSampling := killed.kill(rec, sampled)
	defer stopSampling()
	rs = slices.Delete(rs, 1, 2)
	waitOwners(10*time.Second, rs...)
	owned := time.Since(killedAt)
	t.Logf("crash: shards owned elsewhere %v after the kill (TTL %v)", owned.Round(time.Millisecond), shardTTL)
	require.Less(t, owned, shardTTL+2*time.Second, "within TTL plus a margin for etcd's expiry check (every 500 ms) and a claim")

	// Caches: stop the writer, then every key is cached once, at etcd's
	// revision, by the replica that owns it.
	quiesce()
	waitSettled(t, c, data, 10*time.Second, rs...)
	t.Logf("crash: caches cover every key once %v after the kill (writer stopped at %v)", time.Since(killedAt).Round(time.Millisecond), owned.Round(time.Millisecond))
	var received, delivered uint64
	for _, r := range rs {
		rc, dl := r.src.Counts()
		received += rc
		delivered += dl
	}
	t.Logf("client-side filter: %d key-values received, %d objects passed on (%.0f%%)", received, delivered, 100*float64(delivered)/float64(received))

	require.True(t, killed.owner.Held().Empty(), "a replica cut off from etcd holds nothing once its lease's validity ended")
	stopSampling()
	for _, r := range append(rs, killed) {
		r.stop()
	}
	rec.Check(t)
	// The members' keys are gone once every replica left or expired.
	require.Eventually(t, func() bool {
		resp, err := c.Get(t.Context(), members, clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 0
	}, 5*time.Second, 20*time.Millisecond)
}

package etcd_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/shard/shardtest"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// clusterShardTTL is the replicas' lease TTL in the cluster test: the
// surviving replicas' keepalives must bridge a leader election (250 ms
// election timeout) on a loaded machine, with TTL/3 between keepalives.
const clusterShardTTL = 3 * time.Second

// Three sharded replicas on a 3-process etcd cluster, each with a client
// of one member only, a writer updating keys throughout. The leader is
// SIGKILLed: the replica whose only member it was is cut off (its lease
// expires, its shards move to the other two, which keep their leases
// through the election); the member comes back, the replica registers
// again under a new lease and gets its shards back. Throughout, no key is
// owned by two replicas at once (ownership intervals from the owners'
// OnChange on this process's clock, and Owns sampled every few ms); at the
// end the caches hold every key of etcd once, at etcd's revision.
//
// The members are separate processes of $ETCD_BIN (skipped without it;
// `make test` sets it), started by etcdtest.StartCluster.
func TestShardedClusterLeaderKilled(t *testing.T) {
	c := etcdtest.StartCluster(t, 3)
	admin, err := etcdtest.NewClient(c.Endpoints()...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })
	base := "/sharded-cluster/"
	members, data := base+"members/", base+"data/"
	w := writer{c: admin, prefix: data}
	const keys = 3000
	w.seed(t, keys, "k%04d", 0)

	// A writer keeps updating keys, through the election too (failed
	// writes are dropped; the final check compares with etcd).
	wctx, stopWriter := context.WithCancel(t.Context())
	var bg sync.WaitGroup
	var acked, failed atomic.Int64
	bg.Go(func() {
		rng := rand.New(rand.NewPCG(3, 7))
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for gen := 1; ; gen++ {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(wctx, time.Second)
			_, err := w.put(ctx, obj{Name: fmt.Sprintf("k%04d", rng.IntN(keys)), Gen: gen})
			cancel()
			if err == nil {
				acked.Add(1)
			} else if wctx.Err() == nil {
				failed.Add(1)
			}
		}
	})
	quiesce := func() {
		stopWriter()
		bg.Wait()
	}
	defer quiesce()

	rec := shardtest.NewOwnership()
	rs := make([]*shardReplica, 3)
	for i, m := range c.Members() {
		cli, err := etcdtest.NewClient(m.ClientURL)
		require.NoError(t, err)
		rs[i] = startShardReplicaWith(t, cli, clusterShardTTL, fmt.Sprintf("replica-%d", i), members, data, rec)
	}
	start := time.Now()
	waitShardOwners(t, 15*time.Second, rs...)
	allKeys := map[string]int64{}
	for i := range keys {
		allKeys[fmt.Sprintf("k%04d", i)] = 0 // any revision: the writer is running
	}
	require.Eventually(t, func() bool { return settled(rs, allKeys) == nil }, 15*time.Second, 10*time.Millisecond,
		"every key cached once")
	t.Logf("3 replicas on 3 members: owners and caches settled in %v", time.Since(start).Round(time.Millisecond))

	epochs := make([]int64, len(rs))
	for i, r := range rs {
		v, _, _ := r.member.Current()
		require.NotZero(t, v.Epoch, r.name)
		epochs[i] = v.Epoch
	}

	// Sample Owns on a few keys of every shard, on every replica, every
	// few milliseconds, from before the kill to the end.
	var sampled []string
	seen := map[int]bool{}
	for i := 0; len(seen) < shard.DefaultShards; i++ {
		k := fmt.Sprintf("k%04d", i%keys)
		if i >= keys {
			k = fmt.Sprintf("x%06d", i) // shards no data key falls into
		}
		if s := shard.ShardOf(shard.HashKey(k), shard.DefaultShards); !seen[s] {
			seen[s] = true
			sampled = append(sampled, k)
		}
	}
	sctx, stopSampling := context.WithCancel(t.Context())
	var sampler sync.WaitGroup
	sampler.Go(func() {
		tick := time.NewTicker(3 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, r := range rs {
				for _, k := range sampled {
					sampleOwns(rec, r.owner, r.name, k)
				}
			}
			select {
			case <-sctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	defer func() {
		stopSampling()
		sampler.Wait()
	}()

	leader := c.Leader(t.Context())
	require.NotNil(t, leader)
	cut := -1
	for i, m := range c.Members() {
		if m == leader {
			cut = i
		}
	}
	killedAt := time.Now()
	leader.Kill()
	t.Logf("killed leader %s: %s is cut off", leader.Name, rs[cut].name)

	// The cut-off replica stops owning when its lease's validity ends; the
	// others then take its shards (they see it leave when the new leader
	// expires its lease).
	others := append(append([]*shardReplica(nil), rs[:cut]...), rs[cut+1:]...)
	waitShardOwners(t, clusterShardTTL+10*time.Second, others...)
	movedAt := time.Since(killedAt)
	// (Owns turned false when the validity ended, before etcd could expire
	// the lease; Held follows when the owner's timer runs.)
	require.Eventually(t, func() bool { return rs[cut].owner.Held().Empty() }, 2*time.Second, 5*time.Millisecond, "the cut-off replica holds nothing")
	t.Logf("the cut-off replica's shards owned by the others %v after the kill (TTL %v)", movedAt.Round(time.Millisecond), clusterShardTTL)

	// The member comes back: the replica registers again and gets its
	// shards back; every replica converges with the writer still running.
	c.Restart(leader)
	waitShardOwners(t, 20*time.Second, rs...)
	t.Logf("%s registered again and holds its shards %v after the kill", rs[cut].name, time.Since(killedAt).Round(time.Millisecond))
	quiesce()
	waitSettled(t, admin, data, 15*time.Second, rs...)
	t.Logf("caches cover every key once, at etcd's revision, %v after the kill; writer: %d writes acknowledged, %d failed",
		time.Since(killedAt).Round(time.Millisecond), acked.Load(), failed.Load())

	for i, r := range rs {
		v, _, _ := r.member.Current()
		require.NotZero(t, v.Epoch, r.name)
		if i == cut {
			require.NotEqual(t, epochs[i], v.Epoch, "%s registered again under a new lease", r.name)
		} else {
			require.Equal(t, epochs[i], v.Epoch, "%s kept its lease through the election", r.name)
		}
	}
	var received, delivered uint64
	for _, r := range rs {
		rc, dl := r.src.Counts()
		received += rc
		delivered += dl
	}
	t.Logf("client-side filter: %d key-values received, %d objects passed on (%.0f%%)", received, delivered, 100*float64(delivered)/float64(received))
	stopSampling()
	sampler.Wait()
	for _, r := range rs {
		r.stop()
	}
	rec.Check(t)
}

// waitShardOwners waits until each replica holds, and caches the slice of,
// exactly its share of the assignment of their names.
func waitShardOwners(t *testing.T, limit time.Duration, rs ...*shardReplica) {
	t.Helper()
	var names []string
	for _, r := range rs {
		names = append(names, r.name)
	}
	a, _ := shard.Assign(0, names)
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ok := true
		for _, r := range rs {
			sl, _ := r.owner.CurrentSlice()
			ok = ok && r.owner.Held().Equal(a.Set(r.name)) && sl.Shards.Equal(a.Set(r.name))
		}
		if ok {
			return
		}
		if time.Since(start) > limit {
			for _, r := range rs {
				sl, _ := r.owner.CurrentSlice()
				t.Logf("%s holds %d shards, caches %d, assigned %d", r.name, r.owner.Held().Len(), sl.Shards.Len(), a.Set(r.name).Len())
			}
			t.Fatalf("owners not settled within %v", limit)
		}
		<-tick.C
	}
}

package etcd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// BenchmarkSharded: what one replica of a sharded informer costs when N
// replicas (1, 2, 4) split 100k objects of about 3.4 KB of JSON each
// (a svc with a last-applied-configuration annotation, as kubectl apply
// leaves), with the etcd backend's client-side filter.
//
// The replicas run one after the other, each alone in the process, with a
// client of its own and the slice the rendezvous assignment gives its name
// among the N (so the slices are not exactly 1/N): since the filter is
// client-side, what a replica costs does not depend on the others running.
// Each replica syncs (a streaming list, the informer's default), then
// follows 10k updates of distinct keys (128 per transaction, written as
// fast as etcd takes them by a writer in the same process, values encoded
// beforehand). With $ETCD_BIN set, etcd is a separate process, so the
// process's CPU and heap are the replica's (and the writer's); without it,
// an embedded etcd, whose CPU is counted too.
//
// Metrics, means over the N replicas (medians over the ops):
//
//	heap-MB/replica   live heap after the sync (the cache), above the heap before it
//	peak-MB/replica   peak bytes in heap objects during the sync (garbage included)
//	sync-s/replica    wall time to a synced informer
//	sync-cpu-s/replica  process CPU during the sync
//	list-recv/replica, list-dlvr/replica  objects received from etcd and passed to the informer during the sync
//	watch-recv/replica, watch-dlvr/replica  watch events received, passed on (of the 10k updates)
//	watch-cpu-ms/replica  process CPU while following the updates (the writer's included)
//	watch-p99-ms      from sending a write to its event reaching the handler (delivered events; max over the replicas)
//
// ns/op is the time of the whole op (every replica) and means nothing by
// itself.
func BenchmarkSharded(b *testing.B) {
	const n = 100_000
	endpoint := benchEtcd(b)
	c, err := etcdtest.NewClient(endpoint)
	require.NoError(b, err)
	b.Cleanup(func() { _ = c.Close() })
	const prefix = "/bench/sharded/"
	size := loadBigSvcs(b, c, prefix, n, 1)
	b.Logf("%d values of %.1f KB of JSON on average loaded", n, float64(size)/float64(n)/1024)
	// One read of everything first, so that the first replica does not
	// pay for etcd's first touch of its data.
	for from := prefix; ; {
		resp, err := c.Get(context.Background(), from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix)), clientv3.WithLimit(1000))
		require.NoError(b, err)
		if !resp.More {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	for _, replicas := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			var m medians
			gen := int64(1)
			for b.Loop() {
				var names []string
				for i := range replicas {
					names = append(names, fmt.Sprintf("replica-%d", i))
				}
				a, err := shard.Assign(0, names)
				require.NoError(b, err)
				var sum shardedRun
				var p99 time.Duration
				for _, name := range names {
					gen++
					r := runShardedReplica(b, endpoint, c, prefix, n, replicas, a.Set(name), gen)
					sum.add(r)
					p99 = max(p99, r.p99)
				}
				k := float64(replicas)
				const mb = 1 << 20
				m.add("heap-MB/replica", float64(sum.kept)/mb/k)
				m.add("peak-MB/replica", float64(sum.peak)/mb/k)
				m.add("sync-s/replica", sum.sync.Seconds()/k)
				m.add("sync-cpu-s/replica", sum.syncCPU.Seconds()/k)
				m.add("list-recv/replica", float64(sum.listRecv)/k)
				m.add("list-dlvr/replica", float64(sum.listDlvr)/k)
				m.add("watch-recv/replica", float64(sum.watchRecv)/k)
				m.add("watch-dlvr/replica", float64(sum.watchDlvr)/k)
				m.add("watch-cpu-ms/replica", float64(sum.watchCPU.Milliseconds())/k)
				m.add("watch-p99-ms", float64(p99)/1e6)
			}
			m.report(b)
		})
	}
}

// benchEtcd starts etcd for a benchmark: a separate process of $ETCD_BIN if
// set, else an embedded member. It returns the client URL.
func benchEtcd(b *testing.B) string {
	if os.Getenv(etcdtest.BinaryEnv) != "" {
		b.Logf("etcd: a separate process (%s)", etcdtest.BinaryEnv)
		return etcdtest.StartCluster(b, 1).Endpoints()[0]
	}
	b.Logf("etcd: embedded (set %s for a separate process)", etcdtest.BinaryEnv)
	return etcdtest.New(b, etcdtest.Config{}).Endpoint()
}

// bigSvc is the i-th value of BenchmarkSharded: newSvc with the
// annotations kubectl apply and a typical operator leave.
func bigSvc(i int, gen int64) svc {
	v := newSvc(i, gen)
	last, _ := json.Marshal(v)
	v.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = string(last)
	v.Annotations["example.com/description"] = strings.Repeat(fmt.Sprintf("service %d of team %s, owned by the platform group; ", i, v.Namespace), 16)
	return v
}

// loadBigSvcs writes bigSvc values [0, n) at generation gen, 128 per
// transaction, and returns their total size.
func loadBigSvcs(tb testing.TB, c *clientv3.Client, prefix string, n int, gen int64) int {
	tb.Helper()
	size := 0
	for i := 0; i < n; i += 128 {
		ops := make([]clientv3.Op, 0, 128)
		for j := i; j < min(i+128, n); j++ {
			v, _ := json.Marshal(bigSvc(j, gen))
			size += len(v)
			ops = append(ops, clientv3.OpPut(svcKey(prefix, j), string(v)))
		}
		_, err := c.Txn(context.Background()).Then(ops...).Commit()
		require.NoError(tb, err)
	}
	return size
}

// staticSlices serves one slice forever.
type staticSlices struct{ set shard.Set }

func (s staticSlices) Hash(key string) uint64 { return shard.HashKey(key) }

func (s staticSlices) Slice(context.Context) (shard.Slice, <-chan struct{}, error) {
	return shard.Slice{Shards: s.set, Gen: 1}, nil, nil
}

// shardedRun is what one replica cost.
type shardedRun struct {
	kept, peak                               uint64
	sync, syncCPU, watchCPU                  time.Duration
	listRecv, listDlvr, watchRecv, watchDlvr uint64
	p99                                      time.Duration
}

func (s *shardedRun) add(r shardedRun) {
	s.kept += r.kept
	s.peak += r.peak
	s.sync += r.sync
	s.syncCPU += r.syncCPU
	s.watchCPU += r.watchCPU
	s.listRecv += r.listRecv
	s.listDlvr += r.listDlvr
	s.watchRecv += r.watchRecv
	s.watchDlvr += r.watchDlvr
}

// updates is the number of distinct keys each replica's watch phase updates.
const updates = 10_000

// runShardedReplica syncs a replica serving set, then has writer update
// keys to generation gen while it follows, and returns what it cost.
//
// Its CPU is labelled for profiles: replicas=N and phase=encode (the
// updates, before anything is measured), replica (the replica's goroutines)
// or write (the writer's calls): pprof -tagfocus 'phase=replica'.
func runShardedReplica(b *testing.B, endpoint string, writer *clientv3.Client, prefix string, n, replicas int, set shard.Set, gen int64) shardedRun {
	label := func(phase string) {
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("replicas", fmt.Sprint(replicas), "phase", phase)))
	}
	defer pprof.SetGoroutineLabels(context.Background())
	label("encode")
	// The updates, encoded before anything is measured: every
	// (n/updates)-th key, in a random order.
	keys := rand.Perm(updates)
	var txns [][]clientv3.Op
	wantDlvr := 0
	for i := 0; i < updates; i += 128 {
		ops := make([]clientv3.Op, 0, 128)
		for _, k := range keys[i:min(i+128, updates)] {
			j := k * (n / updates)
			v, _ := json.Marshal(bigSvc(j, gen))
			ops = append(ops, clientv3.OpPut(svcKey(prefix, j), string(v)))
			if set.Contains(shard.HashKey(svcKey("", j))) {
				wantDlvr++
			}
		}
		txns = append(txns, ops)
	}
	label("replica")

	cli, err := etcdtest.NewClient(endpoint)
	require.NoError(b, err)
	defer cli.Close()
	base, err := etcd.New(etcd.Options[svc]{Client: cli, Prefix: prefix, StripPrefix: true, Logger: logr.Discard()})
	require.NoError(b, err)
	src, err := etcd.NewSharded(etcd.ShardedOptions[svc]{Source: base, Slices: staticSlices{set}})
	require.NoError(b, err)
	inf, err := informer.NewSharedInformer(informer.Options[string, *etcd.Object[svc]]{
		Source: src, KeyFunc: etcd.KeyFunc[svc], Logger: logr.Discard(),
	})
	require.NoError(b, err)
	// The handler records when each update of generation gen arrives.
	var mu sync.Mutex
	type arrival struct {
		rev int64 // the transaction's: its puts share it
		at  time.Time
	}
	arrived := make(map[string]arrival, wantDlvr) // key → arrival
	done := make(chan struct{})
	_, err = inf.AddHandler(informer.HandlerFuncs[string, *etcd.Object[svc]]{
		UpdateFunc: func(_, o *etcd.Object[svc]) {
			if o.Value.Generation != gen {
				return
			}
			at := time.Now()
			mu.Lock()
			arrived[o.Key] = arrival{o.ModRevision, at}
			if len(arrived) == wantDlvr {
				close(done)
			}
			mu.Unlock()
		},
	}, informer.HandlerOptions{Name: "bench"})
	require.NoError(b, err)

	var r shardedRun
	before := heapAfterGC()
	hp := startHeapPeak()
	cpu0, t0 := processCPU(), time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { _ = inf.Run(ctx) })
	require.NoError(b, informer.WaitForSync(ctx, inf))
	r.sync, r.syncCPU = time.Since(t0), processCPU()-cpu0
	peak, _ := hp.stop()
	r.peak = peak - min(peak, before)
	kept := heapAfterGC()
	r.kept = kept - min(kept, before)
	r.listRecv, r.listDlvr = src.Counts()
	require.Equal(b, int(r.listDlvr), inf.Lister().Len())

	runtime.GC()
	cpu0 = processCPU()
	sent := make(map[int64]time.Time, len(txns))
	label("write")
	for _, ops := range txns {
		ts := time.Now()
		resp, err := writer.Txn(context.Background()).Then(ops...).Commit()
		require.NoError(b, err)
		sent[resp.Header.Revision] = ts
	}
	if wantDlvr > 0 {
		select {
		case <-done:
		case <-time.After(time.Minute):
			b.Fatalf("the replica's handler saw %d of its %d updates within a minute", len(arrived), wantDlvr)
		}
	}
	// The events of other slices are received without being waited for:
	// wait until all were.
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(time.Minute); ; <-tick.C {
		if rc, _ := src.Counts(); rc-r.listRecv >= updates {
			break
		}
		require.True(b, time.Now().Before(deadline), "the replica did not receive every update within a minute")
	}
	r.watchCPU = processCPU() - cpu0
	rc, dl := src.Counts()
	r.watchRecv, r.watchDlvr = rc-r.listRecv, dl-r.listDlvr
	mu.Lock()
	lat := make([]time.Duration, 0, len(arrived))
	for _, a := range arrived {
		lat = append(lat, a.at.Sub(sent[a.rev]))
	}
	mu.Unlock()
	r.p99 = quantile(lat, 0.99)
	return r
}

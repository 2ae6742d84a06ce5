package etcd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/mirror"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// The benchmarks compare the source, inside a SharedInformer ("ginformer"),
// with the simplest peer: etcd's mirror.Syncer whose responses are decoded
// with encoding/json into a map ("mirror"; it fetches the next page while
// the consumer decodes), and a plain paged Get (1000 keys per page) decoded
// the same way ("paged"). The "source" contender is the source alone, its
// events put in a map, to tell the source's share from the informer's.
// Every contender runs in the same process against the same embedded etcd,
// one after the other inside each op (the order alternates), so the ratios
// compare runs made under the same machine load. Values are [svc]s of about
// 0.9 KB of JSON.

// GINFORMER_BENCH_ONLY="ginformer" (or another contender's name) runs one
// contender of BenchmarkSync and BenchmarkWatch, to profile it alone.

// BenchmarkSync: time to a complete typed cache of N keys. One op syncs
// each contender once; the metrics are per contender, medians over the ops:
//
//	<c>-s          wall time from start to a complete cache
//	<c>-cpu-s      process CPU over that time (etcd's included: it is in-process)
//	<c>-peak-MB    peak bytes in heap objects during the sync (uncollected garbage included: see BenchmarkSyncPeak)
//	<c>-live-MB    peak live heap as marked by the GC during the sync
//	<c>-kept-MB    live heap after the sync (the cache), all above the heap before it
//	ginformer/mirror  the median over the ops of the ratio of the wall times
//
// ns/op is the sum over the contenders and means nothing by itself. The
// sizes are sub-benchmarks: -bench 'Sync/keys=100k' runs one (the 1M one
// loads 0.9 GB into etcd and takes minutes: mirror's paged reads make etcd
// count the rest of the range on every page).
func BenchmarkSync(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run("keys="+kfmt(n), func(b *testing.B) { benchSync(b, n) })
	}
}

// syncer is one contender of BenchmarkSync: it builds a complete cache of
// the prefix and returns something that holds it.
type syncer struct {
	name string
	sync func(b *testing.B, c *clientv3.Client, prefix string, n int) (cache any, stop func())
}

var syncers = []syncer{
	{"mirror", syncMirror},
	{"paged", syncPaged},
	{"ginformer", syncInformer},
	{"source", syncSource},
}

func benchSync(b *testing.B, n int) {
	s := etcdtest.New(b, etcdtest.Config{})
	c := s.NewTestClient(b)
	const prefix = "/bench/sync/"
	loadSvcs(b, c, prefix, 0, n, 1)

	syncers := only(syncers, func(s syncer) string { return s.name })
	var m medians
	b.ReportAllocs()
	op := 0
	for b.Loop() {
		wall := make(map[string]float64)
		for k := range syncers {
			sc := syncers[(k+op)%len(syncers)] // alternate who goes first
			base := heapAfterGC()
			hp := startHeapPeak()
			cpu0, t0 := processCPU(), time.Now()
			cache, stop := sc.sync(b, c, prefix, n)
			wall[sc.name] = time.Since(t0).Seconds()
			cpu := processCPU() - cpu0
			peak, live := hp.stop()
			kept := heapAfterGC()
			runtime.KeepAlive(cache)
			stop()
			const mb = 1 << 20
			m.add(sc.name+"-s", wall[sc.name])
			m.add(sc.name+"-cpu-s", cpu.Seconds())
			m.add(sc.name+"-peak-MB", (float64(peak)-float64(base))/mb)
			m.add(sc.name+"-live-MB", (float64(live)-float64(base))/mb)
			m.add(sc.name+"-kept-MB", (float64(kept)-float64(base))/mb)
		}
		if wall["mirror"] > 0 && wall["ginformer"] > 0 {
			m.add("ginformer/mirror", wall["ginformer"]/wall["mirror"])
		}
		op++
	}
	m.report(b)
}

// BenchmarkSyncPeak: the most data a sync of 100k keys holds at once. One
// op syncs each contender once with the GC at GOGC=5, so that the heap
// never holds more than about 5% of garbage and its peak is (within that)
// the largest live heap during the sync; at the default GOGC=100 the peak
// of BenchmarkSync also counts up to as much garbage as live data. The
// metrics, medians over the ops:
//
//	<c>-tight-peak-MB    that peak, above the heap before the sync
//	<c>-tight-peak/kept  that peak over the live heap after the sync
func BenchmarkSyncPeak(b *testing.B) {
	const n = 100_000
	s := etcdtest.New(b, etcdtest.Config{})
	c := s.NewTestClient(b)
	const prefix = "/bench/sync/"
	loadSvcs(b, c, prefix, 0, n, 1)
	syncers := only(syncers, func(s syncer) string { return s.name })
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	var m medians
	op := 0
	for b.Loop() {
		for k := range syncers {
			sc := syncers[(k+op)%len(syncers)]
			base := heapAfterGC()
			hp := startHeapPeak()
			cache, stop := sc.sync(b, c, prefix, n)
			peak, _ := hp.stop()
			kept := heapAfterGC()
			runtime.KeepAlive(cache)
			stop()
			m.add(sc.name+"-tight-peak-MB", (float64(peak)-float64(base))/(1<<20))
			m.add(sc.name+"-tight-peak/kept", (float64(peak)-float64(base))/(float64(kept)-float64(base)))
		}
		op++
	}
	m.report(b)
}

// only keeps the contender GINFORMER_BENCH_ONLY names, or all.
func only[C any](cs []C, name func(C) string) []C {
	o := os.Getenv("GINFORMER_BENCH_ONLY")
	if o == "" {
		return cs
	}
	var out []C
	for _, c := range cs {
		if name(c) == o {
			out = append(out, c)
		}
	}
	return out
}

// syncMirror: mirror.Syncer's SyncBase, each value decoded into a map.
func syncMirror(b *testing.B, c *clientv3.Client, prefix string, n int) (any, func()) {
	cache := make(map[string]*svc)
	rc, errc := mirror.NewSyncer(c, prefix, 0).SyncBase(context.Background())
	for resp := range rc {
		for _, kv := range resp.Kvs {
			v := new(svc)
			if err := json.Unmarshal(kv.Value, v); err != nil {
				b.Fatal(err)
			}
			cache[string(kv.Key)] = v
		}
	}
	require.NoError(b, <-errc)
	require.Len(b, cache, n)
	return cache, func() {}
}

// syncPaged: Get 1000 keys at a time at the first page's revision, each
// page decoded before the next is fetched.
func syncPaged(b *testing.B, c *clientv3.Client, prefix string, n int) (any, func()) {
	ctx := context.Background()
	cache := make(map[string]*svc)
	key, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
	var rev int64
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(1000)}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := c.Get(ctx, key, opts...)
		require.NoError(b, err)
		rev = resp.Header.Revision
		for _, kv := range resp.Kvs {
			v := new(svc)
			if err := json.Unmarshal(kv.Value, v); err != nil {
				b.Fatal(err)
			}
			cache[string(kv.Key)] = v
		}
		if !resp.More {
			break
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	require.Len(b, cache, n)
	return cache, func() {}
}

// syncSource: the source's streaming list, without an informer, into a
// map (what the informer starts from).
func syncSource(b *testing.B, c *clientv3.Client, prefix string, n int) (any, func()) {
	src, err := etcd.New(etcd.Options[svc]{Client: c, Prefix: prefix})
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := src.Watch(ctx, informer.WatchOptions{SendInitialEvents: true})
	require.NoError(b, err)
	defer w.Stop()
	cache := make(map[string]*etcd.Object[svc])
	for ev := range w.Events() {
		if ev.Type == informer.EventBookmark && ev.InitialEventsEnd {
			break
		}
		require.Equal(b, informer.EventAdded, ev.Type, ev.Err)
		cache[ev.Object.Key] = ev.Object
	}
	require.Len(b, cache, n)
	return cache, func() {}
}

// syncInformer: a new SharedInformer with default options, until it has
// synced.
func syncInformer(b *testing.B, c *clientv3.Client, prefix string, n int) (any, func()) {
	src, err := etcd.New(etcd.Options[svc]{Client: c, Prefix: prefix})
	require.NoError(b, err)
	inf, err := informer.NewSharedInformer(informer.Options[string, *etcd.Object[svc]]{
		Source: src, KeyFunc: etcd.KeyFunc[svc], Logger: logr.Discard(),
	})
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	require.NoError(b, informer.WaitForSync(ctx, inf))
	require.Equal(b, n, inf.Lister().Len())
	return inf, func() { cancel(); wg.Wait() }
}

// BenchmarkWatch: one watcher follows 20k updates of 20k existing keys
// (128 puts per transaction, written as fast as etcd takes them). Each
// contender has its own prefix, watched from before the first op: mirror
// and the source open a watch at the revision before each op's writes, the
// informer runs throughout (synced, its handler idle, before the first op). One op
// writes the 20k updates once per contender, in alternating order; the
// metrics are per contender, medians over the ops:
//
//	<c>-events/s   events applied to the cache per second, from the first write to the last event
//	<c>-p50-ms, <c>-p99-ms  from sending a write to its event reaching the cache (the handler)
//	<c>-lag-ms     from the last write's response to its event reaching the cache
//	<c>-cpu-us/ev  process CPU per event (etcd's and the writer's included)
//	ginformer/mirror  the median over the ops of the ratio of the event rates
func BenchmarkWatch(b *testing.B) {
	const n = 20_000
	s := etcdtest.New(b, etcdtest.Config{})
	c := s.NewTestClient(b)

	type watcher struct {
		name string
		// open starts watching prefix; round(rev, gen) expects the
		// updates to generation gen, written after revision rev, and
		// returns a function that waits for all of them, returning each
		// event's revision and arrival time.
		open func(b *testing.B, c *clientv3.Client, prefix string, n int) (round func(rev, gen int64) func() ([]int64, []time.Time))
	}
	watchers := only([]watcher{{"mirror", watchMirror}, {"ginformer", watchInformer}, {"source", watchSource}}, func(w watcher) string { return w.name })
	rounds := make([]func(rev, gen int64) func() ([]int64, []time.Time), len(watchers))
	prefixes := make([]string, len(watchers))
	for i, w := range watchers {
		prefixes[i] = "/bench/watch/" + w.name + "/"
		loadSvcs(b, c, prefixes[i], 0, n, 1)
		// The contender's goroutines carry its name as a profile label
		// (pprof -tagfocus contender=NAME), inherited by those they start.
		pprof.Do(context.Background(), pprof.Labels("contender", w.name), func(context.Context) {
			rounds[i] = w.open(b, c, prefixes[i], n)
		})
	}
	gen := int64(1)
	var m medians
	op := 0
	for b.Loop() {
		gen++
		rate := make(map[string]float64)
		for k := range watchers {
			i := (k + op) % len(watchers)
			resp, err := c.Get(context.Background(), prefixes[i])
			require.NoError(b, err)
			var wait func() ([]int64, []time.Time)
			pprof.Do(context.Background(), pprof.Labels("contender", watchers[i].name), func(context.Context) {
				wait = rounds[i](resp.Header.Revision, gen)
			})
			runtime.GC() // neither starts with the other's garbage
			cpu0, t0 := processCPU(), time.Now()
			sent := map[int64]time.Time{} // revision → when its transaction was sent
			var lastDone time.Time
			for j := 0; j < n; j += 128 {
				ops := make([]clientv3.Op, 0, 128)
				for k := j; k < min(j+128, n); k++ {
					v, _ := json.Marshal(newSvc(k, gen))
					ops = append(ops, clientv3.OpPut(svcKey(prefixes[i], k), string(v)))
				}
				ts := time.Now()
				resp, err := c.Txn(context.Background()).Then(ops...).Commit()
				require.NoError(b, err)
				sent[resp.Header.Revision] = ts
				lastDone = time.Now()
			}
			revs, at := wait()
			cpu := processCPU() - cpu0
			var last time.Time
			lat := make([]time.Duration, len(revs))
			for j, r := range revs {
				lat[j] = at[j].Sub(sent[r])
				if at[j].After(last) {
					last = at[j]
				}
			}
			name := watchers[i].name
			rate[name] = float64(n) / last.Sub(t0).Seconds()
			m.add(name+"-events/s", rate[name])
			m.add(name+"-p50-ms", float64(quantile(lat, 0.5))/1e6)
			m.add(name+"-p99-ms", float64(quantile(lat, 0.99))/1e6)
			m.add(name+"-lag-ms", float64(max(0, last.Sub(lastDone)))/1e6)
			m.add(name+"-cpu-us/ev", float64(cpu.Microseconds())/float64(n))
		}
		if rate["mirror"] > 0 && rate["ginformer"] > 0 {
			m.add("ginformer/mirror", rate["ginformer"]/rate["mirror"])
		}
		op++
	}
	m.report(b)
}

// medians collects one sample per op for each metric and reports the
// medians: robust to the stalls a shared machine inflicts on a few ops.
type medians struct {
	names   []string
	samples map[string][]float64
}

func (m *medians) add(name string, v float64) {
	if m.samples == nil {
		m.samples = make(map[string][]float64)
	}
	if _, ok := m.samples[name]; !ok {
		m.names = append(m.names, name)
	}
	m.samples[name] = append(m.samples[name], v)
}

func (m *medians) report(b *testing.B) {
	for _, name := range m.names {
		xs := m.samples[name]
		slices.Sort(xs)
		med := xs[len(xs)/2]
		if len(xs)%2 == 0 {
			med = (xs[len(xs)/2-1] + med) / 2
		}
		b.ReportMetric(med, name)
	}
}

// watchMirror: each round, mirror.Syncer's SyncUpdates from rev, each
// value decoded into a map.
func watchMirror(b *testing.B, c *clientv3.Client, prefix string, n int) func(rev, gen int64) func() ([]int64, []time.Time) {
	cache := make(map[string]*svc)
	return func(rev, gen int64) func() ([]int64, []time.Time) {
		ctx, cancel := context.WithCancel(context.Background())
		wch := mirror.NewSyncer(c, prefix, rev).SyncUpdates(ctx)
		revs, at := make([]int64, 0, n), make([]time.Time, 0, n)
		done := make(chan error, 1)
		go func() {
			for resp := range wch {
				for _, ev := range resp.Events {
					v := new(svc)
					if err := json.Unmarshal(ev.Kv.Value, v); err != nil {
						done <- err
						return
					}
					cache[string(ev.Kv.Key)] = v
					revs, at = append(revs, ev.Kv.ModRevision), append(at, time.Now())
					if v.Generation == gen && len(revs) == n {
						done <- nil
						return
					}
				}
			}
			done <- fmt.Errorf("watch ended after %d events", len(revs))
		}()
		return func() ([]int64, []time.Time) {
			defer cancel()
			select {
			case err := <-done:
				require.NoError(b, err)
			case <-time.After(2 * time.Minute):
				b.Fatal("events missing")
			}
			return revs, at
		}
	}
}

// watchInformer: a SharedInformer (default options) running for the whole
// benchmark, whose handler records the updates of each round.
func watchInformer(b *testing.B, c *clientv3.Client, prefix string, n int) func(rev, gen int64) func() ([]int64, []time.Time) {
	src, err := etcd.New(etcd.Options[svc]{Client: c, Prefix: prefix})
	require.NoError(b, err)
	inf, err := informer.NewSharedInformer(informer.Options[string, *etcd.Object[svc]]{
		Source: src, KeyFunc: etcd.KeyFunc[svc], Logger: logr.Discard(),
	})
	require.NoError(b, err)
	// mu guards the round's fields below.
	var mu sync.Mutex
	var (
		gen     int64
		revs    []int64
		at      []time.Time
		done    chan struct{}
		initial = make(chan struct{})
		adds    int
	)
	_, err = inf.AddHandler(informer.HandlerFuncs[string, *etcd.Object[svc]]{
		AddFunc: func(*etcd.Object[svc], bool) {
			if adds++; adds == n {
				close(initial)
			}
		},
		UpdateFunc: func(_, o *etcd.Object[svc]) {
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if o.Value.Generation != gen || len(revs) == n {
				return
			}
			revs, at = append(revs, o.ModRevision), append(at, now)
			if len(revs) == n {
				close(done)
			}
		},
	}, informer.HandlerOptions{Name: "bench"})
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	b.Cleanup(func() { cancel(); wg.Wait() })
	select { // the handler has seen the initial list: only the updates remain
	case <-initial:
	case <-time.After(2 * time.Minute):
		b.Fatal("initial list missing")
	}
	return func(_, g int64) func() ([]int64, []time.Time) {
		mu.Lock()
		gen, revs, at, done = g, make([]int64, 0, n), make([]time.Time, 0, n), make(chan struct{})
		d := done
		mu.Unlock()
		return func() ([]int64, []time.Time) {
			select {
			case <-d:
			case <-time.After(2 * time.Minute):
				b.Fatal("events missing")
			}
			mu.Lock()
			defer mu.Unlock()
			return revs, at
		}
	}
}

// watchSource: each round, the source's own watch from rev (no informer).
func watchSource(b *testing.B, c *clientv3.Client, prefix string, n int) func(rev, gen int64) func() ([]int64, []time.Time) {
	src, err := etcd.New(etcd.Options[svc]{Client: c, Prefix: prefix})
	require.NoError(b, err)
	return func(rev, gen int64) func() ([]int64, []time.Time) {
		w, err := src.Watch(context.Background(), informer.WatchOptions{Version: strconv.FormatInt(rev, 10)})
		require.NoError(b, err)
		revs, at := make([]int64, 0, n), make([]time.Time, 0, n)
		done := make(chan error, 1)
		go func() {
			for ev := range w.Events() {
				if ev.Type != informer.EventModified {
					continue
				}
				revs, at = append(revs, ev.Object.ModRevision), append(at, time.Now())
				if ev.Object.Value.Generation == gen && len(revs) == n {
					done <- nil
					return
				}
			}
			done <- fmt.Errorf("watch ended after %d events", len(revs))
		}()
		return func() ([]int64, []time.Time) {
			defer w.Stop()
			select {
			case err := <-done:
				require.NoError(b, err)
			case <-time.After(2 * time.Minute):
				b.Fatal("events missing")
			}
			return revs, at
		}
	}
}

package etcd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/mirror"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// BenchmarkWatchPath: the watcher's own CPU per event, without etcd and the
// writer that share the process in BenchmarkWatch (and whose CPU, 3/4 of
// the process's there, hides the watcher's). A replaying Watcher hands the
// client's watch responses, 128 updates of 1024 keys per response as one
// transaction makes, built from values encoded beforehand; the consumers:
//
//	drain      receives the responses and does nothing: the replay's own cost
//	mirror     mirror.Syncer's SyncUpdates, each value json.Unmarshal'ed into a map
//	source     the source's watch alone, its events put in a map
//	ginformer  a SharedInformer with default options (synced from etcd first), its handler counting updates
//
// One op is one event; the metrics are cpu-ns/ev (process CPU per event)
// and the allocations per event. The sub-benchmarks run one after the
// other, so on a shared machine compare them within one run.
func BenchmarkWatchPath(b *testing.B) {
	const keys = 1024
	s := etcdtest.New(b, etcdtest.Config{})
	c := s.NewTestClient(b)
	const prefix = "/bench/path/"
	listRev := loadSvcs(b, c, prefix, 0, keys, 1)
	rp := replayValues{keys: make([][]byte, keys), vals: make([][]byte, keys)}
	for k := range keys {
		rp.keys[k] = []byte(svcKey(prefix, k))
		rp.vals[k], _ = json.Marshal(newSvc(k, 2))
	}
	type consumer struct {
		name string
		// start consumes the events of w from rev on and returns a function
		// that waits until n of them were applied.
		start func(b *testing.B, c *clientv3.Client, rev int64, n int) (wait func())
	}
	for _, cs := range []consumer{
		{"drain", func(b *testing.B, c *clientv3.Client, rev int64, n int) func() {
			return consume(b, c.Watch(context.Background(), prefix), n, func(*clientv3.Event) {})
		}},
		{"mirror", func(b *testing.B, c *clientv3.Client, rev int64, n int) func() {
			cache := make(map[string]*svc)
			return consume(b, mirror.NewSyncer(c, prefix, rev).SyncUpdates(context.Background()), n, func(ev *clientv3.Event) {
				v := new(svc)
				if err := json.Unmarshal(ev.Kv.Value, v); err != nil {
					panic(err)
				}
				cache[string(ev.Kv.Key)] = v
			})
		}},
		{"source", func(b *testing.B, c *clientv3.Client, rev int64, n int) func() {
			src, err := etcd.New(etcd.Options[svc]{Client: c, Prefix: prefix})
			require.NoError(b, err)
			ctx, cancel := context.WithCancel(context.Background())
			w, err := src.Watch(ctx, informer.WatchOptions{Version: fmt.Sprint(rev)})
			require.NoError(b, err)
			done := make(chan struct{})
			go func() {
				defer close(done)
				cache := make(map[string]*etcd.Object[svc])
				seen := 0
				for ev := range w.Events() {
					if ev.Type == informer.EventModified {
						cache[ev.Object.Key] = ev.Object
						if seen++; seen == n {
							return
						}
					}
				}
			}()
			return func() { <-done; cancel(); w.Stop() }
		}},
		{"ginformer", func(b *testing.B, c *clientv3.Client, rev int64, n int) func() {
			src, err := etcd.New(etcd.Options[svc]{Client: c, Prefix: prefix})
			require.NoError(b, err)
			inf, err := informer.NewSharedInformer(informer.Options[string, *etcd.Object[svc]]{
				Source: src, KeyFunc: etcd.KeyFunc[svc], Logger: logr.Discard(),
			})
			require.NoError(b, err)
			var seen atomic.Int64
			done := make(chan struct{})
			_, err = inf.AddHandler(informer.HandlerFuncs[string, *etcd.Object[svc]]{
				UpdateFunc: func(_, o *etcd.Object[svc]) {
					if seen.Add(1) == int64(n) {
						close(done)
					}
				},
			}, informer.HandlerOptions{Name: "bench"})
			require.NoError(b, err)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { _ = inf.Run(ctx) })
			require.NoError(b, informer.WaitForSync(ctx, inf))
			return func() {
				select {
				case <-done:
				case <-time.After(time.Minute):
					b.Fatalf("%d of %d updates", seen.Load(), n)
				}
				cancel()
				wg.Wait()
			}
		}},
	} {
		b.Run(cs.name, func(b *testing.B) {
			n := (b.N + 127) / 128 * 128
			rc := s.NewTestClient(b) // KV from etcd (the informer's list), the watch replayed
			rw := &replayWatcher{ch: make(chan clientv3.WatchResponse, 16)}
			rw.rev.Store(listRev)
			rc.Watcher = rw
			wait := cs.start(b, rc, listRev, n)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			rw.feed(rp, n)
			wait()
			b.StopTimer()
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(n), "cpu-ns/ev")
		})
	}
}

// replayValues are the keys and encoded values a replay cycles through.
type replayValues struct{ keys, vals [][]byte }

// replayWatcher is a clientv3.Watcher whose every watch is one channel of
// responses that feed writes, answering progress requests at the last
// revision fed. Only Watch, RequestProgress and Close are implemented.
type replayWatcher struct {
	clientv3.Watcher
	ch  chan clientv3.WatchResponse
	rev atomic.Int64 // the last revision fed
}

func (w *replayWatcher) Watch(context.Context, string, ...clientv3.OpOption) clientv3.WatchChan {
	return w.ch
}

func (w *replayWatcher) RequestProgress(context.Context) error {
	select {
	case w.ch <- clientv3.WatchResponse{Header: &etcdserverpb.ResponseHeader{Revision: w.rev.Load()}}:
	default: // full: events are flowing
	}
	return nil
}

func (w *replayWatcher) Close() error { return nil }

// feed sends n updates (n a multiple of 128), 128 per response and
// revision, as fresh events (the client's protobuf decoding makes fresh
// ones too) around values encoded beforehand.
func (w *replayWatcher) feed(rp replayValues, n int) {
	k := 0
	for range n / 128 {
		rev := w.rev.Load() + 1
		evs := make([]*clientv3.Event, 128)
		kvs := make([]mvccpb.KeyValue, 128)
		for i := range evs {
			kvs[i] = mvccpb.KeyValue{Key: rp.keys[k], Value: rp.vals[k], CreateRevision: 1, ModRevision: rev, Version: rev}
			evs[i] = &clientv3.Event{Type: clientv3.EventTypePut, Kv: &kvs[i]}
			k = (k + 1) % len(rp.keys)
		}
		w.ch <- clientv3.WatchResponse{Header: &etcdserverpb.ResponseHeader{Revision: rev}, Events: evs}
		w.rev.Store(rev)
	}
}

// consume applies each event of wch with apply until n were, in a
// goroutine; the returned function waits for it.
func consume(b *testing.B, wch clientv3.WatchChan, n int, apply func(*clientv3.Event)) func() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := 0
		for resp := range wch {
			for _, ev := range resp.Events {
				apply(ev)
				if seen++; seen == n {
					return
				}
			}
		}
	}()
	return func() {
		select {
		case <-done:
		case <-time.After(time.Minute):
			b.Fatal("events missing")
		}
	}
}

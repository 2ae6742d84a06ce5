package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// follower consumes a source the way a reflector does: it re-watches from
// the last version after an ErrTransient end, and records every change and
// every error.
type follower struct {
	src *etcd.Source[obj]

	mu      sync.Mutex
	version string
	gens    map[string]int // last generation seen per key
	errs    []error
	changed chan struct{} // signalled (non-blocking) after each event
}

func newFollower(src *etcd.Source[obj], version string) *follower {
	return &follower{src: src, version: version, gens: map[string]int{}, changed: make(chan struct{}, 1)}
}

// run follows until ctx is done; an error that is not ErrTransient fails t.
func (f *follower) run(ctx context.Context, t *testing.T) {
	for ctx.Err() == nil {
		f.mu.Lock()
		v := f.version
		f.mu.Unlock()
		w, err := f.src.Watch(ctx, informer.WatchOptions{Version: v})
		if err != nil {
			t.Errorf("watch: %v", err)
			return
		}
		for ev := range w.Events() {
			f.mu.Lock()
			switch ev.Type {
			case informer.EventError:
				f.errs = append(f.errs, ev.Err)
				if !errors.Is(ev.Err, informer.ErrTransient) {
					t.Errorf("watch error not transient: %v", ev.Err)
				}
			case informer.EventDeleted:
				delete(f.gens, ev.Object.Key)
			case informer.EventAdded, informer.EventModified:
				if ev.Object.Value.Gen <= f.gens[ev.Object.Key] {
					t.Errorf("%s: generation %d after %d", ev.Object.Key, ev.Object.Value.Gen, f.gens[ev.Object.Key])
				}
				f.gens[ev.Object.Key] = ev.Object.Value.Gen
			}
			if ev.Version != "" {
				f.version = ev.Version
			}
			f.mu.Unlock()
			select {
			case f.changed <- struct{}{}:
			default:
			}
		}
		w.Stop()
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond): // the reflector's backoff
		}
	}
}

// waitFor waits until the follower has seen key at generation gen.
func (f *follower) waitFor(t *testing.T, key string, gen int, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		f.mu.Lock()
		got := f.gens[key]
		f.mu.Unlock()
		if got >= gen {
			return
		}
		select {
		case <-f.changed:
		case <-deadline:
			t.Fatalf("%s gen %d not seen within %v (at gen %d)", key, gen, timeout, got)
		}
	}
}

func (f *follower) errors() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.errs...)
}

// clusterSource returns a client of every member and a source over it.
func clusterSource(t *testing.T, c *etcdtest.Cluster) (*clientv3.Client, *etcd.Source[obj]) {
	cli, err := etcdtest.NewClient(c.Endpoints()...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	src := newSource(t, etcd.Options[obj]{Client: cli, Prefix: "/cluster/", StripPrefix: true,
		LivenessInterval: 500 * time.Millisecond, LivenessTimeout: time.Second})
	return cli, src
}

// putRetry writes until the write is acknowledged.
func putRetry(t *testing.T, w writer, o obj, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_, err := w.put(ctx, o)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("put %v: %v", o, err)
		}
	}
}

// With the leader SIGKILLed during a watch, the watch resumes (through the
// client's own retry or a re-watch) and every acknowledged write is seen.
func TestClusterLeaderKilled(t *testing.T) {
	c := etcdtest.StartCluster(t, 3)
	cli, src := clusterSource(t, c)
	w := writer{c: cli, prefix: "/cluster/"}
	page, err := src.List(t.Context(), informer.ListOptions{})
	require.NoError(t, err)
	f := newFollower(src, page.Version)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { f.run(ctx, t) })

	const keys = 20
	for gen := 1; gen <= 5; gen++ {
		for i := range keys {
			putRetry(t, w, obj{Name: fmt.Sprintf("k%02d", i), Gen: gen}, 20*time.Second)
		}
		if gen == 2 {
			leader := c.Leader(t.Context())
			require.NotNil(t, leader)
			leader.Kill()
			t.Logf("killed leader %s", leader.Name)
		}
	}
	start := time.Now()
	for i := range keys {
		f.waitFor(t, fmt.Sprintf("k%02d", i), 5, 20*time.Second)
	}
	t.Logf("all writes seen %v after the last; watch errors on the way: %v", time.Since(start), f.errors())
}

// Without quorum, the watch fails with ErrTransient instead of hanging, and
// recovers when quorum returns.
func TestClusterQuorumLoss(t *testing.T) {
	c := etcdtest.StartCluster(t, 3)
	cli, src := clusterSource(t, c)
	w := writer{c: cli, prefix: "/cluster/"}
	putRetry(t, w, obj{Name: "a", Gen: 1}, 10*time.Second)
	page, err := src.List(t.Context(), informer.ListOptions{})
	require.NoError(t, err)
	f := newFollower(src, page.Version)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { f.run(ctx, t) })
	putRetry(t, w, obj{Name: "a", Gen: 2}, 10*time.Second)
	f.waitFor(t, "a", 2, 10*time.Second)

	m := c.Members()
	m[1].Kill()
	m[2].Kill()
	lost := time.Now()
	deadline := time.After(15 * time.Second)
	for len(f.errors()) == 0 {
		select {
		case <-f.changed:
		case <-deadline:
			t.Fatal("no watch error within 15s of quorum loss")
		}
	}
	t.Logf("quorum loss reported after %v: %v", time.Since(lost), f.errors()[0])

	c.Restart(m[1])
	c.Restart(m[2])
	c.WaitLeader(30 * time.Second)
	putRetry(t, w, obj{Name: "a", Gen: 3}, 20*time.Second)
	f.waitFor(t, "a", 3, 30*time.Second)
}

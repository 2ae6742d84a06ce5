package etcd_test

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// recommendedClient returns a client of endpoints with the settings the
// package doc recommends, and a DialKeepAliveTimeout of 5 s.
func recommendedClient(t *testing.T, endpoints []string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		Logger:               zap.NewNop(),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// revChecker is an informer handler that fails the test when a key's
// revision goes backwards, and mirrors the keys it was told about.
type revChecker struct {
	t *testing.T

	mu      sync.Mutex
	last    map[string]int64 // newest revision seen per key, deletions included
	present map[string]int64 // the keys the handler believes exist, at their revision
	deleted map[string]int64 // revision of the last deletion seen per key
	changed chan struct{}    // signalled (non-blocking) after each call
}

func newRevChecker(t *testing.T) *revChecker {
	return &revChecker{t: t, last: map[string]int64{}, present: map[string]int64{}, deleted: map[string]int64{},
		changed: make(chan struct{}, 1)}
}

// waitPresent waits until the keys the handler was told about are want
// (handlers are told in queue order, not revision order across keys), or
// timeout. It reports whether they are.
func (c *revChecker) waitPresent(want map[string]int64, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		done := maps.Equal(c.present, want)
		c.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-c.changed:
		case <-deadline:
			return false
		}
	}
}

// seen records a call for key at rev: a put (add or update) or a deletion.
func (c *revChecker) seen(op, key string, rev int64) {
	c.mu.Lock()
	if rev < c.last[key] {
		c.t.Errorf("%s %s at revision %d after revision %d", op, key, rev, c.last[key])
	}
	c.last[key] = rev
	if op == "delete" {
		delete(c.present, key)
		c.deleted[key] = rev
	} else {
		c.present[key] = rev
	}
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func (c *revChecker) handler() informer.Handler[string, *etcd.Object[obj]] {
	return informer.HandlerFuncs[string, *etcd.Object[obj]]{
		AddFunc:    func(o *etcd.Object[obj], _ bool) { c.seen("add", o.Key, o.ModRevision) },
		UpdateFunc: func(_, o *etcd.Object[obj]) { c.seen("update", o.Key, o.ModRevision) },
		DeleteFunc: func(d informer.Deletion[string, *etcd.Object[obj]]) {
			c.seen("delete", d.Key, d.Object.ModRevision)
		},
	}
}

// blackholeWriter writes under a prefix through a direct client, cycling
// over keys: mostly updates, every fifth operation a delete of an existing
// key, and a later put re-creates it.
type blackholeWriter struct {
	w      writer
	exists map[string]bool
	gen    map[string]int
	n      int

	mu      sync.Mutex
	lastRev int64
	deletes map[string]int64 // revision of the last delete per key
}

func (bw *blackholeWriter) step(t *testing.T) {
	name := fmt.Sprintf("k%02d", bw.n%20)
	bw.n++
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var rev string
	var err error
	if bw.n%5 == 0 && bw.exists[name] {
		rev, err = bw.w.del(ctx, name)
		bw.exists[name] = false
	} else {
		bw.gen[name]++
		rev, err = bw.w.put(ctx, obj{Name: name, Gen: bw.gen[name]})
		bw.exists[name] = true
	}
	if err != nil {
		t.Errorf("write %s: %v", name, err)
		return
	}
	r, _ := strconv.ParseInt(rev, 10, 64)
	bw.mu.Lock()
	bw.lastRev = r
	if !bw.exists[name] {
		bw.deletes[name] = r
	}
	bw.mu.Unlock()
}

func (bw *blackholeWriter) rev() int64 {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	return bw.lastRev
}

// An informer whose connections to every member are blackholed (no traffic,
// no close, no error; connections opened meanwhile are blackholed too) while
// writes go on is current again within 5 s after the network heals: every
// key at its revision in etcd, no deletion lost, no revision going
// backwards in a handler.
func TestClusterBlackholeRecovers(t *testing.T) {
	const outage, recovery = 5 * time.Second, 5 * time.Second
	proxies, viaProxies, direct := proxiedCluster(t)
	const prefix = "/blackhole/"
	bw := &blackholeWriter{w: writer{c: direct, prefix: prefix}, exists: map[string]bool{}, gen: map[string]int{}, deletes: map[string]int64{}}
	for range 40 {
		bw.step(t)
	}

	src := newSource(t, etcd.Options[obj]{Client: recommendedClient(t, viaProxies), Prefix: prefix, StripPrefix: true})
	inf, rc := runSyncedInformer(t, src, logr.Logger{})
	bw.step(t)
	wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second)
	require.NoError(t, inf.WaitForVersion(wctx, strconv.FormatInt(bw.rev(), 10)), "before the outage")
	wcancel()

	// Cut every connection, keep writing for the outage, heal.
	for _, p := range proxies {
		p.SetBlackhole(true)
	}
	cut, before := time.Now(), bw.n
	bw.step(t)
	firstCut := bw.rev() // written after the cut: cannot have reached the informer
	tick := time.NewTicker(10 * time.Millisecond)
	for time.Since(cut) < outage {
		<-tick.C // pacing writes against a real cluster: no event to wait on
		bw.step(t)
	}
	tick.Stop()
	for _, p := range proxies {
		p.SetBlackhole(false)
	}
	healed := time.Now()
	received, err := strconv.ParseInt(inf.LastSyncVersion(), 10, 64)
	require.NoError(t, err)
	require.Less(t, received, firstCut, "the informer received a write made during the outage: the blackhole did not hold")

	// Current again within the recovery window.
	final := bw.rev()
	wctx, wcancel = context.WithTimeout(t.Context(), recovery)
	defer wcancel()
	err = inf.WaitForVersion(wctx, strconv.FormatInt(final, 10))
	took := time.Since(healed)
	require.NoError(t, err, "not current %v after the heal", recovery)
	t.Logf("outage %v with %d writes; current %v after the heal (%v after the cut)",
		outage, bw.n-before, took.Round(time.Millisecond), time.Since(cut).Round(time.Millisecond))

	want, _ := requireCacheEqualsEtcd(t, direct, prefix, inf)

	// The handler catches up with the cache; every deletion reached it.
	rc.waitPresent(want, recovery)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	require.Equal(t, want, rc.present, "keys the handler was told about")
	for k, rev := range bw.deletes {
		if _, exists := want[k]; !exists {
			require.GreaterOrEqual(t, rc.deleted[k], rev, "deletion of %s at %d not delivered", k, rev)
		}
	}
}

// requireCacheEqualsEtcd fails t unless the informer's cache holds every
// key under prefix in etcd at its revision, and nothing else. It returns
// etcd's keys with their revisions, and etcd's revision.
func requireCacheEqualsEtcd(t *testing.T, direct *clientv3.Client, prefix string, inf *informer.SharedInformer[string, *etcd.Object[obj]]) (map[string]int64, int64) {
	t.Helper()
	resp, err := direct.Get(t.Context(), prefix, clientv3.WithPrefix())
	require.NoError(t, err)
	want := map[string]int64{}
	for _, kv := range resp.Kvs {
		want[strings.TrimPrefix(string(kv.Key), prefix)] = kv.ModRevision
	}
	got := map[string]int64{}
	for k, o := range inf.Lister().All() {
		got[k] = o.ModRevision
	}
	require.Equal(t, want, got, "cache")
	return want, resp.Header.Revision
}

// proxiedCluster starts a cluster of 3 etcd processes with a TCP proxy in
// front of each member, and returns the proxies, their endpoints, and a
// client straight to the members (for the writes and the checks).
func proxiedCluster(t *testing.T) ([]*etcdtest.Proxy, []string, *clientv3.Client) {
	t.Helper()
	c := etcdtest.StartCluster(t, 3)
	var proxies []*etcdtest.Proxy
	var viaProxies []string
	for _, m := range c.Members() {
		p, err := etcdtest.NewProxy(strings.TrimPrefix(m.ClientURL, "http://"))
		require.NoError(t, err)
		t.Cleanup(p.Close)
		proxies = append(proxies, p)
		viaProxies = append(viaProxies, p.Endpoint())
	}
	direct, err := etcdtest.NewClient(c.Endpoints()...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = direct.Close() })
	return proxies, viaProxies, direct
}

// runSyncedInformer runs an informer over src, logging to logger (zero: the
// default), with a revChecker handler, until the test ends, and waits until
// it has synced.
func runSyncedInformer(t *testing.T, src *etcd.Source[obj], logger logr.Logger) (*informer.SharedInformer[string, *etcd.Object[obj]], *revChecker) {
	t.Helper()
	inf, err := informer.NewSharedInformer(informer.Options[string, *etcd.Object[obj]]{Source: src, KeyFunc: etcd.KeyFunc[obj], Logger: logger})
	require.NoError(t, err)
	rc := newRevChecker(t)
	_, err = inf.AddHandler(rc.handler(), informer.HandlerOptions{Name: "revisions"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	require.NoError(t, informer.WaitForSync(t.Context(), inf))
	return inf, rc
}

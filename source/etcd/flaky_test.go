package etcd_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// flakyWriter writes random changes to n keys through a direct client: most
// updates, one in ten a delete of an existing key (re-created later).
// Safe for concurrent use. A key has one write in flight at a time: two
// writers on one key could record its existence in another order than etcd
// applied their writes, then delete a key that is gone ("not found").
type flakyWriter struct {
	w    writer
	n    int
	hist *keyHistory // every attempt, acknowledged or not

	mu      sync.Mutex
	gen     map[string]int
	exists  map[string]bool
	busy    map[string]bool // a write in flight
	lastRev int64
	deletes map[string]int64 // revision of the last delete per key
	writes  int
}

func (fw *flakyWriter) step(ctx context.Context, rnd *rand.Rand) error {
	name := fmt.Sprintf("k%04d", rnd.IntN(fw.n))
	fw.mu.Lock()
	if fw.busy[name] {
		fw.mu.Unlock()
		return nil // the other writer's: this tick skips
	}
	fw.busy[name] = true
	del := fw.exists[name] && rnd.IntN(10) == 0
	fw.gen[name]++
	gen := fw.gen[name]
	fw.mu.Unlock()
	defer func() {
		fw.mu.Lock()
		delete(fw.busy, name)
		fw.mu.Unlock()
	}()
	var rev string
	var err error
	if del {
		rev, err = fw.w.del(ctx, name)
	} else {
		rev, err = fw.w.put(ctx, obj{Name: name, Gen: gen})
	}
	op := "put"
	if del {
		op = "delete"
	}
	fw.hist.write(name, op, gen, rev, err)
	if err != nil {
		return err
	}
	r, _ := strconv.ParseInt(rev, 10, 64)
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.writes++
	fw.lastRev = max(fw.lastRev, r)
	fw.exists[name] = !del
	if del {
		fw.deletes[name] = max(fw.deletes[name], r)
	}
	return nil
}

func (fw *flakyWriter) rev() int64 {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return fw.lastRev
}

// An informer whose connections to one member at a time are cut for a few
// hundred milliseconds (refused, or blackholed: silent), rotating over the
// members, while writes go on and etcd compacts its history every second,
// never stalls for more than 5 s and equals etcd within 5 s of the last
// cut: every key at its revision, every deletion delivered, no revision
// going backwards in a handler. A quorum is reachable all along, so the
// watch moves to a healthy member instead of backing off (issue 21: it
// stalled ~40 s).
func TestClusterFlakyNetworkConverges(t *testing.T) {
	const (
		keys   = 1000
		faults = 12 * time.Second
		// A silent cut just before the last one heals is found only by
		// the watch's liveness check (LivenessInterval + LivenessTimeout,
		// 5 s by default), and the relist comes after it: the cache is
		// current within that bound plus the relist, not 5 s after the
		// last cut (a CI run on 2 loaded cores failed at 5 s, the silent
		// cut found 4.5 s after the last cut and the relist still running).
		converge = 5*time.Second + 5*time.Second
		maxStall = 5 * time.Second
	)
	proxies, viaProxies, direct := proxiedCluster(t)
	const prefix = "/flaky/"
	hist := newKeyHistory(viaProxies)
	fw := &flakyWriter{w: writer{c: direct, prefix: prefix}, n: keys, hist: hist, gen: map[string]int{},
		exists: map[string]bool{}, busy: map[string]bool{}, deletes: map[string]int64{}}
	fw.w.seed(t, keys, "k%04d", 1)
	hctx, stopHistory := context.WithCancel(t.Context())
	var histDone sync.WaitGroup
	histDone.Go(func() { hist.watchEtcd(hctx, direct, prefix, 1) })
	t.Cleanup(func() { stopHistory(); histDone.Wait() })
	for i := range keys {
		name := fmt.Sprintf("k%04d", i)
		fw.gen[name], fw.exists[name] = 1, true
	}

	logger := funcr.New(func(prefix, args string) {
		t.Logf("%v %s %s", time.Now().Format("15:04:05.000"), prefix, args)
		hist.logLine(args)
	}, funcr.Options{Verbosity: 2})
	src := newSource(t, etcd.Options[obj]{Client: recommendedClient(t, viaProxies), Prefix: prefix, StripPrefix: true, Logger: logger})
	inf, rc := runSyncedInformer(t, src, logger)
	_, err := inf.AddHandler(hist.handler(), informer.HandlerOptions{Name: "history"})
	require.NoError(t, err)

	// Writers (about 300 changes a second in all), a compactor, and a
	// watchdog of the informer's applied version against the writes
	// acknowledged, until the faults end.
	fctx, stopLoad := context.WithCancel(t.Context())
	var load sync.WaitGroup
	for i := range 2 {
		load.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(i), 7))
			tick := time.NewTicker(7 * time.Millisecond) // pacing writes against a real cluster
			defer tick.Stop()
			for {
				select {
				case <-fctx.Done():
					return
				case <-tick.C:
				}
				wctx, wcancel := context.WithTimeout(fctx, 5*time.Second)
				if err := fw.step(wctx, rnd); err != nil && fctx.Err() == nil {
					t.Errorf("write: %v", err)
				}
				wcancel()
			}
		})
	}
	load.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-fctx.Done():
				return
			case <-tick.C:
			}
			if _, err := etcdtest.Compact(fctx, direct); err != nil && fctx.Err() == nil {
				t.Logf("compact: %v", err)
			}
		}
	})
	var stallMu sync.Mutex
	var longest time.Duration
	load.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		last, since := inf.LastSyncVersion(), time.Now()
		for {
			select {
			case <-fctx.Done():
				return
			case <-tick.C:
			}
			// A stall: writes acknowledged beyond what the informer has
			// applied, and the applied version not moving.
			v := inf.LastSyncVersion()
			applied, _ := strconv.ParseInt(v, 10, 64)
			if v != last || applied >= fw.rev() {
				last, since = v, time.Now()
				continue
			}
			stallMu.Lock()
			longest = max(longest, time.Since(since))
			stallMu.Unlock()
		}
	})

	// Cut one member's connections at a time, 200–600 ms each, rotating;
	// every other cut is silent (blackholed flows stay dead after it).
	rnd := rand.New(rand.NewPCG(1, 2))
	start, cuts := time.Now(), 0
	for time.Since(start) < faults {
		p := proxies[cuts%len(proxies)]
		silent := cuts%2 == 1
		if silent {
			p.SetBlackhole(true)
		} else {
			p.SetRefuse(true)
		}
		t.Logf("%v cut %d silent=%v", time.Now().Format("15:04:05.000"), cuts%len(proxies), silent)
		time.Sleep(time.Duration(200+rnd.IntN(400)) * time.Millisecond) // the fault's length
		if silent {
			p.SetBlackhole(false)
		} else {
			p.SetRefuse(false)
		}
		time.Sleep(time.Duration(50+rnd.IntN(150)) * time.Millisecond)
		cuts++
	}
	healed := time.Now()
	stopped := hist.since()
	stopLoad()
	load.Wait()
	final := fw.rev()

	wctx, wcancel := context.WithTimeout(t.Context(), converge)
	defer wcancel()
	err = inf.WaitForVersion(wctx, strconv.FormatInt(final, 10))
	took := time.Since(healed)
	stallMu.Lock()
	stall := longest
	stallMu.Unlock()
	t.Logf("%d cuts over %v, %d writes; longest stall %v; current %v after the last cut",
		cuts, faults, fw.writes, stall.Round(time.Millisecond), took.Round(time.Millisecond))
	require.NoError(t, err, "not current %v after the last cut", converge)
	require.LessOrEqual(t, stall, maxStall, "the applied version stood still while writes went on")

	// Issue 29, item 3: the check used to read etcd, then the cache, right
	// here. But final is the last write acknowledged: a write whose context
	// the stop cancelled may still be committed by etcd, a few milliseconds
	// later, while the check reads. Landing between the two reads, the
	// cache showed it and etcd's answer did not ("etcd 3229, cache 3488");
	// landing before the etcd read, etcd showed it and the cache not yet.
	// The early check logs whether that happened; the check itself waits
	// for the revision it read etcd at, and reads again if etcd moved.
	noteEarlyCheck(t, direct, prefix, inf, hist, final, stopped)
	want := requireCacheMatchesEtcd(t, direct, prefix, viaProxies, inf, hist, converge)

	rc.waitPresent(want, converge)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	// Every deletion reached the handler: a key it was told about and that
	// etcd no longer has would still be present. (A key created and
	// deleted again while the informer relisted after a compaction is
	// never seen at all, which is right.)
	require.Equal(t, want, rc.present, "keys the handler was told about")
	deleted := 0
	for k := range fw.deletes {
		if _, exists := want[k]; !exists && rc.deleted[k] > 0 {
			deleted++
		}
	}
	require.NotZero(t, deleted, "no deletion reached the handler")
}

// An informer with the default backoff whose cluster loses its quorum
// twice (two of three members killed for 5 s, then restarted) has its watch
// back within 2 s of the cluster answering again, whatever its backoff had
// grown to during the outage, and equals etcd within 5 s of the heal
// (issue 21: the applied version stood still until past the heal).
func TestClusterQuorumLossRecovers(t *testing.T) {
	const outage, back, converge = 5 * time.Second, 2 * time.Second, 5 * time.Second
	c := etcdtest.StartCluster(t, 3)
	direct, err := etcdtest.NewClient(c.Endpoints()...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = direct.Close() })
	const prefix = "/quorum/"
	w := writer{c: direct, prefix: prefix}
	w.seed(t, 100, "k%04d", 1)

	src := newSource(t, etcd.Options[obj]{Client: recommendedClient(t, c.Endpoints()), Prefix: prefix, StripPrefix: true, Logger: quiet()})
	inf, _ := runSyncedInformer(t, src, quiet())

	m := c.Members()
	for round := 1; round <= 2; round++ {
		m[1].Kill()
		m[2].Kill()
		time.Sleep(outage) // the outage: the reflector backs off meanwhile
		c.Restart(m[1])
		c.Restart(m[2])
		c.WaitLeader(30 * time.Second)
		answered := time.Now()
		rev, err := w.put(t.Context(), obj{Name: "after", Gen: round})
		require.NoError(t, err)
		wctx, wcancel := context.WithDeadline(t.Context(), answered.Add(back))
		err = inf.WaitForVersion(wctx, rev)
		wcancel()
		require.NoError(t, err, "round %d: the watch not back %v after etcd answered", round, back)
		t.Logf("round %d: a write after the heal cached %v after etcd answered", round, time.Since(answered).Round(time.Millisecond))
	}

	resp, err := direct.Get(t.Context(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly()) // etcd's revision
	require.NoError(t, err)
	wctx, wcancel := context.WithTimeout(t.Context(), converge)
	defer wcancel()
	require.NoError(t, inf.WaitForVersion(wctx, strconv.FormatInt(resp.Header.Revision, 10)))
	requireCacheEqualsEtcd(t, direct, prefix, inf)
}

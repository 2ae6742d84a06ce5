package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ginformer/ginformer/bench/internal/childmetrics"
	"github.com/ginformer/ginformer/bench/internal/childproc"
	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
)

// Child modes (-mode).
const (
	modeSync       = "sync"       // sync, report, stop on the parent's word (writing the snapshot), report
	modeThroughput = "throughput" // sync, then record the parent's writes until it is done
)

// childArgs are a child's flags.
type childArgs struct {
	mode, endpoint, prefix, snapshot string
	interval                         time.Duration // Snapshot.Interval
	startNS                          int64         // when the parent started the process (Unix ns)
	cpuProfile, stopProfile          string        // CPU profiles of the sync (throughput: of the writes) and of the stop
	capture                          bool          // record the restored objects, to count those the catch-up replaced
	timeout                          time.Duration
}

// childMain is a child process: the program an etcd user writes, an
// informer over a prefix with a snapshot file. It prints its figures for
// the parent. mainStart is when main started.
func childMain(args []string, mainStart time.Time) int {
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	var a childArgs
	fs.StringVar(&a.mode, "mode", modeSync, "sync or throughput")
	fs.StringVar(&a.endpoint, "endpoint", "", "etcd's client URL")
	fs.StringVar(&a.prefix, "prefix", "", "the key prefix")
	fs.StringVar(&a.snapshot, "snapshot", "", "the snapshot file")
	fs.DurationVar(&a.interval, "interval", -1, "Snapshot.Interval")
	fs.Int64Var(&a.startNS, "start-ns", 0, "when the parent started this process, Unix ns")
	fs.StringVar(&a.cpuProfile, "cpuprofile", "", "CPU profile from start to synced")
	fs.StringVar(&a.stopProfile, "stopprofile", "", "CPU profile of the stop (the snapshot write)")
	fs.BoolVar(&a.capture, "capture", false, "count the restored objects the catch-up replaced")
	fs.DurationVar(&a.timeout, "timeout", 5*time.Minute, "sync timeout")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := child(a, mainStart); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// program is the user's program in a child: a client, the etcd source, an
// informer with a snapshot and one handler.
type program struct {
	rpc     *rpcCounter
	metrics *childmetrics.EventMetrics
	log     childmetrics.LogBook
	client  *clientv3.Client
	inf     *informer.SharedInformer[string, *etcd.Object[svc]]
	reg     *informer.Registration[string, *etcd.Object[svc]]
	calls   handlerCalls
	cancel  context.CancelFunc
	done    chan error
}

// handlerCalls counts what the handler is given and, once recording is
// on, the time each update is handled and its latency from the write.
type handlerCalls struct {
	initialAdds, adds, updates, deletes atomic.Int64
	recording                           atomic.Bool
	mu                                  sync.Mutex
	handled, latency                    []int64 // Unix ns; ns
}

// newProgram builds the child's program; nothing runs yet.
func newProgram(a childArgs) (*program, error) {
	p := &program{rpc: newRPCCounter(a.prefix), metrics: &childmetrics.EventMetrics{}, log: childmetrics.NewLogBook(), done: make(chan error, 1)}
	var err error
	p.client, err = clientv3.New(clientv3.Config{Endpoints: []string{a.endpoint}, DialTimeout: 5 * time.Second,
		DialKeepAliveTime: 10 * time.Second, DialKeepAliveTimeout: 5 * time.Second,
		Logger: zap.NewNop(), DialOptions: p.rpc.dialOptions()})
	if err != nil {
		return nil, err
	}
	logger := logr.FromSlogHandler(p.log)
	src, err := etcd.New(etcd.Options[svc]{Client: p.client, Prefix: a.prefix, Codec: codec, Logger: logger})
	if err != nil {
		return nil, err
	}
	p.inf, err = informer.NewSharedInformer(informer.Options[string, *etcd.Object[svc]]{
		Source:   src,
		KeyFunc:  etcd.KeyFunc[svc],
		Indexes:  []informer.Index[*etcd.Object[svc]]{{Name: "team", Func: etcd.IndexFunc(byTeam)}},
		Logger:   logger,
		Metrics:  p.metrics,
		Snapshot: informer.SnapshotOptions[*etcd.Object[svc]]{Store: informer.NewSnapshotFile(a.snapshot), Interval: a.interval},
	})
	if err != nil {
		return nil, err
	}
	c := &p.calls
	p.reg, err = p.inf.AddHandler(informer.HandlerFuncs[string, *etcd.Object[svc]]{
		AddFunc: func(_ *etcd.Object[svc], initial bool) {
			if initial {
				c.initialAdds.Add(1)
			} else {
				c.adds.Add(1)
			}
		},
		UpdateFunc: func(_, o *etcd.Object[svc]) {
			c.updates.Add(1)
			if c.recording.Load() {
				now := time.Now().UnixNano()
				sent, _ := strconv.ParseInt(o.Value.Annotations[sentAnnotation], 10, 64)
				c.mu.Lock()
				c.handled = append(c.handled, now)
				c.latency = append(c.latency, now-sent)
				c.mu.Unlock()
			}
		},
		DeleteFunc: func(informer.Deletion[string, *etcd.Object[svc]]) { c.deletes.Add(1) },
	}, informer.HandlerOptions{Name: "counter"})
	return p, err
}

// syncResult is what a child measured of its start.
type syncResult struct {
	StartToSyncedNS int64 `json:"startToSyncedNs"` // the parent starting the process → synced, handler included
	InitNS          int64 `json:"initNs"`          // the parent starting the process → Run
	RunToSyncedNS   int64 `json:"runToSyncedNs"`
	CPUNS           int64 `json:"cpuNs"` // the process's CPU from its start to synced
	RestoreNS       int64 `json:"restoreNs"`
	RestoreDecodeNS int64 `json:"restoreDecodeNs"` // load, check and decode of the snapshot
	Restored        bool  `json:"restored"`
	Relisted        bool  `json:"relisted"` // restored, then relisted (the resume failed)
	VmHWM           int64 `json:"vmHWM"`
	HeapLive        int64 `json:"heapLive"` // live heap after sync (two GCs)

	InitialAdds int64 `json:"initialAdds"`
	Adds        int64 `json:"adds"`
	Updates     int64 `json:"updates"`
	Deletes     int64 `json:"deletes"`

	EventsAdded    int64 `json:"eventsAdded"` // watch events received, by type (a streaming list's items are Added events)
	EventsModified int64 `json:"eventsModified"`
	EventsDeleted  int64 `json:"eventsDeleted"`
	Bookmarks      int64 `json:"bookmarks"`
	Relists        int64 `json:"relists"`
	Expired        int64 `json:"expired"` // errors of class expired (a compacted revision)

	RPC rpcCounts `json:"rpc"` // requests the child's client sent, until synced

	// With -capture: restored objects replaced or removed by the catch-up,
	// and objects it added.
	Captured bool `json:"captured"`
	Replaced int  `json:"replaced"`
	Removed  int  `json:"removed"`
	Added    int  `json:"added"`

	Version string `json:"version"` // the version applied once synced
	Digest  digest `json:"digest"`
}

// stopResult is what a child measured of its stop: the snapshot written
// as Run returns.
type stopResult struct {
	WallNS          int64     `json:"wallNs"` // cancel → Run returned
	CPUNS           int64     `json:"cpuNs"`
	WriteNS         int64     `json:"writeNs"` // the informer's own figure: read, encode and save
	SnapshotBytes   int64     `json:"snapshotBytes"`
	FileBytes       int64     `json:"fileBytes"`
	Objects         int       `json:"objects"`
	SnapshotVersion string    `json:"snapshotVersion"`
	RPC             rpcCounts `json:"rpc"` // over the child's whole life
}

func child(a childArgs, mainStart time.Time) error {
	cmds := childproc.ReadCommands()
	if a.startNS == 0 {
		a.startNS = mainStart.UnixNano()
	}
	stopProfile := func() error { return nil }
	if a.cpuProfile != "" && a.mode == modeSync {
		var err error
		if stopProfile, err = startProfile(a.cpuProfile); err != nil {
			return err
		}
	}
	p, err := newProgram(a)
	if err != nil {
		return err
	}
	defer p.client.Close()
	var restored *restoredObjects
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.cancel = cancel
	runStart := time.Now()
	go func() { p.done <- p.inf.Run(ctx) }()
	if a.capture {
		restored = captureRestored(ctx, p.inf)
	}
	sctx, scancel := context.WithTimeout(ctx, a.timeout)
	err = informer.WaitForSync(sctx, p.inf, p.reg)
	scancel()
	if err != nil {
		return err
	}
	synced := time.Now()
	res := syncResult{
		StartToSyncedNS: synced.UnixNano() - a.startNS,
		InitNS:          runStart.UnixNano() - a.startNS,
		RunToSyncedNS:   synced.Sub(runStart).Nanoseconds(),
		CPUNS:           childmetrics.CPUNS(),
		VmHWM:           childmetrics.VmHWM(),
		RPC:             p.rpc.snapshot(),
	}
	if err := stopProfile(); err != nil {
		return err
	}
	p.fillSync(&res, restored)
	if a.mode == modeThroughput {
		return p.throughput(ctx, cmds, res, a.cpuProfile)
	}
	if err := childproc.Say("SYNCED", res); err != nil {
		return err
	}
	if err := childproc.AwaitCommand(cmds, "STOP", nil); err != nil {
		return err
	}
	st, err := p.stop(a)
	if err != nil {
		return err
	}
	return childproc.Say("STOPPED", st)
}

// fillSync completes res once synced: what the log, the metrics and the
// handler say, the memory and the cache's digest.
func (p *program) fillSync(res *syncResult, restored *restoredObjects) {
	if l := p.log.Find("restored the cache from a snapshot"); len(l) > 0 {
		res.Restored = true
		res.RestoreNS, res.RestoreDecodeNS = int64(l[0].Duration("took")), int64(l[0].Duration("decoded"))
	}
	c, m := &p.calls, p.metrics
	res.InitialAdds, res.Adds, res.Updates, res.Deletes = c.initialAdds.Load(), c.adds.Load(), c.updates.Load(), c.deletes.Load()
	res.EventsAdded, res.EventsModified, res.EventsDeleted = m.Added.Load(), m.Modified.Load(), m.Deleted.Load()
	res.Bookmarks, res.Relists, res.Expired = m.Bookmarks.Load(), m.Relists.Load(), m.Expired.Load()
	res.Relisted = res.Restored && res.Relists > 0
	if restored != nil {
		res.Captured = restored.wait()
		if res.Captured {
			res.Replaced, res.Removed, res.Added = restored.compare(p.inf.Lister())
		}
	}
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.HeapLive = int64(ms.HeapAlloc)
	res.Version = p.inf.Health().AppliedVersion
	for _, o := range p.inf.Lister().All() {
		if err := res.Digest.add(o.Key, o.ModRevision, o.CreateRevision, o.Value); err != nil {
			fmt.Fprintln(os.Stderr, "child: digest:", err)
		}
	}
}

// stop cancels Run and measures it: the informer writes its snapshot as it
// stops.
func (p *program) stop(a childArgs) (stopResult, error) {
	stopProfile := func() error { return nil }
	if a.stopProfile != "" {
		var err error
		if stopProfile, err = startProfile(a.stopProfile); err != nil {
			return stopResult{}, err
		}
	}
	cpu0, t0 := childmetrics.CPUNS(), time.Now()
	p.cancel()
	if err := <-p.done; err != nil {
		return stopResult{}, err
	}
	st := stopResult{WallNS: time.Since(t0).Nanoseconds(), CPUNS: childmetrics.CPUNS() - cpu0, RPC: p.rpc.snapshot()}
	if err := stopProfile(); err != nil {
		return st, err
	}
	h := p.inf.Health()
	st.SnapshotBytes, st.SnapshotVersion, st.Objects = h.SnapshotBytes, h.SnapshotVersion, h.Objects
	if l := p.log.Find("snapshot written"); len(l) > 0 {
		st.WriteNS = int64(l[len(l)-1].Duration("took"))
	}
	if fi, err := os.Stat(a.snapshot); err == nil {
		st.FileBytes = fi.Size()
	}
	return st, nil
}

// startProfile starts a CPU profile written to path; the function returned
// stops it.
func startProfile(path string) (func() error, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() error { pprof.StopCPUProfile(); return f.Close() }, nil
}

// restoredObjects is the restored cache as it was before the catch-up
// changed it: each key and the object cached under it.
type restoredObjects struct {
	done chan struct{}
	ok   bool // the cache was restored and recorded
	keys []string
	objs []*etcd.Object[svc]
}

// captureRestored records the restored cache as soon as Health says it is
// restored (before the relist of a compacted snapshot is applied: that
// takes a list of the whole prefix, seconds; a catch-up by watch may
// change a few objects before they are recorded).
func captureRestored(ctx context.Context, inf *informer.SharedInformer[string, *etcd.Object[svc]]) *restoredObjects {
	r := &restoredObjects{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			h := inf.Health()
			if h.Synced {
				return // cold, or caught up before it was seen
			}
			if h.Restored {
				for k, o := range inf.Lister().All() {
					r.keys, r.objs = append(r.keys, k), append(r.objs, o)
				}
				r.ok = true
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	return r
}

// wait waits for the capture and reports whether it recorded the cache.
func (r *restoredObjects) wait() bool {
	<-r.done
	return r.ok
}

// compare counts the recorded objects the cache no longer holds (removed)
// or holds another object for (replaced), and the keys it holds beyond
// them (added).
func (r *restoredObjects) compare(l informer.Lister[string, *etcd.Object[svc]]) (replaced, removed, added int) {
	kept := 0
	for i, k := range r.keys {
		switch o, ok := l.Get(k); {
		case !ok:
			removed++
		case o != r.objs[i]:
			replaced++
			kept++
		default:
			kept++
		}
	}
	n := 0
	for range l.All() {
		n++
	}
	return replaced, removed, n - kept
}

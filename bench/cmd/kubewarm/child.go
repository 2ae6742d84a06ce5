package main

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ginformer/ginformer/bench/internal/childmetrics"
	"github.com/ginformer/ginformer/bench/internal/childproc"
	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// childArgs are a child's flags.
type childArgs struct {
	kubeconfig, snapshot string
	startNS              int64  // when the parent started the process (Unix ns)
	cpuProfile           string // CPU profile from the process's start to synced; "-stop" added: of the stop
	countDecodes         bool   // count the pods a relist decodes (decodeCount)
	timeout              time.Duration
}

// childMain is a child process: the program a Kubernetes user writes, a
// pod informer with a snapshot file. It prints its figures for the
// parent. mainStart is when main started.
func childMain(args []string, mainStart time.Time) int {
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	var a childArgs
	fs.StringVar(&a.kubeconfig, "kubeconfig", "", "kubeconfig file")
	fs.StringVar(&a.snapshot, "snapshot", "", "the snapshot file")
	fs.Int64Var(&a.startNS, "start-ns", 0, "when the parent started this process, Unix ns")
	fs.StringVar(&a.cpuProfile, "cpuprofile", "", "CPU profile from start to synced (and -stop: of the stop)")
	fs.BoolVar(&a.countDecodes, "count-decodes", false, "count the pods a relist decodes")
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

// program is the user's program in a child: a clientset, the Kubernetes
// source, an informer with namespace and node indexes, a snapshot file and
// one handler.
type program struct {
	requests *requestLog
	metrics  *childmetrics.EventMetrics
	log      childmetrics.LogBook
	decodes  *decodeCount // nil without -count-decodes
	inf      *informer.SharedInformer[informer.NamespacedKey, *corev1.Pod]
	reg      *informer.Registration[informer.NamespacedKey, *corev1.Pod]
	calls    struct{ initialAdds, adds, updates, deletes atomic.Int64 }
	cancel   context.CancelFunc
	done     chan error
}

// newProgram builds the child's program; nothing runs yet.
func newProgram(a childArgs) (*program, error) {
	p := &program{requests: newRequestLog(), metrics: &childmetrics.EventMetrics{}, log: childmetrics.NewLogBook(), done: make(chan error, 1)}
	cfg, err := clientcmd.BuildConfigFromFlags("", a.kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 5000, 10000 // as bench/cmd/kubeapi: no client-side throttling
	cfg.Wrap(p.requests.wrap)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	logger := logr.FromSlogHandler(p.log)
	src, err := k8s.New(cs.CoreV1().Pods(""), func(l *corev1.PodList) []corev1.Pod { return l.Items }, k8s.Options{Logger: logger})
	if err != nil {
		return nil, err
	}
	if !src.Decoding() {
		return nil, fmt.Errorf("the source does not decode itself")
	}
	opts := informer.Options[informer.NamespacedKey, *corev1.Pod]{
		Source:  src,
		KeyFunc: k8s.Key[*corev1.Pod],
		Indexes: []informer.Index[*corev1.Pod]{
			k8s.NamespaceIndex[*corev1.Pod](),
			k8s.FieldIndex("node", func(p *corev1.Pod) string { return p.Spec.NodeName }),
		},
		Logger:   logger,
		Metrics:  p.metrics,
		Snapshot: informer.SnapshotOptions[*corev1.Pod]{Store: informer.NewSnapshotFile(a.snapshot), Interval: -1},
	}
	if a.countDecodes {
		p.decodes = newDecodeCount()
		opts.Snapshot.Codec = p.decodes.codec(src.SnapshotCodec())
		opts.ObjectVersion = p.decodes.objectVersion
	}
	if p.inf, err = informer.NewSharedInformer(opts); err != nil {
		return nil, err
	}
	c := &p.calls
	p.reg, err = p.inf.AddHandler(informer.HandlerFuncs[informer.NamespacedKey, *corev1.Pod]{
		AddFunc: func(_ *corev1.Pod, initial bool) {
			if initial {
				c.initialAdds.Add(1)
			} else {
				c.adds.Add(1)
			}
		},
		UpdateFunc: func(_, _ *corev1.Pod) { c.updates.Add(1) },
		DeleteFunc: func(informer.Deletion[informer.NamespacedKey, *corev1.Pod]) { c.deletes.Add(1) },
	}, informer.HandlerOptions{Name: "counter"})
	return p, err
}

// synced is what a child says the moment it has synced, before it looks
// at anything else, so that the parent reads the apiserver's CPU then.
type synced struct {
	StartToSyncedNS int64 `json:"startToSyncedNs"`
}

// syncResult is what a child measured of its start. Times are Unix ns.
type syncResult struct {
	StartToSyncedNS int64 `json:"startToSyncedNs"` // the parent starting the process → synced, handler included
	StartNS         int64 `json:"startNs"`         // the parent started the process
	RunNS           int64 `json:"runNs"`           // Run was called (client and informer built)
	RestoredNS      int64 `json:"restoredNs"`      // the snapshot was loaded (0: none)
	MarkerNS        int64 `json:"markerNs"`        // caught up: the resume watch's marker (the first bookmark), or the first list applied
	SyncedNS        int64 `json:"syncedNs"`        // WaitForSync returned: the handler was given every object
	RestoreNS       int64 `json:"restoreNs"`       // the informer's own figure: identity, load, check, decode, build
	RestoreDecodeNS int64 `json:"restoreDecodeNs"` // of which identity, load, check and decode
	CPUNS           int64 `json:"cpuNs"`           // the process's CPU from its start to synced
	CPUAtRunNS      int64 `json:"cpuAtRunNs"`      // the process's CPU from its start to Run
	RunDelayNS      int64 `json:"runDelayNs"`      // its threads' time waiting for a CPU, start → synced
	Restored        bool  `json:"restored"`
	Relisted        bool  `json:"relisted"` // restored, then relisted (the resume failed)
	VmHWM           int64 `json:"vmHWM"`
	HeapLive        int64 `json:"heapLive"` // live heap after sync (two GCs)

	InitialAdds int64 `json:"initialAdds"`
	Adds        int64 `json:"adds"`
	Updates     int64 `json:"updates"`
	Deletes     int64 `json:"deletes"`

	EventsAdded    int64 `json:"eventsAdded"` // watch events received, by type (a streaming list's initial events not included)
	EventsModified int64 `json:"eventsModified"`
	EventsDeleted  int64 `json:"eventsDeleted"`
	Bookmarks      int64 `json:"bookmarks"`
	Relists        int64 `json:"relists"`
	Expired        int64 `json:"expired"` // errors of class expired (a 410)

	Requests requestCounts `json:"requests"` // requests the child sent, until synced

	// With -count-decodes: pods restored from the snapshot, listed pods
	// that were not restored objects (decoded by the relist), and keys the
	// cache holds that the snapshot did not (created while down: decoded).
	Counted bool   `json:"counted"`
	Restore int    `json:"restore"`
	Decoded int    `json:"decoded"`
	NewKeys int    `json:"newKeys"`
	Version string `json:"version"` // the version applied once synced
	Digest  digest `json:"digest"`
}

// stopResult is what a child measured of its stop: the snapshot written
// as Run returns.
type stopResult struct {
	WallNS    int64         `json:"wallNs"` // cancel → Run returned
	CPUNS     int64         `json:"cpuNs"`
	WriteNS   int64         `json:"writeNs"` // the informer's own figure: read, encode and save
	FileBytes int64         `json:"fileBytes"`
	Objects   int           `json:"objects"`
	Requests  requestCounts `json:"requests"` // over the child's whole life
}

func child(a childArgs, mainStart time.Time) error {
	stopProfile := func() error { return nil }
	if a.cpuProfile != "" {
		var err error
		if stopProfile, err = startProfile(a.cpuProfile); err != nil {
			return err
		}
	}
	cmds := childproc.ReadCommands()
	if a.startNS == 0 {
		a.startNS = mainStart.UnixNano()
	}
	p, err := newProgram(a)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.cancel = cancel
	res := syncResult{StartNS: a.startNS, RunNS: time.Now().UnixNano(), CPUAtRunNS: childmetrics.CPUNS()}
	go func() { p.done <- p.inf.Run(ctx) }()
	sctx, scancel := context.WithTimeout(ctx, a.timeout)
	err = informer.WaitForSync(sctx, p.inf, p.reg)
	scancel()
	if err != nil {
		return err
	}
	res.SyncedNS = time.Now().UnixNano()
	res.CPUNS = childmetrics.CPUNS()
	res.RunDelayNS = childmetrics.RunDelayNS()
	res.StartToSyncedNS = res.SyncedNS - a.startNS
	if err := childproc.Say("SYNCED", synced{StartToSyncedNS: res.StartToSyncedNS}); err != nil {
		return err
	}
	res.Requests = p.requests.counts()
	res.VmHWM = childmetrics.VmHWM()
	if err := stopProfile(); err != nil {
		return err
	}
	p.fillSync(&res)
	if err := childproc.Say("RESULT", res); err != nil {
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
// handler say, the decodes counted, the memory and the cache's digest.
func (p *program) fillSync(res *syncResult) {
	if l := p.log.Find("restored the cache from a snapshot"); len(l) > 0 {
		res.Restored = true
		res.RestoredNS = l[0].Time.UnixNano()
		res.RestoreNS, res.RestoreDecodeNS = int64(l[0].Duration("took")), int64(l[0].Duration("decoded"))
	}
	c, m := &p.calls, p.metrics
	res.InitialAdds, res.Adds, res.Updates, res.Deletes = c.initialAdds.Load(), c.adds.Load(), c.updates.Load(), c.deletes.Load()
	res.EventsAdded, res.EventsModified, res.EventsDeleted = m.Added.Load(), m.Modified.Load(), m.Deleted.Load()
	res.Bookmarks, res.Relists, res.Expired = m.Bookmarks.Load(), m.Relists.Load(), m.Expired.Load()
	res.MarkerNS = m.FirstBookmarkNS.Load()
	if l := m.FirstRelistNS.Load(); l != 0 && (res.MarkerNS == 0 || l < res.MarkerNS) {
		res.MarkerNS = l
	}
	res.Relisted = res.Restored && res.Relists > 0
	if p.decodes != nil {
		res.Counted = true
		res.Restore, res.Decoded = p.decodes.counts()
		for _, o := range p.inf.Lister().All() {
			p.decodes.mu.Lock()
			_, restored := p.decodes.restored[o]
			_, fresh := p.decodes.fresh[o]
			p.decodes.mu.Unlock()
			if !restored && !fresh {
				res.NewKeys++
			}
		}
	}
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.HeapLive = int64(ms.HeapAlloc)
	res.Version = p.inf.Health().AppliedVersion
	for _, o := range p.inf.Lister().All() {
		res.Digest.add(o.Namespace, o.Name, o.ResourceVersion)
	}
}

// stop cancels Run and measures it: the informer writes its snapshot as it
// stops.
func (p *program) stop(a childArgs) (stopResult, error) {
	stopProfile := func() error { return nil }
	if a.cpuProfile != "" {
		var err error
		if stopProfile, err = startProfile(strings.TrimSuffix(a.cpuProfile, ".pprof") + "-stop.pprof"); err != nil {
			return stopResult{}, err
		}
	}
	cpu0, t0 := childmetrics.CPUNS(), time.Now()
	p.cancel()
	if err := <-p.done; err != nil {
		return stopResult{}, err
	}
	st := stopResult{WallNS: time.Since(t0).Nanoseconds(), CPUNS: childmetrics.CPUNS() - cpu0, Requests: p.requests.counts()}
	if err := stopProfile(); err != nil {
		return st, err
	}
	st.Objects = p.inf.Health().Objects
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

// digest sums what identifies a set of pods: each one's namespace, name
// and resourceVersion, hashed (FNV-1a), and the count. Two sets with the
// same digest are the same set but with negligible probability.
type digest struct {
	Pods int    `json:"pods"`
	Sum  uint64 `json:"sum"`
}

func (d *digest) add(namespace, name, resourceVersion string) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(namespace + "/" + name + "@" + resourceVersion))
	d.Pods++
	d.Sum += h.Sum64()
}

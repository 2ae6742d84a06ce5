package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/ginformer/ginformer/bench"
	"github.com/ginformer/ginformer/source/k8s"
)

// Library names, as the -lib flag of a child takes them.
const (
	libClientGo  = "client-go"
	libGinformer = "ginformer"
	// libProjection is ginformer caching slim.Pod (-projection).
	libProjection = "ginformer-projection"
)

// update is one watch-phase update: the resourceVersion it produced and a
// wall-clock time (Unix ns): when the write's response arrived (parent) or
// when the handler was called (child). Parent and children share the
// machine's clock.
type update struct {
	RV   string `json:"rv"`
	NS   int64  `json:"ns"`
	Sent int64  `json:"-"` // parent only: when the write was sent
}

// result is what a child measured, sent to the parent as JSON.
type result struct {
	Lib           string         `json:"lib"`
	Adds          int64          `json:"adds"`
	SyncWallNS    int64          `json:"syncWallNs"`
	SyncCPUNS     int64          `json:"syncCpuNs"`
	TotalAlloc    uint64         `json:"totalAlloc"`
	Mallocs       uint64         `json:"mallocs"`
	HeapBefore    uint64         `json:"heapBefore"`
	PeakHeap      uint64         `json:"peakHeap"`
	HeapKept      int64          `json:"heapKept"`
	VmHWM         int64          `json:"vmHWM"` // bytes
	WatchCPUNS    int64          `json:"watchCpuNs"`
	WatchTimedOut bool           `json:"watchTimedOut"`
	Updates       []update       `json:"updates"`
	Wire          map[string]int `json:"wire"`     // "list|streaming list|watch content-type gzip=bool" → responses
	ClientGo      string         `json:"clientGo"` // the child's k8s.io/client-go version
	Relist        *relistResult  `json:"relist,omitempty"`
}

// counter is the handler both libraries run: it reads two labels and the
// node, counts per node, and records every update's arrival.
type counter struct {
	want, wantUpd int
	adds          atomic.Int64
	synced        chan struct{}
	perNode       map[string]int
	labelBytes    int
	upd           []update
	nUpd          atomic.Int64
	updDone       chan struct{}
	// For -relist: the watch errors client-go reports, ginformer's
	// sharing-table lookups so far (nil: none), and ginformer's logger.
	watchErrs watchErrors
	lookups   func() uint64
	log       logr.Logger
}

func newCounter(pods, updates int) *counter {
	c := &counter{want: pods, wantUpd: updates, synced: make(chan struct{}), updDone: make(chan struct{}),
		perNode: map[string]int{}, upd: make([]update, updates+updates/4+16)}
	if updates == 0 {
		close(c.updDone)
	}
	return c
}

// add runs on the handler's goroutine (one per handler on both sides).
func (c *counter) add(p *corev1.Pod) { c.addFields(p.Spec.NodeName, p.Labels) }

func (c *counter) addFields(node string, labels map[string]string) {
	c.perNode[node]++
	c.labelBytes += len(labels["app"]) + len(labels["team"])
	if c.adds.Add(1) == int64(c.want) {
		close(c.synced)
	}
}

func (c *counter) update(p *corev1.Pod) { c.updateFields(p.Spec.NodeName, p.Labels, p.ResourceVersion) }

func (c *counter) updateFields(node string, labels map[string]string, rv string) {
	now := time.Now().UnixNano()
	traceUpdate(rv, now)
	c.perNode[node]++
	c.labelBytes += len(labels["app"]) + len(labels["team"])
	k := c.nUpd.Load()
	if int(k) < len(c.upd) {
		c.upd[k] = update{RV: rv, NS: now}
	}
	c.nUpd.Store(k + 1)
	if k+1 == int64(c.wantUpd) {
		close(c.updDone)
	}
}

// wireLog records the content type and compression of every response.
type wireLog struct {
	mu   sync.Mutex
	seen map[string]int
}

// wireRT is a transport that records its responses in a wireLog.
type wireRT struct {
	log  *wireLog
	next http.RoundTripper
}

func (w wireRT) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(req)
	if err == nil {
		kind := "list"
		if v := req.URL.Query().Get("watch"); v == "true" || v == "1" {
			kind = "watch"
			if req.URL.Query().Get("sendInitialEvents") == "true" {
				kind = "streaming list"
			}
		}
		key := fmt.Sprintf("%s %s gzip=%v", kind, resp.Header.Get("Content-Type"), resp.Uncompressed)
		if resp.StatusCode != http.StatusOK {
			key += " HTTP " + strconv.Itoa(resp.StatusCode)
		}
		w.log.mu.Lock()
		w.log.seen[key]++
		w.log.mu.Unlock()
	}
	return resp, err
}

// childMain is a child process: it syncs one library's pod informer, then
// records the watch phase's updates, and prints READY and RESULT lines.
func childMain(args []string) int {
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	lib := fs.String("lib", "", "library")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file")
	pods := fs.Int("pods", 0, "pods to expect")
	updates := fs.Int("updates", 0, "updates to expect")
	jsonWire := fs.Bool("json", false, "JSON on the wire")
	noGzip := fs.Bool("no-compression", false, "ask for uncompressed responses")
	projection := fs.Bool("projection", false, "ginformer caches a projection of pods")
	transform := fs.String("transform", "", "client-go's transform: "+transformStrip+" or "+transformSlim+" (none by default)")
	profile := fs.String("cpuprofile", "", "CPU profile of the sync phase")
	tracePath := fs.String("trace", "", "runtime/trace of the watch phase")
	relist := fs.Bool("relist", false, "after the watch phase, say ARMED and measure the relist after the parent's 410")
	timeout := fs.Duration("timeout", 10*time.Minute, "sync and watch timeouts")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *projection && *lib == libGinformer {
		*lib = libProjection
	}
	ph := phases{trace: *tracePath, relist: *relist}
	if err := child(*lib, *transform, *kubeconfig, *pods, *updates, *jsonWire, *noGzip, *profile, ph, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "child", *lib+":", err)
		return 1
	}
	return 0
}

func child(lib, transform, kubeconfig string, pods, updates int, jsonWire, noGzip bool, profile string, ph phases, timeout time.Duration) error {
	// The parent holds our stdin open: EOF means it is gone. "DONE" means
	// it has written every update.
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "DONE" {
				close(done)
			}
		}
		os.Exit(3)
	}()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 5000, 10000
	if jsonWire {
		cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	}
	cfg.DisableCompression = noGzip
	wl := &wireLog{seen: map[string]int{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return wireRT{log: wl, next: rt} })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newCounter(pods, updates)
	if ph.relist {
		c.log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, "child", lib+":", prefix, args) }, funcr.Options{Verbosity: 2})
	}
	start, wait, keep, err := newInformer(ctx, lib, transform, cfg, cs, c)
	if err != nil {
		return err
	}

	res := result{Lib: lib, ClientGo: bench.NewEnv().ClientGo}
	runtime.GC()
	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	res.HeapBefore = ms0.HeapAlloc
	var prof *os.File
	if profile != "" {
		if prof, err = os.Create(profile); err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(prof); err != nil {
			return err
		}
	}
	stopSampler, peak := sampleHeap()
	cpu0, t0 := cpuNS(), time.Now()

	start()
	sctx, scancel := context.WithTimeout(ctx, timeout)
	select {
	case <-c.synced:
		err = wait(sctx)
	case <-sctx.Done():
		err = fmt.Errorf("handler saw %d of %d adds: %w", c.adds.Load(), pods, sctx.Err())
	}
	scancel()
	if err != nil {
		return err
	}

	res.SyncWallNS, res.SyncCPUNS = time.Since(t0).Nanoseconds(), cpuNS()-cpu0
	runtime.ReadMemStats(&ms1)
	res.TotalAlloc, res.Mallocs = ms1.TotalAlloc-ms0.TotalAlloc, ms1.Mallocs-ms0.Mallocs
	stopSampler()
	res.PeakHeap = <-peak
	res.VmHWM = vmHWM()
	if prof != nil {
		pprof.StopCPUProfile()
		if err := prof.Close(); err != nil {
			return err
		}
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	res.HeapKept = int64(ms1.HeapAlloc) - int64(ms0.HeapAlloc)
	if profile != "" {
		// What the heap holds once synced (inuse_space).
		hp, err := os.Create(strings.TrimSuffix(profile, ".pprof") + "-heap.pprof")
		if err != nil {
			return err
		}
		if err := pprof.Lookup("heap").WriteTo(hp, 0); err != nil {
			return err
		}
		if err := hp.Close(); err != nil {
			return err
		}
	}
	res.Adds = c.adds.Load()

	// Watch phase.
	if profile != "" {
		if prof, err = os.Create(strings.TrimSuffix(profile, ".pprof") + "-watch.pprof"); err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(prof); err != nil {
			return err
		}
	}
	stopTrace, err := startTrace(ph.trace)
	if err != nil {
		return err
	}
	cpu0 = cpuNS()
	fmt.Println("READY")
	timer := time.NewTimer(timeout)
	select {
	case <-c.updDone:
	case <-done:
		// Every write has returned; give stragglers some time.
		select {
		case <-c.updDone:
		case <-time.After(30 * time.Second):
			res.WatchTimedOut = true
		}
	case <-timer.C:
		res.WatchTimedOut = true
	}
	res.WatchCPUNS = cpuNS() - cpu0
	if err := stopTrace(); err != nil {
		return err
	}
	if prof != nil {
		pprof.StopCPUProfile()
		if err := prof.Close(); err != nil {
			return err
		}
	}
	n := min(int(c.nUpd.Load()), len(c.upd))
	res.Updates = slices.Clone(c.upd[:n])
	if ph.relist {
		if res.Relist, err = measureRelist(ctx, lib, keep, c, wl, pods, timeout); err != nil {
			return err
		}
	}
	wl.mu.Lock()
	res.Wire = wl.seen
	b, err := json.Marshal(res)
	wl.mu.Unlock()
	if err != nil {
		return err
	}
	fmt.Printf("RESULT %s\n", b)
	runtime.KeepAlive(keep)
	return nil
}

// newInformer builds lib's pod informer with the node and namespace
// indexes and c as its handler. start starts it; wait, called once the
// handler has seen every add, returns once the informer and the handler's
// registration report synced; keep is the informer. The -crd mode's
// libraries (crd-*) go to newCRDInformer, with cfg.
func newInformer(ctx context.Context, lib, transform string, cfg *rest.Config, cs *kubernetes.Clientset, c *counter) (start func(), wait func(context.Context) error, keep any, err error) {
	if isCRDLib(lib) {
		return newCRDInformer(ctx, lib, transform, cfg, c)
	}
	if transform != "" && lib != libClientGo {
		return nil, nil, nil, fmt.Errorf("-transform is for client-go, not %s", lib)
	}
	switch lib {
	case libClientGo:
		factory := informers.NewSharedInformerFactory(cs, 0)
		inf := factory.Core().V1().Pods().Informer() // has the namespace index
		if tf, err := clientGoTransform(transform); err != nil {
			return nil, nil, nil, err
		} else if tf != nil {
			if err := inf.SetTransform(tf); err != nil {
				return nil, nil, nil, err
			}
		}
		if err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
			c.watchErrs.add(err)
			cache.DefaultWatchErrorHandler(ctx, r, err)
		}); err != nil {
			return nil, nil, nil, err
		}
		if err := inf.AddIndexers(cache.Indexers{"node": func(obj any) ([]string, error) {
			return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
		}}); err != nil {
			return nil, nil, nil, err
		}
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    func(obj any, _ bool) { c.add(obj.(*corev1.Pod)) },
			UpdateFunc: func(_, obj any) { c.update(obj.(*corev1.Pod)) },
		})
		if err != nil {
			return nil, nil, nil, err
		}
		start = func() { factory.Start(ctx.Done()) }
		// cache.WaitForCacheSync polls every 100 ms, which would round the
		// wall time up; the handler has seen every add already when this
		// runs, so poll every millisecond.
		wait = func(ctx context.Context) error {
			for !inf.HasSynced() || !reg.HasSynced() {
				select {
				case <-ctx.Done():
					return errors.New("client-go informer did not sync")
				case <-time.After(time.Millisecond):
				}
			}
			return nil
		}
		return start, wait, factory, nil
	case libGinformer:
		src, err := k8s.New(cs.CoreV1().Pods(""), func(l *corev1.PodList) []corev1.Pod { return l.Items }, k8s.Options{})
		if err != nil {
			return nil, nil, nil, err
		}
		return runGinformer(ctx, src, func(p *corev1.Pod) podFields {
			return podFields{node: p.Spec.NodeName, labels: p.Labels, rv: p.ResourceVersion}
		}, c)
	case libProjection:
		return newProjectionInformer(ctx, cs, c)
	}
	return nil, nil, nil, fmt.Errorf("unknown library %q", lib)
}

// cpuNS is the process's user+system CPU time.
func cpuNS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// sampleHeap samples the live and unswept heap objects every 10 ms until
// stop is called; the maximum is then sent on peak.
func sampleHeap() (stop func(), peak <-chan uint64) {
	quit, out := make(chan struct{}), make(chan uint64, 1)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var hi uint64
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			hi = max(hi, s[0].Value.Uint64())
			select {
			case <-quit:
				metrics.Read(s)
				out <- max(hi, s[0].Value.Uint64())
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(quit) }, out
}

// vmHWM is the process's peak resident set size (Linux), 0 if unknown.
func vmHWM() int64 {
	b, err := os.ReadFile(filepath.Join("/proc", "self", "status"))
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

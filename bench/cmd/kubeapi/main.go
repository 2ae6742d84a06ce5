// Command kubeapi compares client-go's pod informer with ginformer's against
// a real kube-apiserver and etcd (envtest), each library in a process of
// its own.
//
// It starts the control plane, creates realistic pods (three containers,
// twelve labels, an owner reference, a running status written by a second
// field manager: about 8 KB of JSON each as served), then, for each run
// and each library (alternating which goes first), starts a child process
// that syncs a pod informer with namespace and node indexes and measures
// CPU, wall time, allocations and heap; then the parent patches pod
// statuses while the child records when its handler sees each update. It
// prints the medians as a markdown table.
//
// From the repository root, with the binaries of
// scripts/kube-apiserver-binary.sh:
//
//	export KUBEBUILDER_ASSETS=$(scripts/kube-apiserver-binary.sh)
//	go run ./bench/cmd/kubeapi                      # 20000 pods, 3 runs, protobuf
//	go run ./bench/cmd/kubeapi -json -pods 100000   # JSON on the wire
//	go run ./bench/cmd/kubeapi -no-compression      # no gzip on either side
//	go run ./bench/cmd/kubeapi -projection          # ginformer caches a projection
//	go run ./bench/cmd/kubeapi -cpuprofile-dir prof # then: go tool pprof -top prof/ginformer-run1.pprof
//	go run ./bench/cmd/kubeapi -clientgo-next "$(scripts/clientgo-next.sh kubeapi)"
//	go run ./bench/cmd/kubeapi -crd                 # 20000 custom resources, JSON (crd.go)
//
// -crd measures a custom resource instead of pods (crd.go): a workload
// CRD of about 10 KB of JSON per object as served, -pods objects, six
// columns: client-go's typed informer (at its defaults, stripping
// managedFields, with a slim transform), its dynamic informer, and
// ginformer's NewForConfig with the full type and with a slim one.
// -json, -projection and -clientgo-next do not apply to it.
//
// -clientgo-next names this command built against the newest client-go
// (scripts/clientgo-next.sh kubeapi builds it, outside the repository): its
// children add three client-go columns, at its defaults, with a transform
// that strips managedFields, and with one that keeps a slim pod (slim.Pod's
// fields, as cilium does).
//
// The watch phase, the relist and traces (watchrate.go, relist.go,
// expire.go):
//
//	go run ./bench/cmd/kubeapi -update-rate 1000 -update-writers 64 -updates 5000  # offered 1,000 updates/s
//	go run ./bench/cmd/kubeapi -with-projection    # a column of ginformer caching the projection beside full pods
//	go run ./bench/cmd/kubeapi -relist             # restart kube-apiserver: each child's watch gets 410 Gone, relists
//	go run ./bench/cmd/kubeapi -trace-dir traces   # runtime/trace of each child's watch phase, the writes beside it
//
// Each child's CPU profile covers its sync phase only. A smoke test
// (TestSmoke: 500 pods, one run, 200 updates) runs the same code when
// KUBEBUILDER_ASSETS is set.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ginformer/ginformer/bench"
	"github.com/ginformer/ginformer/bench/internal/childproc"
	"github.com/ginformer/ginformer/bench/internal/kubepods"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// config is the command's flags.
type config struct {
	Pods, Runs, Updates    int
	Writers, UpdateWriters int
	Warmup                 int
	JSON                   bool
	NoCompression          bool
	Projection             bool
	// CRD measures the informers of a custom resource (crd.go) instead
	// of pods; Pods is then the number of custom objects.
	CRD        bool
	ProfileDir string
	// UpdateRate is the watch phase's offered rate, in updates per second
	// (-update-rate); 0: as fast as the writers go.
	UpdateRate int
	// TraceDir receives a runtime/trace of each child's watch phase
	// (-trace-dir); "": none.
	TraceDir string
	// Relist adds the relist phase (-relist): after the watch phase, each
	// child's watch is made to fail with 410 Gone and the relist measured.
	Relist bool
	// WithProjection adds a column of ginformer caching the projection
	// beside its full pods (-with-projection).
	WithProjection bool
	// ClientGoNext is this command built against another client-go
	// (-clientgo-next); "" runs none.
	ClientGoNext string
	Timeout      time.Duration
	// Exe is the program re-executed as a child (os.Args[0] by default).
	Exe string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == childproc.Role {
		os.Exit(childMain(os.Args[2:]))
	}
	var cfg config
	flag.IntVar(&cfg.Pods, "pods", 20000, "pods to create")
	flag.IntVar(&cfg.Runs, "runs", 3, "runs per library (the table shows medians)")
	flag.IntVar(&cfg.Updates, "updates", 3000, "status updates in each watch phase")
	flag.IntVar(&cfg.Writers, "writers", 24, "concurrent writers creating pods")
	flag.IntVar(&cfg.UpdateWriters, "update-writers", 8, "concurrent writers in the watch phase")
	flag.IntVar(&cfg.UpdateRate, "update-rate", 0, "offered rate of the watch phase's updates, per second, from a shared schedule (0: as fast as the writers go); the report shows the achieved rate")
	flag.StringVar(&cfg.TraceDir, "trace-dir", "", "write a runtime/trace of each child's watch phase to this directory")
	flag.BoolVar(&cfg.WithProjection, "with-projection", false, "add a column of ginformer caching the projection (as -projection does) beside its full pods")
	flag.BoolVar(&cfg.Relist, "relist", false, "after the watch phase, restart kube-apiserver so that each child's watch fails with 410 Gone, and measure its relist (CPU, peak heap, objects decoded)")
	flag.IntVar(&cfg.Warmup, "warmup", 1, "unmeasured children (syncs) before the measured runs")
	flag.BoolVar(&cfg.Projection, "projection", false, "ginformer caches a projection of pods (k8s.NewProjection: metadata, node, phase, containers' names and images) instead of full pods")
	flag.BoolVar(&cfg.NoCompression, "no-compression", false, "both libraries ask for uncompressed responses (rest.Config.DisableCompression); default: what client-go negotiates (gzip)")
	flag.BoolVar(&cfg.JSON, "json", false, "JSON on the wire for both libraries (default: protobuf, client-go's default for built-in types)")
	flag.BoolVar(&cfg.CRD, "crd", false, "measure informers of a realistic custom resource (about 10 KB of JSON each, -pods of them) instead of pods: client-go typed (defaults, stripping managedFields, slim transform) and dynamic, ginformer full and projected")
	flag.StringVar(&cfg.ProfileDir, "cpuprofile-dir", "", "write a CPU profile of each child's sync phase to this directory")
	flag.StringVar(&cfg.ClientGoNext, "clientgo-next", "", "this command built against the newest client-go (scripts/clientgo-next.sh kubeapi): adds its client-go at its defaults, stripping managedFields, and keeping slim pods")
	flag.DurationVar(&cfg.Timeout, "timeout", 10*time.Minute, "timeout of each child's sync and of its watch phase")
	flag.Parse()
	cfg.Exe = os.Args[0]

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	runMode := run
	if cfg.CRD {
		runMode = runCRD
	}
	_, err := runMode(ctx, cfg, os.Stdout)
	childproc.KillAll()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeapi:", err)
		os.Exit(1)
	}
}

// run starts the control plane, fills it, measures both libraries
// cfg.Runs times and writes the report to out. The control plane is
// stopped before it returns, and so is every child.
func run(ctx context.Context, cfg config, out io.Writer) (rep *report, err error) {
	for _, d := range []*string{&cfg.ProfileDir, &cfg.TraceDir} {
		if *d == "" {
			continue
		}
		if *d, err = filepath.Abs(*d); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(*d, 0o755); err != nil {
			return nil, err
		}
	}
	t0, benv := time.Now(), bench.NewEnv()
	logf("starting kube-apiserver and etcd")
	env, err := k8stest.Start(controlPlane(cfg))
	if err != nil {
		return nil, err
	}
	defer func() { childproc.KillAll(); env.Stop() }()
	// An interrupt kills the children at once (the main goroutine may be
	// blocked reading from one); the deferred calls then stop the rest.
	defer context.AfterFunc(ctx, childproc.KillAll)()

	dir, err := os.MkdirTemp("", "kubeapi-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := kubepods.WriteKubeconfig(env.Config, kubeconfig); err != nil {
		return nil, err
	}

	logf("creating %d pods with %d writers", cfg.Pods, cfg.Writers)
	tc := time.Now()
	if err := kubepods.Populate(ctx, env, cfg.Pods, cfg.Writers); err != nil {
		return nil, err
	}
	rep = &report{cfg: cfg, createTook: time.Since(tc)}
	logf("created %d pods in %s", cfg.Pods, rep.createTook.Round(time.Second))
	if err := env.Compact(ctx); err != nil {
		return nil, err
	}
	if rep.jsonSize, rep.protoSize, err = servedSizes(ctx, env.Client, cfg.Pods); err != nil {
		return nil, err
	}
	if rep.compression, err = compression(ctx, env.Config, env.Client); err != nil {
		return nil, err
	}
	logf("served pod: %.0f B JSON, %.0f B protobuf", rep.jsonSize, rep.protoSize)
	if v, err := env.Client.Discovery().ServerVersion(); err == nil {
		rep.server = v.GitVersion
	}

	// Unmeasured children first: the first streaming list after the
	// writes is served by a server still busy with them (in a trial, the
	// first child took twice the CPU of the later ones).
	ps := participants(cfg)
	for w := range cfg.Warmup {
		p := ps[(w+1)%len(ps)]
		logf("warm-up %d: %s", w+1, p.name)
		args := append([]string{"-kubeconfig=" + kubeconfig, "-pods=" + strconv.Itoa(cfg.Pods),
			"-updates=0", "-timeout=" + cfg.Timeout.String()}, p.args...)
		if _, _, err := runChild(ctx, p.exe, args, cfg.Timeout, func() ([]update, error) { return nil, nil }, nil); err != nil {
			return nil, fmt.Errorf("warm-up, %s: %w", p.name, err)
		}
	}

	rep.participants = ps
	rep.results = map[string][]measure{}
	rep.wire = map[string]map[string]int{}
	rep.versions = map[string]string{}
	seed := uint64(0)
	for r := range cfg.Runs {
		// Each run starts with the next participant: with two, they
		// alternate which goes first.
		for i := range ps {
			p := ps[(r+i)%len(ps)]
			args := []string{"-kubeconfig=" + kubeconfig, "-pods=" + strconv.Itoa(cfg.Pods),
				"-updates=" + strconv.Itoa(cfg.Updates), "-timeout=" + cfg.Timeout.String()}
			args = append(args, p.args...)
			if cfg.JSON {
				args = append(args, "-json")
			}
			if cfg.NoCompression {
				args = append(args, "-no-compression")
			}
			if cfg.Projection {
				args = append(args, "-projection")
			}
			if cfg.ProfileDir != "" {
				args = append(args, "-cpuprofile="+filepath.Join(cfg.ProfileDir, fmt.Sprintf("%s-run%d.pprof", p.file(), r+1)))
			}
			if cfg.TraceDir != "" {
				args = append(args, "-trace="+filepath.Join(cfg.TraceDir, fmt.Sprintf("%s-run%d-watch.trace", p.file(), r+1)))
			}
			var relist func() error
			if cfg.Relist {
				args = append(args, "-relist")
				relist = func() error { return expireWatches(ctx, env) }
			}
			res, writes, err := runChild(ctx, p.exe, args, cfg.Timeout, func() ([]update, error) {
				return writeUpdates(ctx, env.Client, cfg.Pods, cfg.Updates, cfg.UpdateWriters, cfg.UpdateRate, seed)
			}, relist)
			seed++
			if err != nil {
				return nil, fmt.Errorf("run %d, %s: %w", r+1, p.name, err)
			}
			if cfg.TraceDir != "" {
				if err := saveWrites(filepath.Join(cfg.TraceDir, fmt.Sprintf("%s-run%d-writes.json", p.file(), r+1)), writes); err != nil {
					return nil, err
				}
			}
			m := newMeasure(res, writes, cfg.Pods)
			rep.results[p.name] = append(rep.results[p.name], m)
			if rep.wire[p.name] == nil {
				rep.wire[p.name] = res.Wire
			}
			rep.versions[p.name] = res.ClientGo
			logf("run %d %-9s sync %6.0f ms wall, %6.0f ms CPU, %5.0f B/pod kept; watch %.1f µs CPU/event, p50 %.1f ms, %d/%d seen at %.0f/s",
				r+1, p.name, m.syncWallMS, m.syncCPUMS, m.keptPerPod, m.watchCPUPerEventUS, m.p50MS, m.seen, cfg.Updates, m.rate)
			if rl := res.Relist; rl != nil {
				logf("run %d %-9s relist: %d list(s), %.0f ms CPU, %.0f ms wall, peak %.0f MB over settled %.0f MB, ~%.0f decoded, %d updates; cause: %s",
					r+1, p.name, rl.Lists, float64(rl.CPUNS)/1e6, float64(rl.WallNS)/1e6, float64(rl.Peak)/1e6, float64(rl.Settled)/1e6, rl.Decoded, rl.Updates, strings.Join(rl.Cause, "; "))
			}
		}
	}
	rep.took = time.Since(t0)
	benv.LoadEnd = bench.LoadAvg()
	rep.env = benv
	rep.write(out)
	return rep, nil
}

// participant is a column of the table: a library in one configuration,
// measured by children of exe.
type participant struct {
	name string   // the column's name and its results' key
	exe  string   // this command, or cfg.ClientGoNext
	args []string // the child's flags that select the library
}

// Column names beyond libClientGo and libGinformer.
const (
	colNext      = "client-go next"
	colNextStrip = "client-go next, " + transformStrip
	colNextSlim  = "client-go next, " + transformSlim
)

// participants are the table's columns: client-go and ginformer, and with
// cfg.ClientGoNext its client-go at its defaults and with each transform.
func participants(cfg config) []participant {
	ps := []participant{
		{name: libClientGo, exe: cfg.Exe, args: []string{"-lib=" + libClientGo}},
		{name: libGinformer, exe: cfg.Exe, args: []string{"-lib=" + libGinformer}},
	}
	ps = withProjection(cfg, ps)
	if cfg.ClientGoNext != "" {
		ps = append(ps,
			participant{name: colNext, exe: cfg.ClientGoNext, args: []string{"-lib=" + libClientGo}},
			participant{name: colNextStrip, exe: cfg.ClientGoNext, args: []string{"-lib=" + libClientGo, "-transform=" + transformStrip}},
			participant{name: colNextSlim, exe: cfg.ClientGoNext, args: []string{"-lib=" + libClientGo, "-transform=" + transformSlim}},
		)
	}
	return ps
}

// file is the participant's name as a file name.
func (p participant) file() string {
	return strings.NewReplacer(" ", "-", ",", "").Replace(p.name)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

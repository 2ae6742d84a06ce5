// Command kubewarm measures warm restarts of a pod informer
// (informer.Options.Snapshot) against a real kube-apiserver and etcd
// (envtest): how long a restarted program takes to serve a synced cache
// from its snapshot, and what it costs the apiserver, against a cold start
// that streams every pod.
//
// It starts the control plane, creates realistic pods (the generator of
// bench/cmd/kubeapi: Deployment pods of about 11.8 KB of JSON each), then
// runs rounds of children, each a process of its own (the same binary,
// re-executed), so that the CPU and the requests measured are the child's
// alone. The program under test is what a Kubernetes user writes:
// k8s.New(clientset.CoreV1().Pods(""), ...), namespace and node indexes,
// one handler, and Snapshot{Store: informer.NewSnapshotFile(path),
// Interval: -1} (written only at stop). A round:
//
//   - cold: no snapshot file; the informer streams the pods and syncs; it
//     is stopped and writes its snapshot as it stops;
//   - warm: the parent has changed 1% of the pods (status updates, a few
//     deletions and creations); the child restores the snapshot and
//     resumes the watch from its resourceVersion, within the watch cache's
//     window;
//   - replicas: the parent changed 1% again; three warm children, each
//     with a copy of the snapshot, start at once (a rolling update);
//   - expired: the parent changed 1% again and restarted kube-apiserver,
//     whose new watch cache starts at etcd's current revision, so the
//     snapshot's resourceVersion is older than its window (410); the
//     child restores, relists, and counts the pods the relist decoded.
//
// For each child the parent reads the kube-apiserver's and etcd's CPU
// (/proc/<pid>/stat) over an idle window just before, from the child's
// start to its sync (for replicas: the last one's), and for a while after
// (the catch-up probe keeps the watch cache busy for 3 s); the child
// counts every request it sends (rest.Config.WrapTransport). Once a child
// reports, the parent lists the pods' metadata and checks the child's
// cache against it.
//
// From the repository root, with the binaries of
// scripts/kube-apiserver-binary.sh:
//
//	export KUBEBUILDER_ASSETS=$(scripts/kube-apiserver-binary.sh)
//	go run ./bench/cmd/kubewarm                                  # 20k pods, 3 rounds after a warm-up
//	go run ./bench/cmd/kubewarm -cpuprofile-dir prof -json out.json
//	go run ./bench/cmd/kubewarm -pods 2000 -runs 1 -warmup 0     # a quick look
//
// It prints markdown tables on stdout and, with -json FILE, writes every
// figure of every child to FILE.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/metadata"

	"github.com/ginformer/ginformer/bench"
	"github.com/ginformer/ginformer/bench/internal/childproc"
	"github.com/ginformer/ginformer/bench/internal/kubepods"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// config is the command's flags.
type config struct {
	Pods        int           `json:"pods"`
	Runs        int           `json:"runs"`
	Warmup      int           `json:"warmup"`
	Changed     float64       `json:"changed"` // fraction of the pods changed while down
	LoadWriters int           `json:"loadWriters"`
	Writers     int           `json:"writers"`  // concurrent writers of the changes
	Replicas    int           `json:"replicas"` // warm children started together
	Expire      bool          `json:"expire"`   // the expired phase (an apiserver restart per round)
	Idle        time.Duration `json:"idle"`     // idle window before each child
	Linger      time.Duration `json:"linger"`   // how long after synced the control plane's CPU is still read
	ProfileDir  string        `json:"-"`
	JSONPath    string        `json:"-"`
	Timeout     time.Duration `json:"timeout"`
	// Exe is the program re-executed as a child (os.Args[0] by default).
	Exe string `json:"-"`
}

func main() {
	mainStart := time.Now()
	if len(os.Args) > 1 && os.Args[1] == childproc.Role {
		os.Exit(childMain(os.Args[2:], mainStart))
	}
	var cfg config
	flag.IntVar(&cfg.Pods, "pods", 20000, "pods to create")
	flag.IntVar(&cfg.Runs, "runs", 3, "measured rounds (the tables show medians)")
	flag.IntVar(&cfg.Warmup, "warmup", 1, "unmeasured rounds first")
	flag.Float64Var(&cfg.Changed, "changed", 0.01, "fraction of the pods changed before each warm start")
	flag.IntVar(&cfg.LoadWriters, "load-writers", 24, "concurrent writers creating the pods")
	flag.IntVar(&cfg.Writers, "writers", 8, "concurrent writers of the changes")
	flag.IntVar(&cfg.Replicas, "replicas", 3, "warm children started together (0: none)")
	flag.BoolVar(&cfg.Expire, "expire", true, "run the expired phase: restart kube-apiserver, then a warm child that must relist")
	flag.DurationVar(&cfg.Idle, "idle", 2*time.Second, "idle window measured before each child")
	flag.DurationVar(&cfg.Linger, "linger", 4*time.Second, "how long after synced the control plane's CPU is still read")
	flag.StringVar(&cfg.ProfileDir, "cpuprofile-dir", "", "write the children's CPU profiles (start → synced, and stop) to this directory, and attribute them")
	flag.StringVar(&cfg.JSONPath, "json", "", "also write the results as JSON to this file")
	flag.DurationVar(&cfg.Timeout, "timeout", 5*time.Minute, "timeout of each child's steps")
	flag.Parse()
	cfg.Exe = os.Args[0]

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, cfg)
	childproc.KillAll()
	if err == nil {
		err = rep.write(os.Stdout)
	}
	if err == nil && cfg.JSONPath != "" {
		err = writeJSON(cfg.JSONPath, rep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubewarm:", err)
		os.Exit(1)
	}
}

// run starts the control plane, fills it, runs the rounds and returns the
// report. The control plane and every child are stopped before it returns.
func run(ctx context.Context, cfg config) (rep *report, err error) {
	if cfg.ProfileDir != "" {
		if cfg.ProfileDir, err = filepath.Abs(cfg.ProfileDir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return nil, err
		}
	}
	t0, benv := time.Now(), bench.NewEnv()
	benv.Date = t0.UTC().Format("2006-01-02 15:04 MST")
	dir, err := os.MkdirTemp("", "kubewarm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	logf("starting kube-apiserver and etcd")
	env, err := k8stest.Start(k8stest.Config{})
	if err != nil {
		return nil, err
	}
	defer func() { childproc.KillAll(); env.Stop() }()
	// An interrupt kills the children at once (the main goroutine may be
	// waiting for one); the deferred calls then stop the rest.
	defer context.AfterFunc(ctx, childproc.KillAll)()

	h := &harness{cfg: cfg, env: env, pods: newPodSet(cfg.Pods), kubeconfig: filepath.Join(dir, "kubeconfig"), dir: dir}
	if err := kubepods.WriteKubeconfig(env.Config, h.kubeconfig); err != nil {
		return nil, err
	}
	if h.meta, err = metadata.NewForConfig(env.Config); err != nil {
		return nil, err
	}
	if h.procs, err = findServerProcs(); err != nil {
		return nil, err
	}
	rep = &report{Config: cfg, Env: benv}
	if v, err := env.Client.Discovery().ServerVersion(); err == nil {
		rep.Server = v.GitVersion
	}
	logf("creating %d pods with %d writers", cfg.Pods, cfg.LoadWriters)
	tc := time.Now()
	if err := kubepods.Populate(ctx, env, cfg.Pods, cfg.LoadWriters); err != nil {
		return nil, err
	}
	rep.LoadNS = time.Since(tc).Nanoseconds()
	logf("created %d pods in %s", cfg.Pods, time.Since(tc).Round(time.Second))
	if err := env.Compact(ctx); err != nil {
		return nil, err
	}

	for w := range cfg.Warmup {
		logf("warm-up round %d", w+1)
		if _, err := h.round(ctx, 0); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	for r := range cfg.Runs {
		runs, err := h.round(ctx, r+1)
		if err != nil {
			return nil, fmt.Errorf("run %d: %w", r+1, err)
		}
		rep.Runs = append(rep.Runs, runs...)
	}
	if cfg.ProfileDir != "" {
		if rep.Profiles, err = attribute(cfg.ProfileDir, rep.Runs); err != nil {
			return nil, err
		}
	}
	rep.TookNS = time.Since(t0).Nanoseconds()
	rep.Env.LoadEnd = bench.LoadAvg()
	return rep, nil
}

func writeJSON(path string, rep *report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

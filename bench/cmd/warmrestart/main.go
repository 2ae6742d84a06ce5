// Command warmrestart measures warm restarts of an informer over etcd
// (informer.Options.Snapshot): how long a restarted program takes to
// serve a synced cache from its snapshot, and at what cost, against a
// cold start that lists the whole prefix.
//
// It starts an embedded etcd in its own process (loopback, no fsync),
// writes the keys (service records of about 1 KB of JSON, through the
// etcd source's codec), then runs each phase in a child process of its
// own (the same binary), so that the CPU, memory and requests measured
// are the child's alone:
//
//   - cold: no snapshot; the informer lists the prefix and syncs; then it
//     is stopped, and writes its snapshot as it stops;
//   - warm: the parent has changed 1% of the keys (updates and deletions)
//     while no child ran; the child restores the snapshot and catches up
//     by watch; etcd's request counters (its /metrics endpoint) and the
//     child's own gRPC interceptor count the range reads of the prefix;
//   - compacted: the parent changed 1% again and compacted etcd past the
//     snapshot's revision; the child restores, cannot resume, relists.
//
// Each child's cache is checked against etcd once it reports (one read by
// the parent at the child's revision, outside the counts). Cold, warm and
// compacted children alternate, after a warm-up round. Then the
// throughput phase: children synced from the snapshot, handling the
// updates of writers that put as fast as etcd answers, with the snapshot
// written every -interval or only at stop, alternating.
//
// From the repository root:
//
//	go run ./bench/cmd/warmrestart                           # 100k keys, 3 runs: about 3 minutes
//	go run ./bench/cmd/warmrestart -cpuprofile-dir prof      # and the CPU profiles, attributed
//	go run ./bench/cmd/warmrestart -keys 10000 -runs 1 -throughput-runs 1 -throughput-time 3s
//
// It prints markdown tables (stdout) and, with -json FILE, writes every
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

	"github.com/ginformer/ginformer/bench"
	"github.com/ginformer/ginformer/bench/internal/childproc"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// config is the command's flags.
type config struct {
	Keys           int           `json:"keys"`
	Runs           int           `json:"runs"`
	Warmup         int           `json:"warmup"`
	Changed        float64       `json:"changed"` // fraction of the keys changed while down
	LoadWriters    int           `json:"loadWriters"`
	ThroughputRuns int           `json:"throughputRuns"`
	ThroughputTime time.Duration `json:"throughputTime"`
	Writers        int           `json:"writers"`
	Batch          int           `json:"batch"`
	Interval       time.Duration `json:"interval"`
	ProfileDir     string        `json:"-"`
	JSONPath       string        `json:"-"`
	Timeout        time.Duration `json:"timeout"`
	// UntilSnapshot makes the writers of a periodic throughput run go on
	// past ThroughputTime until the child's snapshot file has been replaced
	// (a snapshot written while they wrote), for at most Timeout: the smoke
	// test checks that mechanism, however long a loaded machine takes.
	UntilSnapshot bool `json:"untilSnapshot,omitempty"`
	// Exe is the program re-executed as a child (os.Args[0] by default).
	Exe string `json:"-"`
}

func main() {
	mainStart := time.Now()
	if len(os.Args) > 1 && os.Args[1] == childproc.Role {
		os.Exit(childMain(os.Args[2:], mainStart))
	}
	var cfg config
	flag.IntVar(&cfg.Keys, "keys", 100000, "keys under the prefix")
	flag.IntVar(&cfg.Runs, "runs", 3, "measured rounds of cold, warm and compacted children (the tables show medians)")
	flag.IntVar(&cfg.Warmup, "warmup", 1, "unmeasured rounds first")
	flag.Float64Var(&cfg.Changed, "changed", 0.01, "fraction of the keys changed while no child runs")
	flag.IntVar(&cfg.LoadWriters, "load-writers", 4, "concurrent writers of the initial load")
	flag.IntVar(&cfg.ThroughputRuns, "throughput-runs", 3, "runs of each throughput mode (0: no throughput phase)")
	flag.DurationVar(&cfg.ThroughputTime, "throughput-time", 10*time.Second, "how long the writers write in each throughput run")
	flag.IntVar(&cfg.Writers, "writers", 8, "concurrent writers in the throughput phase, one request at a time each")
	flag.IntVar(&cfg.Batch, "batch", 1, "puts per request in the throughput phase (1: Put, more: a transaction)")
	flag.DurationVar(&cfg.Interval, "interval", time.Second, "Snapshot.Interval of the periodic throughput mode")
	flag.BoolVar(&cfg.UntilSnapshot, "until-snapshot", false, "in the periodic throughput mode, write past -throughput-time until a snapshot is written (at most -timeout)")
	flag.StringVar(&cfg.ProfileDir, "cpuprofile-dir", "", "write every child's CPU profiles (sync, and stop: the snapshot write) to this directory, and attribute them")
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
		fmt.Fprintln(os.Stderr, "warmrestart:", err)
		os.Exit(1)
	}
}

// prefix is the key prefix the children cache.
const prefix = "/warmrestart/services/"

// run starts etcd, fills it, runs every phase and returns the report.
// etcd and every child are stopped before it returns.
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
	dir, err := os.MkdirTemp("", "warmrestart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.Mkdir(filepath.Join(dir, "snapshot"), 0o755); err != nil {
		return nil, err
	}
	logf("starting etcd")
	srv, err := etcdtest.Start(etcdtest.Config{Dir: filepath.Join(dir, "etcd")})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	// An interrupt kills the children at once (the main goroutine may be
	// waiting for one); the deferred calls then stop the rest.
	defer context.AfterFunc(ctx, childproc.KillAll)()
	c, err := etcdtest.NewClient(srv.Endpoint())
	if err != nil {
		return nil, err
	}
	defer c.Close()

	b := &harness{cfg: cfg, endpoint: srv.Endpoint(), client: c, keys: newKeys(prefix, cfg.Keys),
		snapshot: filepath.Join(dir, "snapshot", "informer.snap")}
	rep = &report{Config: cfg, Env: benv, Keys: cfg.Keys, ValueBytes: valueBytes(), Etcd: etcdVersion()}
	logf("writing %d keys", cfg.Keys)
	tl := time.Now()
	if err := b.keys.load(ctx, c, cfg.LoadWriters); err != nil {
		return nil, err
	}
	rep.LoadNS = time.Since(tl).Nanoseconds()
	logf("wrote %d keys in %s", cfg.Keys, time.Since(tl).Round(time.Second))

	for w := range cfg.Warmup {
		logf("warm-up round %d", w+1)
		if _, err := b.round(ctx, 0); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	for r := range cfg.Runs {
		runs, err := b.round(ctx, r+1)
		if err != nil {
			return nil, fmt.Errorf("run %d: %w", r+1, err)
		}
		rep.Runs = append(rep.Runs, runs...)
	}
	for r := range cfg.ThroughputRuns {
		intervals := []time.Duration{cfg.Interval, -1}
		if r%2 == 1 {
			intervals = []time.Duration{-1, cfg.Interval}
		}
		for _, iv := range intervals {
			tr, err := b.throughputChild(ctx, r+1, iv)
			if err != nil {
				return nil, fmt.Errorf("throughput run %d, interval %v: %w", r+1, iv, err)
			}
			rep.Throughput = append(rep.Throughput, tr)
		}
	}
	if cfg.ProfileDir != "" {
		if rep.Profiles, err = attribute(cfg.ProfileDir, rep.Runs, rep.Throughput); err != nil {
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

package bench

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"syscall"
	"time"
)

// Side is one library under test.
type Side uint8

const (
	// ClientGo is k8s.io/client-go/tools/cache.
	ClientGo Side = iota
	// Ginformer is github.com/ginformer/ginformer/informer.
	Ginformer
)

// String returns the library's name.
func (s Side) String() string {
	if s == Ginformer {
		return "ginformer"
	}
	return "client-go"
}

// TargetKind says how a row's target is checked.
type TargetKind uint8

const (
	// NoTarget: reported only.
	NoTarget TargetKind = iota
	// Better: ginformer must be at least Value times better than client-go
	// (faster, smaller, or higher throughput, following the metric's direction).
	Better
	// RatioAtMost: ginformer/client-go must be at most Value.
	RatioAtMost
	// GinformerAtMost: ginformer's own median must be at most Value.
	GinformerAtMost
)

// Target is a row's goal.
type Target struct {
	Kind  TargetKind
	Value float64
}

// Metric describes one row of the report.
type Metric struct {
	Group string // section, e.g. "FIFO"
	Name  string // row, e.g. "add+drain N=10k"
	Unit  string // e.g. "ns/obj"
	// HigherBetter: throughput-like metrics.
	HigherBetter bool
	Target       Target
	// Chart: plotted in the SVG.
	Chart bool
}

// Row is a metric with its samples.
type Row struct {
	Metric
	CG, GI []float64 // one sample per repetition; CG empty for floor rows
}

// Median returns the median of xs (NaN if empty).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Ratio is median(ginformer)/median(client-go).
func (r *Row) Ratio() float64 { return Median(r.GI) / Median(r.CG) }

// Gain is how many times better ginformer is (>1: better).
func (r *Row) Gain() float64 {
	if r.HigherBetter {
		return r.Ratio()
	}
	return 1 / r.Ratio()
}

// Verdict returns "met", "missed" or "" (no target), with the figure checked.
func (r *Row) Verdict() (string, string) {
	var ok bool
	var fig string
	switch r.Target.Kind {
	case Better:
		ok = r.Gain() >= r.Target.Value
		fig = fmt.Sprintf("≥ %g× better", r.Target.Value)
	case RatioAtMost:
		ok = r.Ratio() <= r.Target.Value
		fig = fmt.Sprintf("ratio ≤ %s", fmtNum(r.Target.Value))
	case GinformerAtMost:
		ok = Median(r.GI) <= r.Target.Value
		fig = fmt.Sprintf("ginformer ≤ %s", fmtNum(r.Target.Value))
	default:
		return "", ""
	}
	if math.IsNaN(r.Ratio()) && r.Target.Kind != GinformerAtMost {
		ok = false
	}
	if ok {
		return "met", fig
	}
	return "missed", fig
}

// Config sizes a run.
type Config struct {
	Quick bool
	Count int
	// Scale divides every N (smoke tests); 0 or 1: as configured.
	Scale int
	// MinTime is the least time one timed repetition of a micro workload runs.
	MinTime time.Duration
	// Log receives progress lines; nil: discarded.
	Log io.Writer
}

func (c Config) n(full, quick int) int {
	n := full
	if c.Quick {
		n = quick
	}
	if c.Scale > 1 {
		n /= c.Scale
		if n < 10 {
			n = 10
		}
	}
	return n
}

// window is how long a timed workload runs: 2 s, 500 ms with Quick, 50 ms
// in scaled-down test runs.
func (c Config) window() time.Duration {
	switch {
	case c.Scale > 1:
		return 50 * time.Millisecond
	case c.Quick:
		return 500 * time.Millisecond
	}
	return 2 * time.Second
}

func (c Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format, args...)
	}
}

// Workload produces one or more rows; run is called once per repetition and
// side and returns one value per metric (in order). Floor workloads have
// only the Ginformer side (the Go runtime itself).
type Workload struct {
	Metrics []Metric
	Floor   bool
	Run     func(s Side) []float64
}

// Builder makes a group of workloads with their inputs; the runner calls it
// just before running them and drops them (and their inputs) afterwards, so
// no group's objects stay live while another group is measured.
type Builder func(cfg Config) []Workload

// Run executes every workload cfg.Count times per side, alternating which
// side goes first, and returns the rows.
func Run(cfg Config, bs []Builder) []Row {
	var rows []Row
	for _, b := range bs {
		rows = runGroup(cfg, b(cfg), rows)
		runtime.GC()
	}
	return rows
}

func runGroup(cfg Config, ws []Workload, rows []Row) []Row {
	for _, w := range ws {
		base := len(rows)
		for _, m := range w.Metrics {
			rows = append(rows, Row{Metric: m})
		}
		cfg.logf("%-9s %s ...", w.Metrics[0].Group, w.Metrics[0].Name)
		start := time.Now()
		for rep := range cfg.Count {
			sides := []Side{ClientGo, Ginformer}
			if rep%2 == 1 {
				sides = []Side{Ginformer, ClientGo}
			}
			if w.Floor {
				sides = []Side{Ginformer}
			}
			for _, s := range sides {
				runtime.GC()
				vals := w.Run(s)
				for i, v := range vals {
					r := &rows[base+i]
					if s == ClientGo {
						r.CG = append(r.CG, v)
					} else {
						r.GI = append(r.GI, v)
					}
				}
			}
		}
		cfg.logf(" %.1fs\n", time.Since(start).Seconds())
	}
	return rows
}

// allocs returns the process's cumulative heap allocation count.
func allocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// loop runs setup (untimed) then op repeatedly until at least min has been
// spent in op, and returns the time and allocations per unit, where op
// returns how many units it did.
func loop(min time.Duration, setup func(), op func() int) (nsPerUnit, allocsPerUnit float64) {
	var spent time.Duration
	var units int
	var al uint64
	for spent < min || units == 0 {
		if setup != nil {
			setup()
		}
		a0 := allocs()
		t0 := time.Now()
		u := op()
		spent += time.Since(t0)
		al += allocs() - a0
		units += u
	}
	return float64(spent.Nanoseconds()) / float64(units), float64(al) / float64(units)
}

// pace calls send(0) … send(k-1) at about rate calls per second, in bursts
// of rate/1000 (at least one) once a millisecond, so that an offered load
// does not depend on how fast send returns. arrived is the burst's arrival
// (the same since() stamp for every call of a burst, taken when the burst
// starts): latency measured from it includes the time an event waits for
// the ones before it in its burst to be accepted, which a stamp taken at
// each call would leave out whenever send blocks (an unbuffered watch).
func pace(rate, k int, send func(j int, arrived int64)) {
	burst := max(rate/1000, 1)
	t0 := time.Now()
	for i := 0; i < k; i += burst {
		if d := time.Until(t0.Add(time.Duration(i/burst) * time.Millisecond)); d > 0 {
			time.Sleep(d)
		}
		arrived := since()
		for j := i; j < min(i+burst, k); j++ {
			send(j, arrived)
		}
	}
}

// cpuTime returns the process's user+system CPU time in ns (0 where
// getrusage is unavailable). CPU per unit of work is steadier than wall
// time on a shared machine: waiting for a core costs no CPU.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

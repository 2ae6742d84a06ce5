package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ginformer/ginformer/bench"
)

// measure is one child's figures, in the table's units.
type measure struct {
	syncCPUMS, syncCPUPerPodUS, syncWallMS float64
	keptPerPod, peakHeapMB, vmHWMMB        float64
	allocPerPod, mallocsPerPod             float64
	watchCPUPerEventUS                     float64
	p50MS, p99MS, maxMS                    float64
	sentP50MS, sentP99MS, sentP999MS       float64
	rate                                   float64 // achieved, updates/s
	seen, matched                          int
	timedOut                               bool
	relist                                 relistMeasure
}

// newMeasure derives the table's figures from a child's result, the
// parent's writes and the pod count.
func newMeasure(res *result, writes []update, pods int) measure {
	n := float64(pods)
	m := measure{
		syncCPUMS:       float64(res.SyncCPUNS) / 1e6,
		syncCPUPerPodUS: float64(res.SyncCPUNS) / 1e3 / n,
		syncWallMS:      float64(res.SyncWallNS) / 1e6,
		keptPerPod:      float64(res.HeapKept) / n,
		peakHeapMB:      float64(res.PeakHeap) / 1e6,
		vmHWMMB:         float64(res.VmHWM) / 1e6,
		allocPerPod:     float64(res.TotalAlloc) / n,
		mallocsPerPod:   float64(res.Mallocs) / n,
		seen:            len(res.Updates),
		timedOut:        res.WatchTimedOut,
	}
	if len(writes) > 0 {
		m.watchCPUPerEventUS = float64(res.WatchCPUNS) / 1e3 / float64(len(writes))
	}
	byRV := make(map[string]update, len(writes))
	for _, w := range writes {
		byRV[w.RV] = w
	}
	var lat, fromSent []float64
	for _, u := range res.Updates {
		if w, ok := byRV[u.RV]; ok {
			lat = append(lat, float64(u.NS-w.NS)/1e6)
			fromSent = append(fromSent, float64(u.NS-w.Sent)/1e6)
		}
	}
	m.matched = len(lat)
	if len(lat) > 0 {
		slices.Sort(lat)
		slices.Sort(fromSent)
		m.p50MS, m.p99MS, m.maxMS = quantile(lat, 0.5), quantile(lat, 0.99), lat[len(lat)-1]
		m.sentP50MS, m.sentP99MS, m.sentP999MS = quantile(fromSent, 0.5), quantile(fromSent, 0.99), quantile(fromSent, 0.999)
	}
	m.rate = achievedRate(writes)
	if res.Relist != nil {
		m.relist = newRelistMeasure(res.Relist)
	}
	return m
}

// quantile of sorted xs (nearest rank).
func quantile(xs []float64, q float64) float64 {
	i := int(q*float64(len(xs))+0.5) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// report is a complete run of the command.
type report struct {
	cfg                 config
	createTook, took    time.Duration
	jsonSize, protoSize float64
	compression         []string
	participants        []participant             // the table's columns, in order
	results             map[string][]measure      // participant → one measure per run
	wire                map[string]map[string]int // participant → what the child's responses were
	versions            map[string]string         // participant → its children's client-go
	env                 bench.Env
	server              string // kube-apiserver version
}

// row is a line of the table: a name, a unit, and the figure of a measure.
type row struct {
	name, unit string
	get        func(measure) float64
}

var rows = []row{
	{"CPU to sync", "ms", func(m measure) float64 { return m.syncCPUMS }},
	{"CPU to sync, per pod", "µs", func(m measure) float64 { return m.syncCPUPerPodUS }},
	{"wall time to synced", "ms", func(m measure) float64 { return m.syncWallMS }},
	{"heap kept per cached pod", "B", func(m measure) float64 { return m.keptPerPod }},
	{"peak heap during sync (objects)", "MB", func(m measure) float64 { return m.peakHeapMB }},
	{"peak RSS (VmHWM)", "MB", func(m measure) float64 { return m.vmHWMMB }},
	{"allocated per pod during sync", "B", func(m measure) float64 { return m.allocPerPod }},
	{"allocations per pod during sync", "objects", func(m measure) float64 { return m.mallocsPerPod }},
	{"watch: achieved rate", "updates/s", func(m measure) float64 { return m.rate }},
	{"watch: CPU per event", "µs", func(m measure) float64 { return m.watchCPUPerEventUS }},
	{"watch: write response → handler, p50", "ms", func(m measure) float64 { return m.p50MS }},
	{"watch: write response → handler, p99", "ms", func(m measure) float64 { return m.p99MS }},
	{"watch: write response → handler, max", "ms", func(m measure) float64 { return m.maxMS }},
	{"watch: write sent → handler, p50", "ms", func(m measure) float64 { return m.sentP50MS }},
	{"watch: write sent → handler, p99", "ms", func(m measure) float64 { return m.sentP99MS }},
	{"watch: write sent → handler, p99.9", "ms", func(m measure) float64 { return m.sentP999MS }},
}

func (r *report) median(lib string, get func(measure) float64) float64 {
	var xs []float64
	for _, m := range r.results[lib] {
		xs = append(xs, get(m))
	}
	return median(xs)
}

// wireFormat names what the informers were served.
func (r *report) wireFormat() string {
	f := "protobuf (client-go's default for built-in types, on both)"
	if r.cfg.JSON {
		f = "JSON (-json: ContentType and AcceptContentTypes application/json on both)"
	}
	if r.cfg.NoCompression {
		f += ", uncompressed (-no-compression: DisableCompression on both)"
	} else {
		f += ", gzip where the server compresses (the default)"
	}
	if r.cfg.Projection {
		f += "; ginformer caches a projection (-projection: metadata, node, phase, containers' names and images), client-go full pods"
	}
	if r.cfg.ClientGoNext != "" {
		f += "; client-go next: the same children built against " + r.versions[colNext] +
			" (scripts/clientgo-next.sh kubeapi), at its defaults, with a transform that strips managedFields, " +
			"and with one that keeps slim pods (slim.Pod's fields)"
	}
	return f
}

func (r *report) write(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Pod informer against a real kube-apiserver, one process per library\n\n")
	fmt.Fprintf(&b, "%d pods (%.1f KB JSON, %.1f KB protobuf each as served), created in %s; wire format: %s; "+
		"%d runs per library, alternating which goes first, one child process per run; cells are medians. "+
		"Watch phase: %d status patches from %d writers, %s.%s Took %s.\n\n",
		r.cfg.Pods, r.jsonSize/1e3, r.protoSize/1e3, r.createTook.Round(time.Second), r.wireFormat(),
		r.cfg.Runs, r.cfg.Updates, r.cfg.UpdateWriters, r.offered(), r.relistNote(), r.took.Round(time.Second))
	e := r.env
	fmt.Fprintf(&b, "Machine: %s, %d cores, GOMAXPROCS=%d (shared by the apiserver, etcd, the writers and the child); %s; "+
		"client-go %s; kube-apiserver %s; load average %s at start, %s at end.\n\n",
		e.CPU, e.Cores, e.MaxProcs, e.Go, e.ClientGo, r.server, e.LoadStart, e.LoadEnd)
	ratios := [][2]string{{libGinformer, libClientGo}}
	if r.results[colNext] != nil {
		ratios = append(ratios, [2]string{libGinformer, colNext})
	}
	ratios = append(ratios, r.projectionRatios()...)
	b.WriteString("| measure | unit |")
	for _, p := range r.participants {
		fmt.Fprintf(&b, " %s |", r.column(p.name))
	}
	for _, q := range ratios {
		fmt.Fprintf(&b, " ratio %s / %s |", r.column(q[0]), r.column(q[1]))
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(r.participants)+len(ratios)) + "\n")
	for _, row := range r.rows() {
		fmt.Fprintf(&b, "| %s | %s |", row.name, row.unit)
		for _, p := range r.participants {
			fmt.Fprintf(&b, " %s |", num(r.median(p.name, row.get)))
		}
		for _, q := range ratios {
			x, y := r.median(q[0], row.get), r.median(q[1], row.get)
			ratio := "–" // no ratio of signed figures (the response → handler medians can be negative)
			if x > 0 && y > 0 {
				ratio = fmt.Sprintf("%.2f", x/y)
			}
			fmt.Fprintf(&b, " %s |", ratio)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nCPU and allocations are the child process's (getrusage, runtime.MemStats) from starting the informer to " +
		"synced with every add handled; heap kept is the live heap after two GCs minus the live heap before, per pod; peak " +
		"heap is the highest sampled /memory/classes/heap/objects:bytes (absolute). Latencies compare the handler's clock " +
		"reading with the writer's, on the same machine: the watch event often reaches the child before the writing " +
		"goroutine has its response, hence negative response → handler medians; sent → handler is the whole round trip.\n")
	b.WriteString("\nPer run (sync wall ms / sync CPU ms / watch events seen, matched):\n\n")
	for _, p := range r.participants {
		lib := p.name
		var parts []string
		for _, m := range r.results[lib] {
			s := fmt.Sprintf("%.0f / %.0f / %d, %d", m.syncWallMS, m.syncCPUMS, m.seen, m.matched)
			if m.timedOut {
				s += " (timed out)"
			}
			parts = append(parts, s)
		}
		fmt.Fprintf(&b, "- %s: %s\n", lib, strings.Join(parts, "; "))
	}
	b.WriteString("\nResponses the children received (kind, Content-Type, whether Go's transport decompressed gzip):\n\n")
	for _, p := range r.participants {
		lib := p.name
		for _, k := range slices.Sorted(maps.Keys(r.wire[lib])) {
			fmt.Fprintf(&b, "- %s: %s (×%d)\n", lib, k, r.wire[lib][k])
		}
	}
	b.WriteString("\nWhat the server compresses (requests with Accept-Encoding: gzip):\n\n")
	for _, c := range r.compression {
		fmt.Fprintf(&b, "- %s\n", c)
	}
	_, _ = io.WriteString(w, b.String())
}

// column names a participant with its children's client-go version:
// "client-go v0.37.1", "client-go v0.38.0-beta.0, slim".
func (r *report) column(name string) string {
	v := r.versions[name]
	switch name {
	case libClientGo:
		return "client-go " + v
	case colNext, colNextStrip, colNextSlim:
		return strings.Replace(name, "next", v, 1)
	}
	return name
}

// num formats x with about three significant digits.
func num(x float64) string {
	switch ax := max(x, -x); {
	case ax >= 100:
		return fmt.Sprintf("%.0f", x)
	case ax >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}

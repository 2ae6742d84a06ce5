package bench

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Region markers in docs/benchmarks.md.
const (
	BeginMarker = "<!-- compare:begin -->"
	EndMarker   = "<!-- compare:end -->"
)

// RewriteRegion replaces the text between the markers in the file at path
// with body; if the markers are missing they are inserted after the first
// line (the title). The rest of the file is kept.
func RewriteRegion(path, body string) error {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	doc := string(b)
	if doc == "" {
		doc = "# ginformer benchmarks\n"
	}
	region := BeginMarker + "\n" + body + EndMarker + "\n"
	i, j := strings.Index(doc, BeginMarker), strings.Index(doc, EndMarker)
	switch {
	case i >= 0 && j > i:
		end := j + len(EndMarker)
		if end < len(doc) && doc[end] == '\n' {
			end++
		}
		doc = doc[:i] + region + doc[end:]
	default:
		title, rest, _ := strings.Cut(doc, "\n")
		doc = title + "\n\n" + region + "\n" + strings.TrimLeft(rest, "\n")
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}

// missNotes explains, per group, why a target can be missed and what would
// close the gap. They are printed only for the targets a run missed.
var missNotes = map[string]string{
	"FIFO": "Both queues are a map plus an ordered buffer; with distinct keys and a trivial consumer most of the time is " +
		"map insert/delete and GC (see the floor: a growing 100k map insert alone is ~100 ns). client-go's RealFIFO does " +
		"not deduplicate (an append per event), so it does less work per add than a per-key DeltaFIFO. Closing the gap would " +
		"need a FIFO without per-key state for the no-coalescing case, or a presized key map (its size is known at Replace).",
	"Indexer": "The user's labels index function allocates its three \"k=v\" strings on every call on both sides; ginformer calls it " +
		"once per update (it caches each object's index values) where client-go calls it twice, and the remaining " +
		"cost is the map work of moving the high-cardinality pod-name value (one bucket per pod). Faster needs index " +
		"functions that do not allocate (e.g. interned values) — a change for the user, not the engine.",
	"Query":      "ByIndex walks a copy-on-write bucket in fixed chunks; the per-call cost left is the iterator closure.",
	"Contention": "",
	"Memory": "ginformer keeps each object's index values (for the labels index: three \"k=v\" strings and a slice per object) so " +
		"an update does not re-run index functions on the old object; client-go recomputes them instead. That cache is most of " +
		"the overhead. Closing it: intern index values per index (one string per distinct value), or store only a hash.",
	"Informer sync":    "",
	"Informer events":  "",
	"Informer latency": "",
	"Relist": "A relist must hold the complete new list while the old contents stay readable (the relist is applied atomically), " +
		"so the peak is at least the steady state plus the new list: about 2× when the objects dominate the heap. Only a " +
		"relist that drops unchanged objects page by page (which needs a per-object version function in the options and a " +
		"paging source), or streaming replacement without atomicity, would get near 1.2×.",
}

const fairness = `- **Same inputs.** Both sides get the same pods (built by ` + "`bench.NewPod`" + `), the same key semantics
  (client-go ` + "`MetaNamespaceKeyFunc`" + `, a "ns/name" string built per call; ginformer ` + "`informer.NamespacedKey`" + `, a struct of
  the two strings, no allocation — a design difference of the library, stated here) and the same index functions: namespace
  (` + "`cache.MetaNamespaceIndexFunc`" + ` / an equivalent append) and a multi-value labels index returning one "k=v" string per label,
  which allocates its strings on both sides (client-go's shape also allocates the result slice).
- **client-go as shipped.** Default feature gates of the client-go version below (InOrderInformers, AtomicFIFO,
  UnlockWhileProcessingFIFO, InOrderInformersBatchProcess, WatchListClient all on). Its informer therefore uses RealFIFO
  (atomic events, unlocked processing) drained with PopBatch; the FIFO rows compare against that, and also against
  client-go's DeltaFIFO (the structural counterpart of ginformer's queue). RealFIFO does not merge deltas per key;
  ginformer's DeltaFIFO does (more work per add, less downstream).
- **Same source.** A fake list+watch: a list returns a deep copy prepared before the clock starts (client-go: a
  ` + "`*corev1.PodList`" + ` through ` + "`cache.ListWatch`" + `, wrapped with ` + "`IsWatchListSemanticsUnSupported() == true`" + `, client-go's
  documented opt-out for fake clients, so its reflector does LIST+WATCH rather than a streaming list; ginformer: a
  ` + "`[]*corev1.Pod`" + ` through ` + "`informer.SourceFuncs`" + ` without streaming list). Each gets the decoded list in its native
  shape; neither pays for decoding. client-go's reflector then copies every list item to its own heap object
  (` + "`meta.ExtractListWithAlloc`" + `); ginformer stores the pointers it was given. Watches are unbuffered on both sides
  (` + "`watch.NewFake()`" + ` / ` + "`informer.NewWatchStream(ctx, 0)`" + `), fed by the benchmark goroutine. Page size is left at
  each library's default; the fake ignores Limit and returns one page on both sides.
- **Same delivery.** Each handler counts callbacks (and, for latency, reads a clock); one goroutine per handler on both sides.
- **Work that differs, stated.** ginformer caches each object's index values, so an update runs the index
  functions on the new object only (client-go runs them on old and new): legitimate, but it is a difference in work.
  ginformer's informer processes a batch of keys under one store lock and derives notifications from the pre-commit
  state; client-go processes a batch too (PopBatch).
- **Measurement.** Micro workloads (FIFO, Indexer, Query) loop for at least 300 ms per repetition (60 ms with -quick)
  and report per object/op; allocations are process-wide ` + "`runtime.MemStats.Mallocs`" + ` deltas per unit. Each repetition
  alternates which library goes first. Heap figures: "peak" is the highest ` + "`/memory/classes/heap/objects:bytes`" + `
  sampled every 5 ms (plus at the end), minus the live heap before the list response was built, so it includes the
  decoded list; "retained", "steady" and the store overhead are live heap after two GCs. GOGC is the default 100.
- **No tuning for one side.** Neither library gets options the other lacks; ginformer runs with default Options
  (batch size, page size, no transform), client-go with default SharedIndexInformerOptions.`

// Markdown renders the comparison region of docs/benchmarks.md.
func Markdown(rows []Row, env Env, cfg Config, command string, took time.Duration) string {
	var b strings.Builder
	cmp, floor := Table(rows)
	b.WriteString("## ginformer vs client-go, side by side\n\n")
	b.WriteString("Generated by `" + command + "` (the region between the `compare` markers is rewritten by every full run; " +
		"`make bench-compare` runs the same). The numbers below are the ones that run printed.\n\n")
	b.WriteString("![ginformer vs client-go: times better, per workload](benchmarks.svg)\n\n")
	b.WriteString("| item | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| machine | %s, %d cores, GOMAXPROCS=%d, %.0f GiB RAM |\n", env.CPU, env.Cores, env.MaxProcs, env.MemGiB)
	fmt.Fprintf(&b, "| Go | %s |\n", env.Go)
	fmt.Fprintf(&b, "| client-go | k8s.io/client-go %s (with k8s.io/api and k8s.io/apimachinery at the same version: the workspace pins v0.37.1 for every k8s.io module; the reference baseline was taken with v0.37.2) |\n", env.ClientGo)
	fmt.Fprintf(&b, "| command | `%s` — %d repetitions per side, took %s |\n", command, cfg.Count, took.Round(time.Second))
	fmt.Fprintf(&b, "| date | %s |\n", env.Date)
	fmt.Fprintf(&b, "| load | load average %s at start, %s at end (the machine is shared; the benchmark itself uses up to 2 cores) |\n\n", env.LoadStart, env.LoadEnd)
	b.WriteString("Cells are `median [min..max]` over the repetitions. **ratio g/c** is median(ginformer) / median(client-go) in " +
		"the row's unit; the parenthesis says how many times better or worse that is for ginformer (for throughput, higher " +
		"is better; for everything else, lower).\n\n")
	b.WriteString(cmp)
	b.WriteString("\n### Targets\n\n")
	for _, r := range Targets(rows) {
		v, fig := r.Verdict()
		val := fmt.Sprintf("ratio %s", fmtNum(r.Ratio()))
		if r.Target.Kind == GinformerAtMost {
			val = fmt.Sprintf("ginformer %s %s, client-go %s", fmtNum(Median(r.GI)), r.Unit, fmtNum(Median(r.CG)))
		} else if r.Target.Kind == Better {
			val = fmt.Sprintf("%s× better", fmtNum(r.Gain()))
		}
		fmt.Fprintf(&b, "- **%s** — %s %s (%s): %s\n", v, r.Group, r.Name, r.Unit, fig+"; measured "+val)
	}
	missed := map[string]bool{}
	for _, r := range Targets(rows) {
		if v, _ := r.Verdict(); v == "missed" {
			missed[r.Group] = true
		}
	}
	if len(missed) > 0 {
		b.WriteString("\nWhy the missed targets are missed, and what would close them:\n\n")
		for _, g := range []string{"FIFO", "Indexer", "Query", "Contention", "Memory", "Informer sync", "Informer events", "Informer latency", "Relist"} {
			if missed[g] && missNotes[g] != "" {
				fmt.Fprintf(&b, "- **%s.** %s\n", g, missNotes[g])
			}
		}
	}
	b.WriteString("\n### The machine's floor (same run)\n\nWhat the primitives every path is built from cost here, so each row above can be read as a distance from the limit.\n\n")
	b.WriteString(floor)
	b.WriteString("\n### Fairness notes\n\n")
	b.WriteString(fairness + "\n")
	b.WriteString("\n### The workloads\n\n" + workloadNotes + "\n")
	return b.String()
}

const workloadNotes = `- **FIFO**: add N distinct small pods to a fresh queue, then drain with PopBatch (1000 keys; client-go DeltaFIFO: Pop);
  update-heavy: N updates over N/10 keys, then drain. Per object (per update). The consumer counts deltas.
- **Indexer**: Add N to a fresh indexer; Update every object of a filled indexer (same labels, or the tier label
  changing value); Delete all. Both indexes (namespace, labels).
- **Query**: ByIndex on the labels index matching 1 (pod-name), 100 (app) and N/10 (tier) of 100k, ranging over
  every match; List of 100k (a slice on both sides).
- **Contention**: 10 goroutines list namespace ns-3 (1k of 10k objects) through ByIndex in a loop while one
  goroutine updates objects for a fixed time; writes/s and lists/s.
- **Memory**: live heap after GC of an indexer holding 100k small pods, minus the pods (which exist before), per object.
- **Informer sync**: from Run to HasSynced and until the handler has received the N initial adds.
- **Informer events**: after syncing 10k pods, back-to-back Modified events on the unbuffered watch until every
  handler has counted them all; allocations are process-wide per event.
- **Informer latency**: from just before the watch send to the start of the handler callback (shared monotonic clock);
  single event in flight (the next is sent once every handler saw the previous), or R events/s offered as bursts of
  R/1000 every millisecond. Every handler callback is a sample.
- **Relist**: an informer synced with N pods (steady state = live heap after GC, objects included), then the watch
  fails with "version expired" (410 / ErrExpired); both reflectors relist N fresh copies with a new resourceVersion.
  Peak heap from the moment the new list response exists until the handler saw every update.`

package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/version"

	"github.com/ginformer/ginformer/bench"
	"github.com/ginformer/ginformer/bench/internal/spread"
)

// report is a complete run of the command.
type report struct {
	Config     config          `json:"config"`
	Env        bench.Env       `json:"env"`
	Etcd       string          `json:"etcd"`
	Keys       int             `json:"keys"`
	ValueBytes float64         `json:"valueBytes"` // mean JSON size of a value
	LoadNS     int64           `json:"loadNs"`
	TookNS     int64           `json:"tookNs"`
	Runs       []childRun      `json:"runs"`
	Throughput []throughputRun `json:"throughput"`
	Profiles   []profileRow    `json:"profiles,omitempty"`
}

// valueBytes is the mean size of the values written by the load.
func valueBytes() float64 {
	total := 0
	for i := range 1000 {
		b, _ := codec.Encode(newSvc(i, 1, 0))
		total += len(b)
	}
	return float64(total) / 1000
}

func etcdVersion() string { return version.Version }

// stat is the median and range of a figure over runs.
type stat = spread.Stat

// statOf is spread.Of, except that no run at all counts as 0.
func statOf(xs []float64) stat {
	if len(xs) == 0 {
		return stat{}
	}
	return spread.Of(xs)
}

// num formats x with about three significant digits.
var num = spread.Num

// of returns f of every measured child of phase.
func (r *report) of(phase string, f func(childRun) float64) stat {
	var xs []float64
	for _, c := range r.Runs {
		if c.Phase == phase {
			xs = append(xs, f(c))
		}
	}
	return statOf(xs)
}

// syncRow is a row of the sync table.
type syncRow struct {
	name string
	get  func(childRun) float64
}

var syncRows = []syncRow{
	{"process start → synced, handler given every object (ms)", func(c childRun) float64 { return ms(c.Sync.StartToSyncedNS) }},
	{"of which process start → Run: exec, runtime, client, informer built (ms)", func(c childRun) float64 { return ms(c.Sync.InitNS) }},
	{"of which restoring the snapshot: read, check, decode, build the cache (ms)", func(c childRun) float64 {
		return ifRestored(c, ms(c.Sync.RestoreNS))
	}},
	{"of which the snapshot's read, check and decode alone (ms)", func(c childRun) float64 {
		return ifRestored(c, ms(c.Sync.RestoreDecodeNS))
	}},
	{"of which catching up after the restore: watch to the caught-up marker, or relist (ms)", func(c childRun) float64 {
		return ifRestored(c, ms(c.Sync.RunToSyncedNS-c.Sync.RestoreNS))
	}},
	{"CPU, process start → synced, user+system (ms)", func(c childRun) float64 { return ms(c.Sync.CPUNS) }},
	{"peak RSS at synced (MB)", func(c childRun) float64 { return float64(c.Sync.VmHWM) / 1e6 }},
	{"live heap once synced (MB)", func(c childRun) float64 { return float64(c.Sync.HeapLive) / 1e6 }},
	{"range reads of the prefix sent by the child (Range with a range end, RangeStream)", func(c childRun) float64 { return float64(c.Sync.RPC.PrefixRanges) }},
	{"etcd, child's whole life: Range requests (any, single-key reads included)", func(c childRun) float64 { return float64(c.Server["Range"]) }},
	{"etcd, child's whole life: RangeStream requests", func(c childRun) float64 { return float64(c.Server["RangeStream"]) }},
	{"etcd, child's whole life: Txn requests (previous values of deleted keys)", func(c childRun) float64 { return float64(c.Server["Txn"]) }},
	{"etcd, child's whole life: Watch streams", func(c childRun) float64 { return float64(c.Server["Watch"]) }},
	{"keys changed since the snapshot was written (by the parent)", func(c childRun) float64 { return float64(c.ChangedSince.total()) }},
	{"watch events received (a streaming list's items not included): Added", func(c childRun) float64 { return float64(c.Sync.EventsAdded) }},
	{"watch events received: Modified", func(c childRun) float64 { return float64(c.Sync.EventsModified) }},
	{"watch events received: Deleted", func(c childRun) float64 { return float64(c.Sync.EventsDeleted) }},
	{"lists applied (streaming lists included)", func(c childRun) float64 { return float64(c.Sync.Relists) }},
	{"expired versions reported (the snapshot's revision compacted)", func(c childRun) float64 { return float64(c.Sync.Expired) }},
	{"restored objects the catch-up replaced, removed or added (relist: unchanged ones kept)", func(c childRun) float64 {
		if !c.Sync.Captured {
			return -1
		}
		return float64(c.Sync.Replaced + c.Sync.Removed + c.Sync.Added)
	}},
	{"handler: initial adds", func(c childRun) float64 { return float64(c.Sync.InitialAdds) }},
	{"handler: other calls (adds, updates, deletes) until synced", func(c childRun) float64 {
		return float64(c.Sync.Adds + c.Sync.Updates + c.Sync.Deletes)
	}},
}

// ifRestored returns x for a child that restored a snapshot, -1 (does not
// apply) for another.
func ifRestored(c childRun, x float64) float64 {
	if !c.Sync.Restored {
		return -1
	}
	return x
}

// stopRows describe the snapshot written when a child stops.
var stopRows = []syncRow{
	{"cancel → Run returned, snapshot written and fsynced (ms)", func(c childRun) float64 { return ms(c.Stop.WallNS) }},
	{"the informer's write: read the cache, encode, save (ms)", func(c childRun) float64 { return ms(c.Stop.WriteNS) }},
	{"CPU from cancel to Run's return, user+system (ms)", func(c childRun) float64 { return ms(c.Stop.CPUNS) }},
	{"objects", func(c childRun) float64 { return float64(c.Stop.Objects) }},
	{"file size (MB)", func(c childRun) float64 { return float64(c.Stop.FileBytes) / 1e6 }},
	{"bytes on disk per object", func(c childRun) float64 { return float64(c.Stop.FileBytes) / float64(max(1, c.Stop.Objects)) }},
}

func (r *report) write(w io.Writer) error {
	var b strings.Builder
	e := r.Env
	fmt.Fprintf(&b, "\n## Warm restart: etcd, %d keys\n\n", r.Keys)
	fmt.Fprintf(&b, "%d keys of %.0f B of JSON each (written in %s); %d rounds of a cold, a warm and a compacted child "+
		"after %d warm-up round(s), %.0f%% of the keys changed before each warm and compacted child; one child process each; cells are "+
		"`median [min..max]`. etcd %s embedded in the parent (loopback, no fsync). Took %s.\n\n",
		r.Keys, r.ValueBytes, time.Duration(r.LoadNS).Round(time.Second), r.Config.Runs, r.Config.Warmup, r.Config.Changed*100,
		r.Etcd, time.Duration(r.TookNS).Round(time.Second))
	fmt.Fprintf(&b, "Machine: %s, %d cores, GOMAXPROCS=%d, shared by etcd, the parent's writers and the child; %s; load average %s at start, %s at end; %s.\n\n",
		e.CPU, e.Cores, e.MaxProcs, e.Go, e.LoadStart, e.LoadEnd, e.Date)
	b.WriteString("| measure | cold | warm | warm after compaction | warm / cold |\n|---|---|---|---|---|\n")
	for _, row := range syncRows {
		cold, warm, comp := r.of(phaseCold, row.get), r.of(phaseWarm, row.get), r.of(phaseCompacted, row.get)
		ratio := ""
		if cold.Med > 0 && warm.Med >= 0 && strings.Contains(row.name, "(ms)") {
			ratio = fmt.Sprintf("%.2f", warm.Med/cold.Med)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", row.name, cold, warm, comp, ratio)
	}
	b.WriteString("\nSnapshot written as the child stops (Interval -1: only then), on every core:\n\n")
	b.WriteString("| measure | cold child (first snapshot) | warm child | compacted child |\n|---|---|---|---|\n")
	for _, row := range stopRows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", row.name, r.of(phaseCold, row.get), r.of(phaseWarm, row.get), r.of(phaseCompacted, row.get))
	}
	r.writeThroughput(&b)
	r.writeTargets(&b)
	if len(r.Profiles) > 0 {
		writeProfiles(&b, r.Profiles)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// tput returns f of every throughput run of the mode.
func (r *report) tput(periodic bool, f func(throughputRun) float64) stat {
	var xs []float64
	for _, t := range r.Throughput {
		if t.Periodic == periodic {
			xs = append(xs, f(t))
		}
	}
	return statOf(xs)
}

var tputRows = []struct {
	name string
	get  func(throughputRun) float64
}{
	{"events handled per second (first write sent → last event handled)", func(t throughputRun) float64 { return t.Result.EventsPerSec }},
	{"writes answered per second (the writers)", func(t throughputRun) float64 {
		return float64(t.Writes.Writes) / (float64(t.Writes.EndNS-t.Writes.StartNS) / 1e9)
	}},
	{"write sent → handler, p50 (ms)", func(t throughputRun) float64 { return ms(t.Result.P50NS) }},
	{"write sent → handler, p99 (ms)", func(t throughputRun) float64 { return ms(t.Result.P99NS) }},
	{"write sent → handler, max (ms)", func(t throughputRun) float64 { return ms(t.Result.MaxNS) }},
	{"child CPU per event (µs)", func(t throughputRun) float64 {
		return float64(t.Result.CPUNS) / 1e3 / float64(max(1, t.Result.Events))
	}},
	{"garbage collections during the run", func(t throughputRun) float64 { return float64(t.Result.GCCycles) }},
	{"garbage collector's CPU during the run, the runtime's estimate (ms)", func(t throughputRun) float64 { return t.Result.GCCPUSeconds * 1e3 }},
	{"snapshots written while the writers ran", func(t throughputRun) float64 { return float64(len(t.Result.Snapshots)) }},
	{"time a snapshot was being written, share of the writing period (%)", func(t throughputRun) float64 {
		return 100 * float64(t.Result.InsideNS) / float64(t.Writes.EndNS-t.Writes.StartNS)
	}},
	{"events handled per second while a snapshot was being written", func(t throughputRun) float64 { return t.Result.InsidePerSec }},
	{"events handled per second while none was", func(t throughputRun) float64 { return t.Result.OutsidePerSec }},
	{"p99 of the events sent while a snapshot was being written (ms)", func(t throughputRun) float64 { return ms(t.Result.SentInsideP99NS) }},
	{"p99 of the events sent while none was (ms)", func(t throughputRun) float64 { return ms(t.Result.SentOutsideP99NS) }},
}

func (r *report) writeThroughput(b *strings.Builder) {
	if len(r.Throughput) == 0 {
		return
	}
	c := r.Config
	fmt.Fprintf(b, "\nEvent throughput while snapshots are written: a child synced from the snapshot handles the updates of %d writers "+
		"each sending %d put(s) per request as fast as etcd answers, for %s; its informer writes a snapshot every %s (periodic), or "+
		"only at stop (baseline); %d runs of each, alternating which goes first.\n\n", c.Writers, c.Batch, c.ThroughputTime, c.Interval, c.ThroughputRuns)
	fmt.Fprintf(b, "| measure | Interval %s | Interval -1 (at stop only) | periodic / baseline |\n|---|---|---|---|\n", c.Interval)
	for _, row := range tputRows {
		p, s := r.tput(true, row.get), r.tput(false, row.get)
		ratio := ""
		if s.Med > 0 && p.Med > 0 {
			ratio = fmt.Sprintf("%.2f", p.Med/s.Med)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", row.name, p, s, ratio)
	}
}

func (r *report) writeTargets(b *strings.Builder) {
	b.WriteString("\nTargets (issue 23):\n\n")
	wall := func(c childRun) float64 { return ms(c.Sync.StartToSyncedNS) }
	cpu := func(c childRun) float64 { return ms(c.Sync.CPUNS) }
	cw, ww := r.of(phaseCold, wall).Med, r.of(phaseWarm, wall).Med
	ratio := ww / max(cw, 1e-9)
	fmt.Fprintf(b, "- %s warm process start → synced ≤ 0.3× cold: %.2f× (%s ms against %s ms); CPU %s ms warm, %s ms cold (%.2f×).\n",
		mark(ratio <= 0.3), ratio, num(ww), num(cw), num(r.of(phaseWarm, cpu).Med), num(r.of(phaseCold, cpu).Med),
		r.of(phaseWarm, cpu).Med/max(r.of(phaseCold, cpu).Med, 1e-9))
	ranges := r.of(phaseWarm, func(c childRun) float64 { return float64(c.Sync.RPC.PrefixRanges + c.Server["RangeStream"]) })
	fmt.Fprintf(b, "- %s no range read of the prefix on a warm restart: %s range reads of the prefix sent, RangeStream at etcd %s; the Range requests etcd saw: %s (single-key reads).\n",
		mark(ranges.Hi == 0), num(r.of(phaseWarm, func(c childRun) float64 { return float64(c.Sync.RPC.PrefixRanges) }).Hi),
		num(r.of(phaseWarm, func(c childRun) float64 { return float64(c.Server["RangeStream"]) }).Hi),
		r.of(phaseWarm, func(c childRun) float64 { return float64(c.Server["Range"]) }))
	fmt.Fprintf(b, "- snapshot writing, %d objects: %s ms of CPU, %s B on disk per object (the cold child's first snapshot, written at stop on every core).\n",
		r.Keys, r.of(phaseCold, func(c childRun) float64 { return ms(c.Stop.CPUNS) }),
		num(r.of(phaseCold, func(c childRun) float64 { return float64(c.Stop.FileBytes) / float64(max(1, c.Stop.Objects)) }).Med))
	if len(r.Throughput) > 0 {
		get := func(t throughputRun) float64 { return t.Result.EventsPerSec }
		tr := r.tput(true, get).Med / max(r.tput(false, get).Med, 1e-9)
		in, out := r.tput(true, func(t throughputRun) float64 { return t.Result.InsidePerSec }).Med,
			r.tput(true, func(t throughputRun) float64 { return t.Result.OutsidePerSec }).Med
		fmt.Fprintf(b, "- %s event throughput with snapshots written every %s ≥ 0.9× without: %.2f× over the whole runs; while a snapshot was being written %.2f× the rate while none was (same runs).\n",
			mark(tr >= 0.9), r.Config.Interval, tr, in/max(out, 1e-9))
	}
}

func mark(ok bool) string {
	if ok {
		return "✅"
	}
	return "❌"
}

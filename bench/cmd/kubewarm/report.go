package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ginformer/ginformer/bench"
	"github.com/ginformer/ginformer/bench/internal/profcat"
	"github.com/ginformer/ginformer/bench/internal/spread"
)

// report is a complete run of the command.
type report struct {
	Config   config        `json:"config"`
	Env      bench.Env     `json:"env"`
	Server   string        `json:"server"` // kube-apiserver's version
	LoadNS   int64         `json:"loadNs"`
	TookNS   int64         `json:"tookNs"`
	Runs     []childRun    `json:"runs"`
	Profiles []profcat.Row `json:"profiles,omitempty"`
}

// stat is the median and range of a figure over runs.
type stat = spread.Stat

var statOf = spread.Of

// of returns f of every measured child of phase (for replicas, of the
// first of each group when group is set: the group's figures).
func (r *report) of(phase string, group bool, f func(childRun) float64) stat {
	var xs []float64
	for _, c := range r.Runs {
		if c.Phase == phase && (!group || c.Replica == 0) {
			xs = append(xs, f(c))
		}
	}
	return statOf(xs)
}

// ratio is a / b of the medians, "" when either is unknown.
func ratio(a, b stat) string {
	if math.IsNaN(a.Med) || math.IsNaN(b.Med) || b.Med <= 0 || a.Med < 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", a.Med/b.Med)
}

// restoredOnly returns x for a child that restored a snapshot, -1 (does
// not apply) for another.
func restoredOnly(c childRun, x float64) float64 {
	if !c.Sync.Restored {
		return -1
	}
	return x
}

// since returns the ms from a to b, -1 if either is unknown.
func since(a, b int64) float64 {
	if a == 0 || b == 0 {
		return -1
	}
	return ms(b - a)
}

// syncRow is a row of the sync table.
type syncRow struct {
	name string
	get  func(childRun) float64
}

func reqs(kind string) func(childRun) float64 {
	return func(c childRun) float64 { return float64(c.Sync.Requests.ByKind[kind]) }
}

var syncRows = []syncRow{
	{"process start → synced, handler given every pod (ms)", func(c childRun) float64 { return ms(c.Sync.StartToSyncedNS) }},
	{"of which process start → Run: exec, runtime, client, informer built (ms)", func(c childRun) float64 { return since(c.Sync.StartNS, c.Sync.RunNS) }},
	{"of which Run → snapshot restored: identity GET, read, check, decode, build the cache (ms)", func(c childRun) float64 {
		return restoredOnly(c, since(c.Sync.RunNS, c.Sync.RestoredNS))
	}},
	{"of which the snapshot's read, check and decode, by the informer's clock (ms)", func(c childRun) float64 {
		return restoredOnly(c, ms(c.Sync.RestoreDecodeNS))
	}},
	{"of which restored (cold: Run) → caught up: the resume watch's marker, or the (re)list applied (ms)", func(c childRun) float64 {
		from := c.Sync.RestoredNS
		if !c.Sync.Restored {
			from = c.Sync.RunNS
		}
		return since(from, c.Sync.MarkerNS)
	}},
	{"of which caught up → synced: queue applied, every pod handed to the handler (ms)", func(c childRun) float64 { return since(c.Sync.MarkerNS, c.Sync.SyncedNS) }},
	{"CPU, process start → synced, user+system (ms)", func(c childRun) float64 { return ms(c.Sync.CPUNS) }},
	{"threads' time waiting for a CPU (other processes), start → synced, summed over threads (ms)", func(c childRun) float64 { return ms(c.Sync.RunDelayNS) }},
	{"peak RSS at synced (MB)", func(c childRun) float64 { return float64(c.Sync.VmHWM) / 1e6 }},
	{"live heap once synced (MB)", func(c childRun) float64 { return float64(c.Sync.HeapLive) / 1e6 }},
	{"kube-apiserver CPU, child's start → synced (ms)", func(c childRun) float64 { return ms(c.Server.ToSynced.APIServerNS) }},
	{"kube-apiserver CPU at its idle rate over the same time (ms)", func(c childRun) float64 {
		return ms(c.Server.idleFor(c.Server.SyncedNS).APIServerNS)
	}},
	{"kube-apiserver CPU, synced → -linger later (the resource probe's 3 s wait) (ms)", func(c childRun) float64 { return ms(c.Server.Linger.APIServerNS) }},
	{"kube-apiserver CPU, start → synced + -linger (ms)", func(c childRun) float64 {
		return ms(c.Server.ToSynced.APIServerNS + c.Server.Linger.APIServerNS)
	}},
	{"etcd CPU, child's start → synced (ms)", func(c childRun) float64 { return ms(c.Server.ToSynced.EtcdNS) }},
	{"etcd CPU, synced → -linger later (ms)", func(c childRun) float64 { return ms(c.Server.Linger.EtcdNS) }},
	{"requests until synced: " + reqList, reqs(reqList)},
	{"requests until synced: " + reqStreamingList, reqs(reqStreamingList)},
	{"requests until synced: " + reqWatch, reqs(reqWatch)},
	{"requests until synced: " + reqGetPod, reqs(reqGetPod)},
	{"requests until synced: " + reqGetEvent, reqs(reqGetEvent)},
	{"requests until synced: " + reqGetNamespace, reqs(reqGetNamespace)},
	{"apiserver, child's whole life: pod watch events sent", func(c childRun) float64 { return c.Metrics[metWatchEvents] }},
	{"apiserver, child's whole life: pod watch event bytes sent (MB)", func(c childRun) float64 { return c.Metrics[metWatchEventBytes] / 1e6 }},
	{"apiserver: pod watch cache capacity before the child (events)", func(c childRun) float64 { return c.Metrics[metWatchCacheCapacity] }},
	{"pods changed since the snapshot was written (by the parent)", func(c childRun) float64 { return float64(c.ChangedSince.total()) }},
	{"watch events received (a streaming list's initial events not included): Added", func(c childRun) float64 { return float64(c.Sync.EventsAdded) }},
	{"watch events received: Modified", func(c childRun) float64 { return float64(c.Sync.EventsModified) }},
	{"watch events received: Deleted", func(c childRun) float64 { return float64(c.Sync.EventsDeleted) }},
	{"lists applied (streaming lists included)", func(c childRun) float64 { return float64(c.Sync.Relists) }},
	{"expired versions reported (410)", func(c childRun) float64 { return float64(c.Sync.Expired) }},
	{"relist: pods decoded (listed pods that were not restored objects, and new keys)", func(c childRun) float64 {
		if !c.Sync.Counted {
			return -1
		}
		return float64(c.Sync.Decoded + c.Sync.NewKeys)
	}},
	{"relist: pods handed on undecoded (the restored objects themselves)", func(c childRun) float64 {
		if !c.Sync.Counted {
			return -1
		}
		return float64(c.Expected - c.Sync.Decoded - c.Sync.NewKeys)
	}},
	{"handler: initial adds", func(c childRun) float64 { return float64(c.Sync.InitialAdds) }},
	{"pods on the server (the cache equals them in every run)", func(c childRun) float64 { return float64(c.Expected) }},
	{"handler: other calls (adds, updates, deletes) until synced", func(c childRun) float64 {
		return float64(c.Sync.Adds + c.Sync.Updates + c.Sync.Deletes)
	}},
}

var stopRows = []syncRow{
	{"cancel → Run returned, snapshot written and fsynced (ms)", func(c childRun) float64 { return ms(c.Stop.WallNS) }},
	{"the informer's write: read the cache, encode, save (ms)", func(c childRun) float64 { return ms(c.Stop.WriteNS) }},
	{"CPU from cancel to Run's return, user+system (ms)", func(c childRun) float64 { return ms(c.Stop.CPUNS) }},
	{"pods", func(c childRun) float64 { return float64(c.Stop.Objects) }},
	{"file size (MB)", func(c childRun) float64 { return float64(c.Stop.FileBytes) / 1e6 }},
	{"bytes on disk per pod", func(c childRun) float64 { return float64(c.Stop.FileBytes) / float64(max(1, c.Stop.Objects)) }},
}

// replicaRows compare the replicas' group with the cold child: figures of
// the group (first of each), or of each replica.
var replicaRows = []struct {
	name  string
	group bool
	get   func(childRun) float64
}{
	{"kube-apiserver CPU, first start → last synced (ms)", true, func(c childRun) float64 { return ms(c.Server.ToSynced.APIServerNS) }},
	{"kube-apiserver CPU at its idle rate over the same time (ms)", true, func(c childRun) float64 {
		return ms(c.Server.idleFor(c.Server.SyncedNS).APIServerNS)
	}},
	{"kube-apiserver CPU, last synced → -linger later (ms)", true, func(c childRun) float64 { return ms(c.Server.Linger.APIServerNS) }},
	{"kube-apiserver CPU, first start → last synced + -linger (ms)", true, func(c childRun) float64 {
		return ms(c.Server.ToSynced.APIServerNS + c.Server.Linger.APIServerNS)
	}},
	{"etcd CPU, first start → last synced (ms)", true, func(c childRun) float64 { return ms(c.Server.ToSynced.EtcdNS) }},
	{"etcd CPU, first start → last synced + -linger (ms)", true, func(c childRun) float64 {
		return ms(c.Server.ToSynced.EtcdNS + c.Server.Linger.EtcdNS)
	}},
	{"first start → last synced (ms)", true, func(c childRun) float64 { return ms(c.Server.SyncedNS) }},
	{"each child: process start → synced (ms)", false, func(c childRun) float64 { return ms(c.Sync.StartToSyncedNS) }},
	{"each child: CPU, start → synced (ms)", false, func(c childRun) float64 { return ms(c.Sync.CPUNS) }},
	{"apiserver, the group's whole life: pod watch events sent", true, func(c childRun) float64 { return c.Metrics[metWatchEvents] }},
	{"each child: LIST and streaming-list requests", false, func(c childRun) float64 {
		return float64(c.Sync.Requests.ByKind[reqList] + c.Sync.Requests.ByKind[reqStreamingList])
	}},
}

func (r *report) write(w io.Writer) error {
	var b strings.Builder
	e, c := r.Env, r.Config
	fmt.Fprintf(&b, "\n## Warm restart: Kubernetes, %d pods\n\n", c.Pods)
	fmt.Fprintf(&b, "kube-apiserver %s (envtest); %d pods created in %s; %.0f%% of the pods changed before each warm start; "+
		"%d measured rounds after %d warm-up round(s); cells are `median [min..max]`. Took %s.\n\n",
		r.Server, c.Pods, time.Duration(r.LoadNS).Round(time.Second), c.Changed*100, c.Runs, c.Warmup, time.Duration(r.TookNS).Round(time.Second))
	fmt.Fprintf(&b, "Machine: %s, %d cores, GOMAXPROCS=%d, %.0f GiB; %s; client-go %s; load average %s at start, %s at end; %s.\n\n",
		e.CPU, e.Cores, e.MaxProcs, e.MemGiB, e.Go, e.ClientGo, e.LoadStart, e.LoadEnd, e.Date)
	phases := []string{phaseCold, phaseWarm, phaseExpired}
	b.WriteString("| measure | cold | warm (1% changed) | expired (apiserver restarted: relist) | warm / cold |\n|---|---|---|---|---|\n")
	for _, row := range syncRows {
		cells := make([]stat, len(phases))
		for i, ph := range phases {
			cells[i] = r.of(ph, false, row.get)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", row.name, cells[0], cells[1], cells[2], ratio(cells[1], cells[0]))
	}
	b.WriteString("\nPer run, in order (process start → synced ms, of which restore and catch-up; child CPU ms; kube-apiserver CPU ms start → synced):\n\n")
	for _, ph := range []string{phaseCold, phaseWarm, phaseReplica, phaseExpired} {
		var parts []string
		for _, ch := range r.Runs {
			if ch.Phase != ph {
				continue
			}
			s := fmt.Sprintf("%.0f", ms(ch.Sync.StartToSyncedNS))
			if ch.Sync.Restored {
				s += fmt.Sprintf(" (%.0f + %.0f)", since(ch.Sync.RunNS, ch.Sync.RestoredNS), since(ch.Sync.RestoredNS, ch.Sync.MarkerNS))
			}
			parts = append(parts, fmt.Sprintf("%s / %.0f / %.0f", s, ms(ch.Sync.CPUNS), ms(ch.Server.ToSynced.APIServerNS)))
		}
		if len(parts) > 0 {
			fmt.Fprintf(&b, "- %s: %s\n", ph, strings.Join(parts, "; "))
		}
	}
	b.WriteString("\nThe snapshot each child wrote as it stopped (`Interval: -1`: only then):\n\n")
	b.WriteString("| measure | cold child (first snapshot) | warm child | expired child |\n|---|---|---|---|\n")
	for _, row := range stopRows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", row.name, r.of(phaseCold, false, row.get), r.of(phaseWarm, false, row.get), r.of(phaseExpired, false, row.get))
	}
	if c.Replicas > 0 {
		fmt.Fprintf(&b, "\n%d warm replicas started at once (each from a copy of the warm child's snapshot, 1%% changed since) against the cold child of the same rounds:\n\n", c.Replicas)
		fmt.Fprintf(&b, "| measure | %d warm replicas | 1 cold | replicas / cold |\n|---|---|---|---|\n", c.Replicas)
		for _, row := range replicaRows {
			rep, cold := r.of(phaseReplica, row.group, row.get), r.of(phaseCold, false, row.get)
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", row.name, rep, cold, ratio(rep, cold))
		}
	}
	b.WriteString("\nRequests by kind and response status, per child (until synced; each distinct set once):\n\n")
	seen := map[string]bool{}
	for _, ch := range r.Runs {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(ch.Sync.Requests.ByStatus)) {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, ch.Sync.Requests.ByStatus[k]))
		}
		line := ch.Phase + ": " + strings.Join(parts, "; ")
		if !seen[line] {
			seen[line] = true
			b.WriteString("- " + line + "\n")
		}
	}
	if len(r.Profiles) > 0 {
		profcat.WriteTable(&b, r.Profiles, categories)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

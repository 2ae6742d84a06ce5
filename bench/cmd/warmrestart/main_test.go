package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ginformer/ginformer/bench/internal/childproc"
)

// TestMain runs the child role when the test binary is re-executed as a
// child by TestSmoke.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == childproc.Role {
		os.Exit(childMain(os.Args[2:], time.Now()))
	}
	os.Exit(m.Run())
}

// TestSmoke runs the whole command small: 2000 keys, one round, one
// throughput run of each mode, with profiles; every child's cache must
// equal etcd, the warm child must read no range of the prefix, and the
// compacted child must relist and replace only the changed objects. In the
// periodic throughput run the writers go on until a snapshot has been
// written (UntilSnapshot), however long that takes on a loaded machine: the
// check is that one is written while events are applied, not that it comes
// within a given window.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rep, err := run(ctx, config{Keys: 2000, Runs: 1, Changed: 0.05, LoadWriters: 2, ThroughputRuns: 1,
		ThroughputTime: time.Second, Writers: 2, Batch: 1, Interval: 200 * time.Millisecond, UntilSnapshot: true,
		ProfileDir: t.TempDir(), Timeout: 2 * time.Minute, Exe: os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := rep.write(&out); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	if len(rep.Runs) != 3 || len(rep.Throughput) != 2 || len(rep.Profiles) == 0 {
		t.Fatalf("%d sync children, %d throughput children, %d profile rows; want 3, 2 and some", len(rep.Runs), len(rep.Throughput), len(rep.Profiles))
	}
	for _, r := range rep.Runs {
		if !r.Equal {
			t.Errorf("%s: the cache differs from etcd", r.Phase)
		}
		if r.Sync.InitialAdds != int64(r.Expected) {
			t.Errorf("%s: %d initial adds, want %d", r.Phase, r.Sync.InitialAdds, r.Expected)
		}
		switch r.Phase {
		case phaseCold:
			if r.Sync.Restored || r.Sync.RPC.PrefixRanges == 0 || r.Stop.FileBytes == 0 {
				t.Errorf("cold: restored %v, %d range reads of the prefix, snapshot of %d bytes; want a list and a snapshot", r.Sync.Restored, r.Sync.RPC.PrefixRanges, r.Stop.FileBytes)
			}
		case phaseWarm:
			if !r.Sync.Restored || r.Sync.Relisted || r.Sync.RPC.PrefixRanges != 0 || r.Server["RangeStream"] != 0 {
				t.Errorf("warm: restored %v, relisted %v, %d range reads of the prefix, %d RangeStream at etcd; want a resume without any",
					r.Sync.Restored, r.Sync.Relisted, r.Sync.RPC.PrefixRanges, r.Server["RangeStream"])
			}
		case phaseCompacted:
			if !r.Sync.Relisted || !r.Sync.Captured {
				t.Errorf("compacted: relisted %v, restored cache recorded %v; want both", r.Sync.Relisted, r.Sync.Captured)
			} else if got, want := r.Sync.Replaced+r.Sync.Removed+r.Sync.Added, r.ChangedSince.total(); got != want {
				t.Errorf("compacted: the relist replaced, removed or added %d objects, want the %d changed", got, want)
			}
		}
	}
	for _, tr := range rep.Throughput {
		if tr.Result.Events != tr.Writes.Writes {
			t.Errorf("throughput %s: %d events handled for %d writes", tr.Interval, tr.Result.Events, tr.Writes.Writes)
		}
		if !tr.Periodic {
			continue
		}
		// A snapshot written while the writers ran: the writers stop only
		// once the snapshot file has been replaced (or after Timeout), and
		// the child reports only once that write is logged.
		w := tr.Writes
		if !w.SnapshotReplaced || !slices.ContainsFunc(tr.Result.Snapshots, func(s snapshotWrite) bool {
			return s.StartNS < w.EndNS && s.EndNS > w.StartNS
		}) {
			t.Errorf("throughput %s: no snapshot written while the writers ran (%d writes in %v; file replaced %v; snapshots logged %+v)",
				tr.Interval, w.Writes, time.Duration(w.EndNS-w.StartNS), w.SnapshotReplaced, tr.Result.Snapshots)
		}
	}
}

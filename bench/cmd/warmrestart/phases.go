package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/bench/internal/childproc"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// Phases of a round, as the report names them.
const (
	phaseCold      = "cold"
	phaseWarm      = "warm"
	phaseCompacted = "compacted"
)

// harness is the parent's state: etcd, the keys and the snapshot file the
// children share.
type harness struct {
	cfg      config
	endpoint string
	client   *clientv3.Client
	keys     *keys
	snapshot string
}

// childRun is one sync child's figures, with the parent's.
type childRun struct {
	Phase string `json:"phase"`
	Run   int    `json:"run"` // 0: warm-up
	// ChangedSince are the changes the parent made since the snapshot the
	// child starts from was written.
	ChangedSince changes          `json:"changedSince"`
	Sync         syncResult       `json:"sync"`
	Stop         stopResult       `json:"stop"`
	Server       map[string]int64 `json:"server"`   // requests etcd started during the child's life, by method
	Equal        bool             `json:"equal"`    // the child's cache equals etcd at its revision
	Expected     int              `json:"expected"` // keys in etcd while the child ran
}

// round runs a cold child (no snapshot), changes the keys, a warm child,
// changes them again and compacts, and a compacted child. run is the
// round's number (0: warm-up, not reported).
func (h *harness) round(ctx context.Context, run int) ([]childRun, error) {
	if err := os.Remove(h.snapshot); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	cold, err := h.syncChild(ctx, phaseCold, run, changes{})
	if err != nil {
		return nil, fmt.Errorf("cold: %w", err)
	}
	ch, err := h.keys.change(ctx, h.client, h.cfg.Changed)
	if err != nil {
		return nil, err
	}
	warm, err := h.syncChild(ctx, phaseWarm, run, ch)
	if err != nil {
		return nil, fmt.Errorf("warm: %w", err)
	}
	if ch, err = h.keys.change(ctx, h.client, h.cfg.Changed); err != nil {
		return nil, err
	}
	// One more revision, outside the prefix, so that the compaction is past
	// the snapshot's revision + 1: a compaction at exactly that revision
	// expires nothing (the etcd source watches on from it).
	if _, err := h.client.Put(ctx, "warmrestart-compact-past", "x"); err != nil {
		return nil, err
	}
	if _, err := etcdtest.Compact(ctx, h.client); err != nil {
		return nil, err
	}
	compacted, err := h.syncChild(ctx, phaseCompacted, run, ch)
	if err != nil {
		return nil, fmt.Errorf("compacted: %w", err)
	}
	for _, r := range []childRun{cold, warm, compacted} {
		logf("run %d %-9s start→synced %6.0f ms, CPU %6.0f ms, restore %4.0f ms, prefix ranges %d, etcd %v; stop %4.0f ms, %4.0f ms CPU, %.0f B/object",
			run, r.Phase, ms(r.Sync.StartToSyncedNS), ms(r.Sync.CPUNS), ms(r.Sync.RestoreNS), r.Sync.RPC.PrefixRanges, r.Server,
			ms(r.Stop.WallNS), ms(r.Stop.CPUNS), float64(r.Stop.FileBytes)/float64(max(1, r.Stop.Objects)))
	}
	return []childRun{cold, warm, compacted}, nil
}

// profilePath is where a child's CPU profile goes, "" without
// -cpuprofile-dir or in the warm-up.
func (h *harness) profilePath(phase string, run int, what string) string {
	if h.cfg.ProfileDir == "" || run == 0 {
		return ""
	}
	return filepath.Join(h.cfg.ProfileDir, fmt.Sprintf("%s-run%d%s.pprof", phase, run, what))
}

// args returns the flags of a child of mode with Snapshot.Interval
// interval.
func (h *harness) args(mode string, interval time.Duration) []string {
	return []string{"-mode=" + mode, "-endpoint=" + h.endpoint, "-prefix=" + prefix, "-snapshot=" + h.snapshot,
		"-interval=" + interval.String(), "-timeout=" + h.cfg.Timeout.String()}
}

// syncChild runs one child of phase: it syncs, reports, stops (writing
// its snapshot) and reports again; then the parent reads etcd's counters
// and checks the child's cache against etcd.
func (h *harness) syncChild(ctx context.Context, phase string, run int, since changes) (childRun, error) {
	r := childRun{Phase: phase, Run: run, ChangedSince: since, Expected: h.keys.count()}
	args := h.args(modeSync, -1)
	if p := h.profilePath(phase, run, ""); p != "" {
		args = append(args, "-cpuprofile="+p, "-stopprofile="+h.profilePath(phase, run, "-stop"))
	}
	if phase == phaseCompacted {
		args = append(args, "-capture")
	}
	before, err := scrapeServer(ctx, h.endpoint)
	if err != nil {
		return r, err
	}
	args = append(args, "-start-ns="+strconv.FormatInt(time.Now().UnixNano(), 10))
	p, err := childproc.Start(h.cfg.Exe, args)
	if err != nil {
		return r, err
	}
	ok := false
	defer func() {
		if !ok {
			p.Kill()
		}
	}()
	if err := p.Expect(ctx, "SYNCED", h.cfg.Timeout, &r.Sync); err != nil {
		return r, err
	}
	if err := p.Send("STOP", nil); err != nil {
		return r, err
	}
	if err := p.Expect(ctx, "STOPPED", h.cfg.Timeout, &r.Stop); err != nil {
		return r, err
	}
	if err := p.Finish(); err != nil {
		return r, err
	}
	ok = true
	after, err := scrapeServer(ctx, h.endpoint)
	if err != nil {
		return r, err
	}
	r.Server = after.minus(before)
	d, err := etcdDigest(ctx, h.client, prefix, r.Sync.Version)
	if err != nil {
		return r, err
	}
	r.Equal = d == r.Sync.Digest && d.Objects == r.Expected
	if !r.Equal {
		return r, fmt.Errorf("%s child's cache differs from etcd at revision %s: %d objects (digest %x), etcd %d (%x), %d keys written",
			phase, r.Sync.Version, r.Sync.Digest.Objects, r.Sync.Digest.Sum, d.Objects, d.Sum, r.Expected)
	}
	return r, nil
}

// throughputRun is one throughput child's figures, with the writers'.
type throughputRun struct {
	Run      int              `json:"run"`
	Interval string           `json:"interval"` // Snapshot.Interval; negative: at stop only
	Periodic bool             `json:"periodic"`
	Writes   writesDone       `json:"writes"`
	Result   throughputResult `json:"result"`
}

// Kinds of throughput runs, as their profiles are named.
const (
	throughputPeriodic = "throughput-periodic"
	throughputAtStop   = "throughput-at-stop"
)

// kind names the mode of t.
func (t throughputRun) kind() string {
	if t.Periodic {
		return throughputPeriodic
	}
	return throughputAtStop
}

// throughputChild runs one throughput child with Snapshot.Interval
// interval: it syncs (from the snapshot), the writers write for the
// configured time (with UntilSnapshot, in a periodic run, also until the
// child has written a snapshot), and the child reports once it has handled
// every write.
func (h *harness) throughputChild(ctx context.Context, run int, interval time.Duration) (throughputRun, error) {
	tr := throughputRun{Run: run, Interval: interval.String(), Periodic: interval > 0}
	if !tr.Periodic {
		tr.Interval = "at stop"
	}
	args := h.args(modeThroughput, interval)
	if p := h.profilePath(tr.kind(), run, ""); p != "" {
		args = append(args, "-cpuprofile="+p)
	}
	args = append(args, "-start-ns="+strconv.FormatInt(time.Now().UnixNano(), 10))
	p, err := childproc.Start(h.cfg.Exe, args)
	if err != nil {
		return tr, err
	}
	ok := false
	defer func() {
		if !ok {
			p.Kill()
		}
	}()
	if err := p.Expect(ctx, "READY", h.cfg.Timeout, nil); err != nil {
		return tr, err
	}
	var until string
	if tr.Periodic && h.cfg.UntilSnapshot {
		until = h.snapshot
	}
	if tr.Writes, err = h.keys.writeFor(ctx, h.client, h.cfg.ThroughputTime, h.cfg.Writers, h.cfg.Batch, until, h.cfg.Timeout); err != nil {
		return tr, err
	}
	if err := p.Send("DONE", tr.Writes); err != nil {
		return tr, err
	}
	if err := p.Expect(ctx, "RESULT", h.cfg.Timeout, &tr.Result); err != nil {
		return tr, err
	}
	if err := p.Finish(); err != nil {
		return tr, err
	}
	ok = true
	res := tr.Result
	logf("throughput run %d, snapshots %-7s: %d writes, %.0f events/s handled, p99 %.1f ms, %d snapshots written (%.0f ms writing); handled while writing %.0f/s, while not %.0f/s; p99 sent while writing %.1f ms, while not %.1f ms",
		run, tr.Interval, tr.Writes.Writes, res.EventsPerSec, ms(res.P99NS), len(res.Snapshots), ms(res.InsideNS),
		res.InsidePerSec, res.OutsidePerSec, ms(res.SentInsideP99NS), ms(res.SentOutsideP99NS))
	return tr, nil
}

// ms converts nanoseconds to milliseconds.
func ms(ns int64) float64 { return float64(ns) / 1e6 }

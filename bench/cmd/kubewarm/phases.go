package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/ginformer/ginformer/bench/internal/childproc"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// Phases of a round, as the report names them.
const (
	phaseCold    = "cold"
	phaseWarm    = "warm"
	phaseReplica = "replica" // one of the warm replicas started together
	phaseExpired = "expired" // warm, from a snapshot older than the watch cache's window
)

// harness is the parent's state: the control plane, the pods and the
// snapshot files.
type harness struct {
	cfg        config
	env        *k8stest.Env
	meta       metadata.Interface
	procs      serverProcs
	pods       *podSet
	kubeconfig string
	dir        string // the snapshot files
}

// childRun is one child's figures, with the parent's.
type childRun struct {
	Phase   string `json:"phase"`
	Run     int    `json:"run"` // 0: warm-up
	Replica int    `json:"replica,omitempty"`
	// ChangedSince are the changes the parent made since the snapshot the
	// child starts from was written.
	ChangedSince changes    `json:"changedSince"`
	Sync         syncResult `json:"sync"`
	Stop         stopResult `json:"stop"`
	Server       window     `json:"server"`
	// Metrics are the apiserver's pod metrics over the child's whole life
	// (for replicas: the group's), and the watch cache's capacity before.
	Metrics  map[string]float64 `json:"metrics"`
	Equal    bool               `json:"equal"`    // the child's cache equals the server's pods
	Expected int                `json:"expected"` // pods on the server while the child ran
}

// window is the control plane's CPU around a child's (or a group's) start.
type window struct {
	IdleNS   int64     `json:"idleNs"`   // length of the idle window measured just before
	Idle     serverCPU `json:"idle"`     // CPU in it
	ToSynced serverCPU `json:"toSynced"` // the child's start → synced (a group: the last one)
	SyncedNS int64     `json:"syncedNs"` // that time, as the parent saw it
	Linger   serverCPU `json:"linger"`   // synced → synced + cfg.Linger
}

// idleFor returns the idle CPU scaled to d.
func (w window) idleFor(d int64) serverCPU {
	if w.IdleNS == 0 {
		return serverCPU{}
	}
	return w.Idle.scaled(float64(d) / float64(w.IdleNS))
}

// round runs: a cold child (no snapshot); changes; a warm child; changes;
// cfg.Replicas warm children at once; changes, an apiserver restart (a new
// watch cache, whose window starts after the snapshot) and a warm child
// that must relist. run is the round's number (0: warm-up).
func (h *harness) round(ctx context.Context, run int) ([]childRun, error) {
	snap := filepath.Join(h.dir, "informer.snap")
	replicaSnap := func(k int) string { return filepath.Join(h.dir, fmt.Sprintf("replica%d.snap", k)) }
	for _, p := range []string{snap, replicaSnap(1), replicaSnap(2), replicaSnap(3)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	var out []childRun
	cold, err := h.group(ctx, phaseCold, run, changes{}, []string{snap})
	if err != nil {
		return nil, fmt.Errorf("cold: %w", err)
	}
	out = append(out, cold...)
	ch, err := h.pods.change(ctx, h.env.Client, h.cfg.Changed, h.cfg.Writers)
	if err != nil {
		return nil, err
	}
	warm, err := h.group(ctx, phaseWarm, run, ch, []string{snap})
	if err != nil {
		return nil, fmt.Errorf("warm: %w", err)
	}
	out = append(out, warm...)
	if h.cfg.Replicas > 0 {
		var snaps []string
		for k := range h.cfg.Replicas {
			snaps = append(snaps, replicaSnap(k+1))
			if err := copyFile(snap, snaps[k]); err != nil {
				return nil, err
			}
		}
		if ch, err = h.pods.change(ctx, h.env.Client, h.cfg.Changed, h.cfg.Writers); err != nil {
			return nil, err
		}
		reps, err := h.group(ctx, phaseReplica, run, ch, snaps)
		if err != nil {
			return nil, fmt.Errorf("replicas: %w", err)
		}
		out = append(out, reps...)
		snap = snaps[0]
	}
	if h.cfg.Expire {
		if ch, err = h.pods.change(ctx, h.env.Client, h.cfg.Changed, h.cfg.Writers); err != nil {
			return nil, err
		}
		if err := h.restartAPIServer(ctx); err != nil {
			return nil, err
		}
		exp, err := h.group(ctx, phaseExpired, run, ch, []string{snap})
		if err != nil {
			return nil, fmt.Errorf("expired: %w", err)
		}
		out = append(out, exp...)
	}
	for _, r := range out {
		logf("run %d %-8s start→synced %6.0f ms, CPU %5.0f ms, restore %4.0f ms; apiserver %5.0f ms (idle %3.0f), +linger %4.0f ms; requests %v; decoded %d; stop %4.0f ms, %4.0f B/pod",
			run, r.Phase, ms(r.Sync.StartToSyncedNS), ms(r.Sync.CPUNS), ms(r.Sync.RestoreNS),
			ms(r.Server.ToSynced.APIServerNS), ms(r.Server.idleFor(r.Server.SyncedNS).APIServerNS), ms(r.Server.Linger.APIServerNS),
			r.Sync.Requests.ByKind, r.Sync.Decoded, ms(r.Stop.WallNS), float64(r.Stop.FileBytes)/float64(max(1, r.Stop.Objects)))
	}
	return out, nil
}

// restartAPIServer stops and starts kube-apiserver (etcd keeps running):
// its new watch cache starts from etcd's current revision, so a watch from
// any older resourceVersion is refused (410). It waits for the restarted
// server to quiet down.
func (h *harness) restartAPIServer(ctx context.Context) error {
	t0 := time.Now()
	if err := h.env.StopAPIServer(); err != nil {
		return fmt.Errorf("stop kube-apiserver: %w", err)
	}
	if err := h.env.StartAPIServer(); err != nil {
		return fmt.Errorf("start kube-apiserver: %w", err)
	}
	var err error
	if h.procs, err = findServerProcs(); err != nil {
		return err
	}
	// The first list of pods fills the new watch cache; then wait for the
	// start's work to settle.
	if _, err := h.env.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 1}); err != nil {
		return err
	}
	if err := h.procs.waitCPUQuiet(ctx, 0.1, 30*time.Second); err != nil {
		return err
	}
	logf("restarted kube-apiserver in %s", time.Since(t0).Round(100*time.Millisecond))
	return nil
}

// profilePath is where a child's CPU profile goes, "" without
// -cpuprofile-dir, in the warm-up, and for replicas.
func (h *harness) profilePath(phase string, run int) string {
	if h.cfg.ProfileDir == "" || run == 0 || phase == phaseReplica {
		return ""
	}
	return filepath.Join(h.cfg.ProfileDir, fmt.Sprintf("%s-run%d.pprof", phase, run))
}

// group runs one child per snapshot file, all started at once, and
// measures the control plane's CPU from the first start to the last
// synced; then stops them (each writes its snapshot), reads the
// apiserver's metrics and checks every child's cache against the server.
func (h *harness) group(ctx context.Context, phase string, run int, since changes, snaps []string) ([]childRun, error) {
	before, err := scrapeMetrics(ctx, h.env.Client)
	if err != nil {
		return nil, err
	}
	// The parent's last requests (the digest's list, the changes) keep the
	// apiserver busy for a while: wait for it to quiet down, then measure
	// its idle rate.
	if err := h.procs.waitCPUQuiet(ctx, 0.05, 20*time.Second); err != nil {
		return nil, err
	}
	var win window
	idle0, err := h.procs.cpu()
	if err != nil {
		return nil, err
	}
	time.Sleep(h.cfg.Idle)
	start, err := h.procs.cpu()
	if err != nil {
		return nil, err
	}
	win.IdleNS, win.Idle = h.cfg.Idle.Nanoseconds(), start.minus(idle0)

	runs := make([]childRun, len(snaps))
	ps := make([]*childproc.Proc, len(snaps))
	defer func() {
		for _, p := range ps {
			if p != nil {
				p.Kill()
			}
		}
	}()
	t0 := time.Now()
	for k, snap := range snaps {
		runs[k] = childRun{Phase: phase, Run: run, Replica: k, ChangedSince: since, Expected: h.pods.count()}
		args := []string{"-kubeconfig=" + h.kubeconfig, "-snapshot=" + snap, "-timeout=" + h.cfg.Timeout.String()}
		if p := h.profilePath(phase, run); p != "" {
			args = append(args, "-cpuprofile="+p)
		}
		if phase == phaseExpired {
			args = append(args, "-count-decodes")
		}
		args = append(args, "-start-ns="+strconv.FormatInt(time.Now().UnixNano(), 10))
		if ps[k], err = childproc.Start(h.cfg.Exe, args); err != nil {
			return nil, err
		}
	}
	// Each child says SYNCED the moment it has synced: the CPU is read
	// when the last one has.
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for k, p := range ps {
		wg.Go(func() { errs[k] = p.Expect(ctx, "SYNCED", h.cfg.Timeout, nil) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	synced, err := h.procs.cpu()
	if err != nil {
		return nil, err
	}
	win.ToSynced, win.SyncedNS = synced.minus(start), time.Since(t0).Nanoseconds()
	for k, p := range ps {
		if err := p.Expect(ctx, "RESULT", h.cfg.Timeout, &runs[k].Sync); err != nil {
			return nil, err
		}
	}
	if d := h.cfg.Linger - time.Since(t0.Add(time.Duration(win.SyncedNS))); d > 0 {
		time.Sleep(d)
	}
	linger, err := h.procs.cpu()
	if err != nil {
		return nil, err
	}
	win.Linger = linger.minus(synced)
	for k, p := range ps {
		wg.Go(func() {
			if errs[k] = p.Send("STOP", nil); errs[k] != nil {
				return
			}
			if errs[k] = p.Expect(ctx, "STOPPED", h.cfg.Timeout, &runs[k].Stop); errs[k] != nil {
				return
			}
			errs[k] = p.Finish()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	ps = nil
	after, err := scrapeMetrics(ctx, h.env.Client)
	if err != nil {
		return nil, err
	}
	d, err := h.serverDigest(ctx)
	if err != nil {
		return nil, err
	}
	for k := range runs {
		r := &runs[k]
		r.Server, r.Metrics = win, metricsDelta(before, after)
		r.Equal = d == r.Sync.Digest && d.Pods == r.Expected
		if !r.Equal {
			return nil, fmt.Errorf("%s child %d: its cache (%d pods, digest %x) differs from the server's (%d pods, %x; %d expected)",
				phase, k, r.Sync.Digest.Pods, r.Sync.Digest.Sum, d.Pods, d.Sum, r.Expected)
		}
	}
	return runs, nil
}

// podsResource is the resource of pods, for the metadata client.
var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// serverDigest lists the pods' metadata and returns their digest.
func (h *harness) serverDigest(ctx context.Context) (digest, error) {
	var d digest
	l, err := h.meta.Resource(podsResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return d, fmt.Errorf("list pods: %w", err)
	}
	for _, p := range l.Items {
		d.add(p.Namespace, p.Name, p.ResourceVersion)
	}
	return d, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// ms converts nanoseconds to milliseconds.
func ms(ns int64) float64 { return float64(ns) / 1e6 }

package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/ginformer/ginformer/informer"
)

// relistResult is what a child measured of its relist (-relist): from the
// moment it told the parent it was ready for the 410 ("ARMED") until the
// relist was applied.
type relistResult struct {
	// Lists is how many relists the child saw applied: ginformer's
	// Health().Lists increments; client-go's lists and streaming lists
	// sent (its transport), which the relist's updates then follow.
	Lists int64 `json:"lists"`
	// WallNS and CPUNS run from ARMED (the parent then stops and starts
	// the apiserver) until the relist is applied.
	WallNS int64 `json:"wallNs"`
	CPUNS  int64 `json:"cpuNs"`
	// Settled is the live heap (after two GCs) before the relist, Peak the
	// highest sampled heap objects (live and unswept) during it, After the
	// live heap after it (two GCs).
	Settled uint64 `json:"settled"`
	Peak    uint64 `json:"peak"`
	After   uint64 `json:"after"`
	// Decoded is the objects the relist decoded: client-go decodes every
	// listed object (its handler's updates are counted); ginformer's is
	// estimated from the sharing tables' lookups (per decoded object, as
	// in the sync and the watch phase). -1: unknown.
	Decoded float64 `json:"decoded"`
	// Updates is the handler's update calls during the relist.
	Updates int64 `json:"updates"`
	// Cause is the evidence of a 410: client-go's reflector's "Watch
	// closed" and "watch ended with error" log lines (it reports an expired
	// or very short watch nowhere else) and the errors its watch error
	// handler saw, or ginformer's error classes and last error.
	Cause []string `json:"cause"`
}

// watchErrors records the watch errors client-go's reflector reports.
type watchErrors struct {
	mu   sync.Mutex // guards errs
	errs []string
}

func (w *watchErrors) add(err error) {
	s := err.Error()
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		s = "410 expired: " + s
	}
	fmt.Fprintln(os.Stderr, "child client-go: watch error:", s)
	w.mu.Lock()
	w.errs = append(w.errs, s)
	w.mu.Unlock()
}

func (w *watchErrors) since(n int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n > len(w.errs) {
		return nil
	}
	return append([]string(nil), w.errs[n:]...)
}

func (w *watchErrors) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.errs)
}

// klogTap copies klog's output to stderr and records client-go's
// reflector's "Watch closed" lines (an expired watch) and "watch ended with
// error" lines (a very short watch, which it relists after too: a re-watch
// the stopping apiserver accepted) in w.
type klogTap struct{ w *watchErrors }

func (t klogTap) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"Watch closed"`)) || bytes.Contains(p, []byte(`"Warning: watch ended with error"`)) {
		t.w.mu.Lock()
		t.w.errs = append(t.w.errs, strings.TrimSpace(string(p)))
		t.w.mu.Unlock()
	}
	return os.Stderr.Write(p)
}

// healthReader is ginformer's informer, as the relist reads it.
type healthReader interface{ Health() informer.Health }

// measureRelist tells the parent it is ready ("ARMED"), which then makes
// the informer's watch fail with 410 Gone, and measures until the relist
// is applied: ginformer's Health().Lists increments; client-go has sent a
// list (or streaming list) and its handler has seen an update of every pod
// (client-go delivers every relisted object as an update).
func measureRelist(ctx context.Context, lib string, keep any, c *counter, wl *wireLog, pods int, timeout time.Duration) (*relistResult, error) {
	hr, _ := keep.(healthReader)
	if lib != libClientGo && hr == nil {
		return nil, fmt.Errorf("-relist: %s's informer has no Health", lib)
	}
	var rr relistResult
	lists := func() int64 {
		if hr != nil {
			return hr.Health().Lists
		}
		return wl.lists()
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	rr.Settled = ms.HeapAlloc
	lists0, upd0, errs0 := lists(), c.nUpd.Load(), c.watchErrs.len()
	var look0 uint64
	if c.lookups != nil {
		look0 = c.lookups()
	}
	if hr == nil {
		// client-go's reflector reports an expired watch at V(4) only
		// ("Watch closed"), not to the watch error handler.
		var kfs flag.FlagSet
		klog.InitFlags(&kfs)
		if err := kfs.Set("v", "4"); err != nil {
			return nil, err
		}
		if err := kfs.Set("logtostderr", "false"); err != nil {
			return nil, err
		}
		klog.SetOutput(klogTap{&c.watchErrs})
	}
	stop, peak := sampleHeap()
	cpu0, t0 := cpuNS(), time.Now()
	fmt.Println("ARMED")
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for {
		done := lists() > lists0
		if done && hr == nil {
			done = c.nUpd.Load()-upd0 >= int64(pods)
		}
		if done {
			break
		}
		select {
		case <-ctx.Done():
			stop()
			return nil, ctx.Err()
		case <-deadline:
			stop()
			return nil, fmt.Errorf("no relist applied %s after ARMED (lists %d → %d, updates %d)", timeout, lists0, lists(), c.nUpd.Load()-upd0)
		case <-tick.C:
		}
	}
	rr.CPUNS, rr.WallNS = cpuNS()-cpu0, time.Since(t0).Nanoseconds()
	stop()
	rr.Peak = <-peak
	rr.Lists = lists() - lists0
	rr.Updates = c.nUpd.Load() - upd0
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	rr.After = ms.HeapAlloc
	switch {
	case hr == nil:
		rr.Decoded = float64(rr.Updates)
		rr.Cause = c.watchErrs.since(errs0)
	case c.lookups != nil && look0 > 0:
		// Lookups per decoded object so far: the sync's pods and the watch
		// phase's updates.
		per := float64(look0) / float64(int64(pods)+upd0)
		rr.Decoded = float64(c.lookups()-look0) / per
		rr.Cause = ginformerCause(hr.Health())
	default:
		rr.Decoded = -1
		rr.Cause = ginformerCause(hr.Health())
	}
	return &rr, nil
}

// ginformerCause describes the errors ginformer's informer survived, by
// class, and its last one.
func ginformerCause(h informer.Health) []string {
	var out []string
	for class, n := range h.Errors {
		out = append(out, fmt.Sprintf("%s ×%d", class, n))
	}
	if h.LastError != nil {
		s := h.LastError.Error()
		if errors.Is(h.LastError, informer.ErrExpired) {
			s = "410 expired: " + s
		}
		out = append(out, "last: "+s)
	}
	return append(out, fmt.Sprintf("watch restarts %d", h.WatchRestarts))
}

// phases are the child's optional steps beyond the sync and the watch
// phase: a runtime/trace of the watch phase (-trace) and the relist
// (-relist).
type phases struct {
	trace  string
	relist bool
}

// lists counts the lists and streaming lists the child's transport saw.
func (w *wireLog) lists() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var n int64
	for k, v := range w.seen {
		if strings.HasPrefix(k, "list ") || strings.HasPrefix(k, "streaming list ") {
			n += int64(v)
		}
	}
	return n
}

// relistMeasure is a relist's figures, in the table's units.
type relistMeasure struct {
	cpuMS, wallMS              float64
	settledMB, peakMB, afterMB float64
	peakOverSettled, decoded   float64
	lists, updates             float64
}

func newRelistMeasure(rr *relistResult) relistMeasure {
	m := relistMeasure{
		cpuMS: float64(rr.CPUNS) / 1e6, wallMS: float64(rr.WallNS) / 1e6,
		settledMB: float64(rr.Settled) / 1e6, peakMB: float64(rr.Peak) / 1e6, afterMB: float64(rr.After) / 1e6,
		decoded: rr.Decoded, lists: float64(rr.Lists), updates: float64(rr.Updates),
	}
	if rr.Settled > 0 {
		m.peakOverSettled = float64(rr.Peak) / float64(rr.Settled)
	}
	return m
}

// relistRows are the table's rows of the relist phase (-relist).
var relistRows = []row{
	{"relist: lists applied", "", func(m measure) float64 { return m.relist.lists }},
	{"relist: CPU, apiserver stop → relist applied", "ms", func(m measure) float64 { return m.relist.cpuMS }},
	{"relist: wall, apiserver stop → relist applied", "ms", func(m measure) float64 { return m.relist.wallMS }},
	{"relist: settled live heap before", "MB", func(m measure) float64 { return m.relist.settledMB }},
	{"relist: peak heap (objects) during", "MB", func(m measure) float64 { return m.relist.peakMB }},
	{"relist: peak / settled", "×", func(m measure) float64 { return m.relist.peakOverSettled }},
	{"relist: live heap after", "MB", func(m measure) float64 { return m.relist.afterMB }},
	{"relist: objects decoded", "objects", func(m measure) float64 { return m.relist.decoded }},
	{"relist: handler updates", "calls", func(m measure) float64 { return m.relist.updates }},
}

// rows are the table's rows: the sync's and the watch phase's, and the
// relist's with -relist.
func (r *report) rows() []row {
	if !r.cfg.Relist {
		return rows
	}
	return append(slices.Clip(rows), relistRows...)
}

// relistNote describes the relist phase for the report ("" without it).
func (r *report) relistNote() string {
	if !r.cfg.Relist {
		return ""
	}
	return " Relist phase (-relist): after the watch phase, the parent writes a ConfigMap and restarts kube-apiserver " +
		"(etcd keeps running); the new watch cache starts at etcd's current revision, so each child's re-watch from " +
		"its older version fails with 410 Gone and it relists. Measured in the child from its signal to the parent " +
		"(just before the apiserver stops) until the relist is applied (ginformer: Health().Lists increments; " +
		"client-go: a list or streaming list was sent and the handler saw an update of every pod); peak heap is " +
		"the highest sampled /memory/classes/heap/objects:bytes (live and unswept), settled the live heap after two GCs " +
		"before; client-go decodes every listed object, ginformer's decoded objects are estimated from its sharing " +
		"tables' lookups per decoded object."
}

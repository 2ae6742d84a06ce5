package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/trace"
	"strconv"
	"time"
)

// pacer spaces the watch phase's writes at a fixed offered rate
// (-update-rate): write k is not sent before start + k/rate, whichever
// writer takes it. The schedule is open-loop: a writer that falls behind
// sends at once, so the achieved rate is the offered one for as long as the
// writers and the server keep up, and lower (by the writes' latency over
// the writers) when they do not. The zero pacer (rate 0) does not wait:
// the writers go as fast as they can.
type pacer struct {
	start time.Time
	every time.Duration // 0: no pacing
}

// newPacer returns a pacer of rate writes per second starting now; rate 0
// does not pace.
func newPacer(rate int) pacer {
	p := pacer{start: time.Now()}
	if rate > 0 {
		p.every = time.Second / time.Duration(rate)
	}
	return p
}

// wait blocks until write k's turn, or until ctx is done.
func (p pacer) wait(ctx context.Context, k int) error {
	if p.every == 0 {
		return ctx.Err()
	}
	d := time.Until(p.start.Add(time.Duration(k) * p.every))
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// achievedRate is the rate the writes were made at: their number over the
// time from the first sent to the last answered, in writes per second; 0
// for fewer than two.
func achievedRate(writes []update) float64 {
	if len(writes) < 2 {
		return 0
	}
	first, last := writes[0].Sent, writes[0].NS
	for _, w := range writes {
		first, last = min(first, w.Sent), max(last, w.NS)
	}
	if last <= first {
		return 0
	}
	return float64(len(writes)) / (float64(last-first) / 1e9)
}

// startTrace starts a runtime/trace written to path ("" does nothing);
// stop ends it and closes the file.
func startTrace(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := trace.Start(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	// The wall clock at a trace time: the handler's updates are logged
	// with their wall-clock time (traceUpdate), the parent's writes saved
	// beside the trace (saveWrites).
	trace.Log(context.Background(), "wall", strconv.FormatInt(time.Now().UnixNano(), 10))
	return func() error {
		trace.Stop()
		return f.Close()
	}, nil
}

// offered describes the watch phase's offered rate for the report.
func (r *report) offered() string {
	if r.cfg.UpdateRate == 0 {
		return "as fast as they go (no -update-rate)"
	}
	return fmt.Sprintf("offered at %d/s (-update-rate: a shared schedule, write k sent at k/rate; the achieved rate is "+
		"below when the writers or the server fall behind)", r.cfg.UpdateRate)
}

// withProjection adds ginformer caching the projection after ps's
// ginformer column when cfg.WithProjection is set.
func withProjection(cfg config, ps []participant) []participant {
	if !cfg.WithProjection || cfg.Projection {
		return ps
	}
	return append(ps, participant{name: libProjection, exe: cfg.Exe, args: []string{"-lib=" + libProjection}})
}

// projectionRatios are the ratio columns of the projection column
// (-with-projection): over client-go, and over the next client-go's slim
// transform when it runs.
func (r *report) projectionRatios() [][2]string {
	if r.results[libProjection] == nil {
		return nil
	}
	q := [][2]string{{libProjection, libClientGo}}
	if r.results[colNextSlim] != nil {
		q = append(q, [2]string{libProjection, colNextSlim})
	}
	return q
}

// traceUpdate logs the handler's call for the update at resourceVersion rv
// (at wall-clock now, Unix ns) in the runtime/trace, if one is running:
// with the writes the parent saved, a slow event can be found in the trace.
func traceUpdate(rv string, now int64) {
	if trace.IsEnabled() {
		trace.Log(context.Background(), "update", rv+" "+strconv.FormatInt(now, 10))
	}
}

// writeRecord is a watch-phase write as saved beside a trace: its
// resourceVersion, when it was sent and when its response arrived (Unix
// ns).
type writeRecord struct {
	RV   string `json:"rv"`
	Sent int64  `json:"sent"`
	Resp int64  `json:"resp"`
}

// saveWrites writes the watch phase's writes as JSON to path (-trace-dir).
func saveWrites(path string, writes []update) error {
	recs := make([]writeRecord, len(writes))
	for i, w := range writes {
		recs[i] = writeRecord{RV: w.RV, Sent: w.Sent, Resp: w.NS}
	}
	b, err := json.Marshal(recs)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

package main

import (
	"context"
	"fmt"
	"os"
	"runtime/trace"
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

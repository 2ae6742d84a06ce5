package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/metrics"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/bench/internal/childmetrics"
	"github.com/ginformer/ginformer/bench/internal/childproc"
)

// The throughput phase: a child syncs (from the snapshot) and its handler
// records every update, while the parent's writers put values as fast as
// they can for a fixed time; the child's informer writes a snapshot every
// Interval, or only at stop. Each write carries the time it was sent, so
// the handler measures write → handler latency itself.

// writesDone is what the parent tells the child once its writers stopped.
type writesDone struct {
	Writes  int64 `json:"writes"`
	LastRev int64 `json:"lastRev"`
	StartNS int64 `json:"startNs"` // the first write sent (Unix ns)
	EndNS   int64 `json:"endNs"`   // the last write answered
	// SnapshotReplaced: the writers went on until the snapshot file was
	// replaced, and it was, after StartNS and before EndNS. The child then
	// waits for that write's log line before it reports.
	SnapshotReplaced bool `json:"snapshotReplaced,omitempty"`
}

// throughputResult is what a throughput child measured.
type throughputResult struct {
	Sync          syncResult      `json:"sync"`
	Events        int64           `json:"events"` // updates handled
	EventsPerSec  float64         `json:"eventsPerSec"`
	P50NS         int64           `json:"p50Ns"`
	P99NS         int64           `json:"p99Ns"`
	MaxNS         int64           `json:"maxNs"`
	LagNS         int64           `json:"lagNs"` // the last write answered → its event handled
	CPUNS         int64           `json:"cpuNs"` // the child's CPU from READY to the last event handled
	Snapshots     []snapshotWrite `json:"snapshots"`
	InsideNS      int64           `json:"insideNs"` // time of the writing period with a snapshot being written
	InsideEvents  int64           `json:"insideEvents"`
	InsideP99NS   int64           `json:"insideP99Ns"`
	OutsideEvents int64           `json:"outsideEvents"`
	OutsideP99NS  int64           `json:"outsideP99Ns"`
	InsidePerSec  float64         `json:"insidePerSec"`
	OutsidePerSec float64         `json:"outsidePerSec"`
	// p99 of the events whose write was sent while a snapshot was being
	// written, and of the others.
	SentInsideP99NS  int64 `json:"sentInsideP99Ns"`
	SentOutsideP99NS int64 `json:"sentOutsideP99Ns"`
	// The garbage collector from READY to the last event handled: cycles
	// and the runtime's estimate of its CPU.
	GCCycles     uint64  `json:"gcCycles"`
	GCCPUSeconds float64 `json:"gcCpuSeconds"`
	// Timeline has the events handled in each 100 ms from the first write,
	// with their largest latency.
	Timeline []bucket `json:"timeline"`
}

// bucket is 100 ms of a throughput run.
type bucket struct {
	Events   int     `json:"events"`
	MaxLatMS float64 `json:"maxLatMs"`
}

// gcStats reads the garbage collector's cycles and CPU so far.
func gcStats() (uint64, float64) {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Float64()
}

// snapshotWrite is one snapshot the informer wrote while the writers ran.
type snapshotWrite struct {
	StartNS int64 `json:"startNs"`
	EndNS   int64 `json:"endNs"`
	Bytes   int64 `json:"bytes"`
}

// throughput is the child's side: READY, then the parent's DONE, then
// the figures, then the stop. profile, if set, receives the CPU profile
// from READY to the last event handled.
func (p *program) throughput(ctx context.Context, cmds <-chan string, res syncResult, profile string) error {
	stopProfile := func() error { return nil }
	if profile != "" {
		var err error
		if stopProfile, err = startProfile(profile); err != nil {
			return err
		}
	}
	cpu0 := childmetrics.CPUNS()
	gc0, gcCPU0 := gcStats()
	p.calls.recording.Store(true)
	if err := childproc.Say("READY", res); err != nil {
		return err
	}
	var done writesDone
	if err := childproc.AwaitCommand(cmds, "DONE", &done); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := p.inf.WaitForVersion(wctx, strconv.FormatInt(done.LastRev, 10)); err != nil {
		return fmt.Errorf("waiting for revision %d: %w", done.LastRev, err)
	}
	for p.reg.Backlog() > 0 {
		if wctx.Err() != nil {
			return fmt.Errorf("the handler's backlog: %d", p.reg.Backlog())
		}
		time.Sleep(time.Millisecond)
	}
	// The informer logs a snapshot just after its file is renamed into
	// place: the parent may have seen the file before the line is written.
	for done.SnapshotReplaced && !slices.ContainsFunc(p.log.Find("snapshot written"), func(l childmetrics.LogLine) bool {
		return l.Time.UnixNano() >= done.StartNS
	}) {
		if wctx.Err() != nil {
			return errors.New("the parent saw the snapshot file replaced while it wrote, but no snapshot was logged")
		}
		time.Sleep(time.Millisecond)
	}
	out := throughputResult{Sync: res, CPUNS: childmetrics.CPUNS() - cpu0}
	gc1, gcCPU1 := gcStats()
	out.GCCycles, out.GCCPUSeconds = gc1-gc0, gcCPU1-gcCPU0
	if err := stopProfile(); err != nil {
		return err
	}
	p.calls.recording.Store(false)
	p.calls.mu.Lock()
	handled, lat := p.calls.handled, p.calls.latency
	p.calls.mu.Unlock()
	for _, l := range p.log.Find("snapshot written") {
		end := l.Time.UnixNano()
		bytes, _ := strconv.ParseInt(fmt.Sprint(l.Attrs["bytes"]), 10, 64)
		out.Snapshots = append(out.Snapshots, snapshotWrite{StartNS: end - int64(l.Duration("took")), EndNS: end, Bytes: bytes})
	}
	out.summarize(handled, lat, done)
	if err := childproc.Say("RESULT", out); err != nil {
		return err
	}
	p.cancel()
	return <-p.done
}

// summarize derives the rates and latencies from the handled events.
func (out *throughputResult) summarize(handled, lat []int64, done writesDone) {
	out.Events = int64(len(handled))
	if len(handled) == 0 {
		return
	}
	last := slices.Max(handled)
	out.EventsPerSec = float64(len(handled)) / (float64(last-done.StartNS) / 1e9)
	out.LagNS = last - done.EndNS
	out.Timeline = make([]bucket, (last-done.StartNS)/1e8+1)
	for i, t := range handled {
		if t < done.StartNS {
			continue
		}
		b := &out.Timeline[(t-done.StartNS)/1e8]
		b.Events++
		b.MaxLatMS = max(b.MaxLatMS, ms(lat[i]))
	}
	out.P50NS, out.P99NS, out.MaxNS = quantileNS(lat, 0.5), quantileNS(lat, 0.99), slices.Max(lat)
	// Within the writing period, events handled while a snapshot was being
	// written and while none was.
	for _, s := range out.Snapshots {
		lo, hi := max(s.StartNS, done.StartNS), min(s.EndNS, done.EndNS)
		if hi > lo {
			out.InsideNS += hi - lo
		}
	}
	var in, outside []int64
	for i, t := range handled {
		if t < done.StartNS || t > done.EndNS {
			continue
		}
		if within(out.Snapshots, t) {
			in = append(in, lat[i])
		} else {
			outside = append(outside, lat[i])
		}
	}
	// Latency by when the write was sent: an event sent while a snapshot
	// was being written may be handled after it, and its wait counts.
	var sentIn, sentOut []int64
	for i, t := range handled {
		if sent := t - lat[i]; within(out.Snapshots, sent) {
			sentIn = append(sentIn, lat[i])
		} else {
			sentOut = append(sentOut, lat[i])
		}
	}
	out.SentInsideP99NS, out.SentOutsideP99NS = quantileNS(sentIn, 0.99), quantileNS(sentOut, 0.99)
	out.InsideEvents, out.OutsideEvents = int64(len(in)), int64(len(outside))
	out.InsideP99NS, out.OutsideP99NS = quantileNS(in, 0.99), quantileNS(outside, 0.99)
	if out.InsideNS > 0 {
		out.InsidePerSec = float64(len(in)) / (float64(out.InsideNS) / 1e9)
	}
	if rest := done.EndNS - done.StartNS - out.InsideNS; rest > 0 {
		out.OutsidePerSec = float64(len(outside)) / (float64(rest) / 1e9)
	}
}

// within reports whether t (Unix ns) falls in one of the writes.
func within(ws []snapshotWrite, t int64) bool {
	for _, s := range ws {
		if t >= s.StartNS && t <= s.EndNS {
			return true
		}
	}
	return false
}

// quantileNS returns the q quantile of xs (nearest rank); 0 if empty. It
// sorts xs.
func quantileNS(xs []int64, q float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(q*float64(len(xs))+0.5) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

// writeFor updates present keys from writers goroutines, as fast as etcd
// answers, for d: each writer sends one transaction of batch puts at a
// time (batch 1: a plain Put). Each writer owns the keys whose index is
// its number modulo writers, and cycles through them. With a snapshot
// path, the writers go on after d until the file there has been replaced
// since they started (the informer renames each snapshot into place), for
// at most limit; out.SnapshotReplaced says whether it was.
func (k *keys) writeFor(ctx context.Context, c *clientv3.Client, d time.Duration, writers, batch int, snapshot string, limit time.Duration) (writesDone, error) {
	var (
		mu   sync.Mutex
		out  writesDone
		errs = make([]error, writers)
		wg   sync.WaitGroup
	)
	start := time.Now()
	out.StartNS = start.UnixNano()
	deadline := start.Add(d)
	replaced := func() bool { return false }
	more := replaced // go on past the deadline
	if snapshot != "" {
		replaced = fileReplaced(snapshot) // after StartNS: a replacement seen is a write after it
		end := start.Add(max(d, limit))
		more = func() bool { return time.Now().Before(end) && !replaced() }
	}
	for w := range writers {
		var mine []int
		for i, ok := range k.present {
			if ok && i%writers == w {
				mine = append(mine, i)
			}
		}
		batch := min(batch, len(mine))
		wg.Go(func() {
			var n, rev int64
			ops := make([]clientv3.Op, batch)
			for j := 0; (time.Now().Before(deadline) || more()) && batch > 0; {
				sent := time.Now().UnixNano()
				for o := range ops {
					i := mine[j%len(mine)]
					j++
					k.gens[i]++
					b, err := codec.Encode(newSvc(i, k.gens[i], sent))
					if err != nil {
						errs[w] = err
						return
					}
					ops[o] = clientv3.OpPut(svcKey(k.prefix, i), string(b))
				}
				var r int64
				var err error
				if batch == 1 {
					var resp clientv3.OpResponse
					if resp, err = c.Do(ctx, ops[0]); err == nil {
						r = resp.Put().Header.Revision
					}
				} else {
					var resp *clientv3.TxnResponse
					if resp, err = c.Txn(ctx).Then(ops...).Commit(); err == nil {
						r = resp.Header.Revision
					}
				}
				if err != nil {
					errs[w] = err
					return
				}
				n, rev = n+int64(batch), max(rev, r)
			}
			mu.Lock()
			out.Writes += n
			out.LastRev = max(out.LastRev, rev)
			mu.Unlock()
		})
	}
	wg.Wait()
	out.SnapshotReplaced = replaced()
	out.EndNS = time.Now().UnixNano()
	for _, err := range errs {
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// fileReplaced returns a function that reports whether the file at path
// has been replaced (or created) since fileReplaced was called: another
// file renamed over it, as the informer writes each snapshot. Once true it
// stays true. Safe for concurrent use.
func fileReplaced(path string) func() bool {
	before, _ := os.Stat(path) // nil if absent
	var seen atomic.Bool
	return func() bool {
		if seen.Load() {
			return true
		}
		now, err := os.Stat(path)
		if err != nil || (before != nil && os.SameFile(before, now)) {
			return false
		}
		seen.Store(true)
		return true
	}
}

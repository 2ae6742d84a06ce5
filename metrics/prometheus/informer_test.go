package prometheus_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ginformer/ginformer/informer"
	informerprom "github.com/ginformer/ginformer/metrics/prometheus"
	"github.com/ginformer/ginformer/source/memory"
)

type pod struct {
	Name  string
	Phase string
}

func podKey(p *pod) (string, error) { return p.Name, nil }

// handlerCallTime is how long every call of the "slow" handler sleeps.
const handlerCallTime = 6 * time.Millisecond

// stuckThreshold is the informer's StuckHandlerThreshold: the gated call
// runs past it. (A loaded machine running the race detector may delay
// another call past it too.)
const stuckThreshold = 500 * time.Millisecond

// A real informer over the memory source, a known sequence of changes and
// failures, and the values read back from a real scrape: every metric the
// informer reports is exposed with its conventional name and labels.
func TestInformerScrape(t *testing.T) {
	src, err := memory.New(memory.Options[string, *pod]{KeyFunc: podKey, BookmarkInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	mustPut := func(name, phase string) string {
		t.Helper()
		v, err := src.Put(&pod{name, phase})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, name := range []string{"a", "b", "c"} {
		mustPut(name, "Pending")
	}

	m, err := informerprom.New(informerprom.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	s := newScraper(t, reg)

	inf, err := informer.NewSharedInformer(informer.Options[string, *pod]{
		Name: "pods", Source: src, KeyFunc: podKey, Metrics: m,
		Logger:                logr.FromSlogHandler(slog.DiscardHandler), // the panic and the stuck call are expected
		StuckHandlerThreshold: stuckThreshold,
		ListWatch: informer.ListWatchOptions{
			DisableStreamingList: true, // one plain list: a known count of lists and events
			Backoff:              informer.Backoff{Initial: 10 * time.Millisecond, Max: 20 * time.Millisecond},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var slowCalls atomic.Int64
	_, err = inf.AddHandler(informer.HandlerFuncs[string, *pod]{
		AddFunc:    func(*pod, bool) { slowCalls.Add(1); time.Sleep(handlerCallTime) },
		UpdateFunc: func(_, _ *pod) { slowCalls.Add(1); time.Sleep(handlerCallTime) },
		DeleteFunc: func(informer.Deletion[string, *pod]) { slowCalls.Add(1); time.Sleep(handlerCallTime) },
	}, informer.HandlerOptions{Name: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = inf.AddHandler(informer.HandlerFuncs[string, *pod]{
		AddFunc: func(p *pod, _ bool) {
			if p.Name == "boom" {
				panic("boom")
			}
		},
	}, informer.HandlerOptions{Name: "panicky"})
	if err != nil {
		t.Fatal(err)
	}
	gateEntered, gateRelease := make(chan struct{}), make(chan struct{})
	_, err = inf.AddHandler(informer.HandlerFuncs[string, *pod]{
		AddFunc: func(p *pod, _ bool) {
			if p.Name == "gate" {
				close(gateEntered)
				<-gateRelease
			}
		},
	}, informer.HandlerOptions{Name: "gated"})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	beforeRun := time.Now()
	go func() { done <- inf.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	// Runs before the deferred wait for Run: a test failing while the gated
	// handler is blocked must not leave Run waiting for it.
	release := sync.OnceFunc(func() { close(gateRelease) })
	defer release()
	wait := func(what string, version string) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
		defer wcancel()
		if err := inf.WaitForVersion(wctx, version); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// 1. The first list: one list, the time to sync, the version applied.
	if err := informer.WaitForSync(ctx, inf); err != nil {
		t.Fatal(err)
	}
	// Synced is reported just after the informer's Synced channel closes,
	// and the reflector counts a list once it has handed it to the queue,
	// possibly after the sync: wait for both.
	e := s.waitFor(t, "the time to sync and the first list", func(e exposition) bool {
		return e.series("ginformer_initial_sync_duration_seconds", "informer", "pods") != nil &&
			e.get("ginformer_lists_total", "informer", "pods") == 1
	})
	sinceRun := time.Since(beforeRun)
	if got := e.value(t, "ginformer_initial_sync_duration_seconds", "informer", "pods"); got <= 0 || got > sinceRun.Seconds() {
		t.Errorf("initial sync took %vs, want in (0, %v]", got, sinceRun.Seconds())
	}
	// VersionApplied is reported just after the version is applied (and
	// waiters woken): wait for it too.
	e = s.waitFor(t, "the list's version applied", func(e exposition) bool {
		return e.get("ginformer_last_applied_version_timestamp_seconds", "informer", "pods") >= unix(beforeRun)
	})
	if got := e.value(t, "ginformer_last_applied_version_timestamp_seconds", "informer", "pods"); got > unix(time.Now()) {
		t.Errorf("last applied version at %v, in the future", got)
	}

	// 2. One event of each kind.
	mustPut("d", "Pending")
	mustPut("a", "Running")
	v, _ := src.Delete("b")
	beforeApplied := time.Now()
	wait("add, update, delete", v)
	e = s.waitFor(t, "the delete's version applied", func(e exposition) bool {
		return e.get("ginformer_last_applied_version_timestamp_seconds", "informer", "pods") >= unix(beforeApplied)
	})
	for _, typ := range []string{"added", "modified", "deleted"} {
		if got := e.value(t, "ginformer_watch_events_total", "informer", "pods", "type", typ); got != 1 {
			t.Errorf("%s events: %v, want 1", typ, got)
		}
	}

	// 3. A watch the server drops is re-opened from the last version.
	src.DropWatches()
	s.waitFor(t, "a watch restart", func(e exposition) bool {
		return e.get("ginformer_watch_restarts_total", "informer", "pods") == 1
	})

	// 4. A handler panics.
	wait("boom", mustPut("boom", "Pending"))
	s.waitFor(t, "a handler error", func(e exposition) bool {
		return e.get("ginformer_errors_total", "informer", "pods", "class", "handler") == 1
	})

	// 5. The watch breaks with an expired version and the next list fails
	// once: an error event, an expired and a transient error, a relist.
	src.FailNextList(fmt.Errorf("no route to host: %w", informer.ErrTransient))
	src.BreakWatches(fmt.Errorf("compacted: %w", informer.ErrExpired))
	s.waitFor(t, "the relist", func(e exposition) bool {
		return e.get("ginformer_lists_total", "informer", "pods") == 2
	})

	// 6. A handler blocked in a call: its backlog grows while the others
	// keep up, and the call is reported stuck.
	mustPut("gate", "Pending")
	select {
	case <-gateEntered:
	case <-time.After(20 * time.Second):
		t.Fatalf("the gated handler was not called; the exposition has:\n%s", s.scrape(t).names())
	}
	var last string
	for i := range 3 {
		last = mustPut(fmt.Sprint("x", i), "Pending")
	}
	wait("the puts behind the gate", last)
	if got := s.scrape(t).value(t, "ginformer_handler_backlog", "informer", "pods", "handler", "gated"); got != 3 {
		t.Errorf("gated backlog: %v, want 3", got)
	}
	gatedStuck := func() bool {
		for _, h := range inf.Health().Handlers {
			if h.Name == "gated" {
				return h.StuckCalls == 1
			}
		}
		return false
	}
	for deadline := time.Now().Add(20 * time.Second); !gatedStuck(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the gated call was not reported stuck: %+v", inf.Health().Handlers)
		}
	}
	release()

	// Every handler catches up: backlogs and queue back to 0.
	// The relist carries no update: the memory source gives per-object
	// versions, and no object changed.
	const calls = 3 + 3 + 1 + 1 + 3 // initial adds, step 2, boom, gate, x0-x2
	e = s.waitFor(t, "the handlers to catch up", func(e exposition) bool {
		for _, h := range []string{"slow", "panicky", "gated"} {
			if e.series("ginformer_handler_backlog", "informer", "pods", "handler", h) == nil ||
				e.get("ginformer_handler_backlog", "informer", "pods", "handler", h) != 0 {
				return false
			}
			m := e.series("ginformer_handler_call_duration_seconds", "informer", "pods", "handler", h)
			if m == nil || m.GetHistogram().GetSampleCount() != calls {
				return false
			}
		}
		return true
	})
	if n := slowCalls.Load(); n != calls {
		t.Errorf("the slow handler was called %d times, want %d", n, calls)
	}

	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"ginformer_watch_events_total", []string{"type", "added"}, 1 + 1 + 1 + 3}, // d, boom, gate, x0-x2
		{"ginformer_watch_events_total", []string{"type", "modified"}, 1},
		{"ginformer_watch_events_total", []string{"type", "deleted"}, 1},
		{"ginformer_watch_events_total", []string{"type", "error"}, 1},
		{"ginformer_lists_total", nil, 2},
		{"ginformer_watch_restarts_total", nil, 1},
		{"ginformer_errors_total", []string{"class", "handler"}, 1},
		{"ginformer_errors_total", []string{"class", "expired"}, 1},
		{"ginformer_errors_total", []string{"class", "transient"}, 1},
		{"ginformer_queue_depth", nil, 0},
	} {
		labels := append([]string{"informer", "pods"}, c.labels...)
		if got := e.value(t, c.name, labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, labels, got, c.want)
		}
	}
	if e.series("ginformer_watch_events_total", "informer", "pods", "type", "bookmark") != nil {
		t.Error("bookmarks counted; the source sends none")
	}
	// Every stuck call is counted: the gated one, and any other call a
	// loaded machine delayed past the threshold.
	var stuck int64
	for _, h := range inf.Health().Handlers {
		stuck += h.StuckCalls
	}
	if got := e.value(t, "ginformer_errors_total", "informer", "pods", "class", "handler_stuck"); got != float64(stuck) || stuck < 1 {
		t.Errorf("stuck calls: %v counted, %d in Health; want the same, at least 1", got, stuck)
	}
	if got := len(e["ginformer_errors_total"].GetMetric()); got != 4 {
		t.Errorf("%d error classes, want 4:\n%s", got, e.names())
	}

	// Every call of the slow handler took at least handlerCallTime.
	h := e.histogram(t, "ginformer_handler_call_duration_seconds", "informer", "pods", "handler", "slow")
	if n := bucket(t, h, 0.005); n != 0 {
		t.Errorf("%d slow calls took 5 ms or less; each sleeps %v", n, handlerCallTime)
	}
	if min := float64(calls) * handlerCallTime.Seconds(); h.GetSampleSum() < min {
		t.Errorf("slow calls took %vs in all, want at least %vs", h.GetSampleSum(), min)
	}
	// The gated call took at least the stuck threshold.
	g := e.histogram(t, "ginformer_handler_call_duration_seconds", "informer", "pods", "handler", "gated")
	if n := bucket(t, g, 0.25); n > calls-1 {
		t.Errorf("gated calls of 250 ms or less: %d, want at most all but the gated one (%d)", n, calls-1)
	}
	if g.GetSampleSum() < stuckThreshold.Seconds() {
		t.Errorf("gated calls took %vs in all, less than the gated one alone (%v)", g.GetSampleSum(), stuckThreshold)
	}
	if p := e.histogram(t, "ginformer_processing_latency_seconds", "informer", "pods"); p.GetSampleCount() == 0 {
		t.Error("no batch processing observed")
	}
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

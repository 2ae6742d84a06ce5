package prometheus_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ginformer/ginformer/informer"
	informerprom "github.com/ginformer/ginformer/metrics/prometheus"
)

func newRegistered(t *testing.T, opts informerprom.Options) (*informerprom.Metrics, *prometheus.Registry) {
	t.Helper()
	m, err := informerprom.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(m); err != nil {
		t.Fatal(err)
	}
	return m, reg
}

// Every method, called with known values, shows in the exposition under its
// name, labels and type.
func TestMetricsExposition(t *testing.T) {
	m, reg := newRegistered(t, informerprom.Options{})
	for _, ty := range []informer.EventType{informer.EventAdded, informer.EventAdded, informer.EventModified,
		informer.EventDeleted, informer.EventBookmark, informer.EventError, informer.EventType(42)} {
		m.EventReceived("pods", ty)
	}
	m.Relisted("pods")
	m.Relisted("pods")
	m.WatchRestarted("pods")
	m.Error("pods", informer.ErrorClassExpired)
	m.Error("pods", informer.ErrorClassHandler)
	m.Error("pods", informer.ErrorClassHandler)
	m.QueueDepth("pods", 7)
	m.QueueDepth("pods", 3)
	m.HandlerBacklog("pods", "audit", 12)
	m.HandlerBacklog("pods", "index", 0)
	m.ProcessingLatency("pods", 200*time.Microsecond)
	m.ProcessingLatency("pods", 2*time.Second)
	m.HandlerCallDuration("pods", "audit", 3*time.Millisecond)
	m.HandlerCallDuration("pods", "audit", 40*time.Second)
	at := time.Date(2026, 5, 1, 12, 0, 0, 500_000_000, time.UTC)
	m.VersionApplied("pods", at)
	m.Synced("pods", 1500*time.Millisecond)
	m.Relisted("nodes")
	m.WarmStart("pods", informer.StartResumed, 250*time.Millisecond)
	m.SnapshotWritten("pods", 4096, at)
	m.ReadWaited("ctrl", "get", "ok", 300*time.Microsecond)
	m.ReadWaited("ctrl", "get", "ok", 2*time.Millisecond)
	m.ReadWaited("ctrl", "list", "timeout", 5*time.Second)

	e := scrape(t, reg)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"ginformer_watch_events_total", []string{"informer", "pods", "type", "added"}, 2},
		{"ginformer_watch_events_total", []string{"informer", "pods", "type", "modified"}, 1},
		{"ginformer_watch_events_total", []string{"informer", "pods", "type", "deleted"}, 1},
		{"ginformer_watch_events_total", []string{"informer", "pods", "type", "bookmark"}, 1},
		{"ginformer_watch_events_total", []string{"informer", "pods", "type", "error"}, 1},
		{"ginformer_watch_events_total", []string{"informer", "pods", "type", "unknown"}, 1},
		{"ginformer_lists_total", []string{"informer", "pods"}, 2},
		{"ginformer_lists_total", []string{"informer", "nodes"}, 1},
		{"ginformer_watch_restarts_total", []string{"informer", "pods"}, 1},
		{"ginformer_errors_total", []string{"informer", "pods", "class", "expired"}, 1},
		{"ginformer_errors_total", []string{"informer", "pods", "class", "handler"}, 2},
		{"ginformer_queue_depth", []string{"informer", "pods"}, 3},
		{"ginformer_handler_backlog", []string{"informer", "pods", "handler", "audit"}, 12},
		{"ginformer_handler_backlog", []string{"informer", "pods", "handler", "index"}, 0},
		{"ginformer_last_applied_version_timestamp_seconds", []string{"informer", "pods"}, float64(at.Unix()) + 0.5},
		{"ginformer_initial_sync_duration_seconds", []string{"informer", "pods"}, 1.5},
		{"ginformer_starts_total", []string{"informer", "pods", "outcome", "resumed"}, 1},
		{"ginformer_restore_duration_seconds", []string{"informer", "pods"}, 0.25},
		{"ginformer_snapshot_bytes", []string{"informer", "pods"}, 4096},
		{"ginformer_snapshot_timestamp_seconds", []string{"informer", "pods"}, float64(at.Unix()) + 0.5},
	} {
		if got := e.value(t, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	types := map[string]dto.MetricType{
		"ginformer_watch_events_total":                     dto.MetricType_COUNTER,
		"ginformer_lists_total":                            dto.MetricType_COUNTER,
		"ginformer_watch_restarts_total":                   dto.MetricType_COUNTER,
		"ginformer_errors_total":                           dto.MetricType_COUNTER,
		"ginformer_queue_depth":                            dto.MetricType_GAUGE,
		"ginformer_handler_backlog":                        dto.MetricType_GAUGE,
		"ginformer_processing_latency_seconds":             dto.MetricType_HISTOGRAM,
		"ginformer_handler_call_duration_seconds":          dto.MetricType_HISTOGRAM,
		"ginformer_last_applied_version_timestamp_seconds": dto.MetricType_GAUGE,
		"ginformer_initial_sync_duration_seconds":          dto.MetricType_GAUGE,
		"ginformer_starts_total":                           dto.MetricType_COUNTER,
		"ginformer_restore_duration_seconds":               dto.MetricType_GAUGE,
		"ginformer_snapshot_bytes":                         dto.MetricType_GAUGE,
		"ginformer_snapshot_timestamp_seconds":             dto.MetricType_GAUGE,
		"ginformer_read_wait_duration_seconds":             dto.MetricType_HISTOGRAM,
	}
	for name, f := range e {
		want, ok := types[name]
		if !ok {
			t.Errorf("unexpected family %s", name)
			continue
		}
		if f.GetType() != want {
			t.Errorf("%s is a %v, want a %v", name, f.GetType(), want)
		}
		if f.GetHelp() == "" {
			t.Errorf("%s has no help", name)
		}
	}
	if len(e) != len(types) {
		t.Errorf("%d families, want %d:\n%s", len(e), len(types), e.names())
	}

	p := e.histogram(t, "ginformer_processing_latency_seconds", "informer", "pods")
	if p.GetSampleCount() != 2 || p.GetSampleSum() != 2.0002 {
		t.Errorf("processing: count %d sum %v, want 2 and 2.0002", p.GetSampleCount(), p.GetSampleSum())
	}
	if b1, b2 := bucket(t, p, 0.00025), bucket(t, p, 2.5); b1 != 1 || b2 != 2 {
		t.Errorf("processing buckets le=0.00025: %d, le=2.5: %d; want 1 and 2", b1, b2)
	}
	h := e.histogram(t, "ginformer_handler_call_duration_seconds", "informer", "pods", "handler", "audit")
	if h.GetSampleCount() != 2 || h.GetSampleSum() != 40.003 {
		t.Errorf("handler calls: count %d sum %v, want 2 and 40.003", h.GetSampleCount(), h.GetSampleSum())
	}
	if b1, b2, b3 := bucket(t, h, 0.005), bucket(t, h, 30), bucket(t, h, 60); b1 != 1 || b2 != 1 || b3 != 2 {
		t.Errorf("handler buckets le=0.005: %d, le=30: %d, le=60: %d; want 1, 1, 2", b1, b2, b3)
	}
	rw := e.histogram(t, "ginformer_read_wait_duration_seconds", "writer", "ctrl", "op", "get", "result", "ok")
	if rw.GetSampleCount() != 2 || bucket(t, rw, 0.0005) != 1 {
		t.Errorf("read waits: count %d, le=0.0005: %d; want 2 and 1", rw.GetSampleCount(), bucket(t, rw, 0.0005))
	}
	if c := e.histogram(t, "ginformer_read_wait_duration_seconds", "writer", "ctrl", "op", "list", "result", "timeout").GetSampleCount(); c != 1 {
		t.Errorf("read waits, list timeout: count %d, want 1", c)
	}
}

func TestOptionsBuckets(t *testing.T) {
	for _, c := range []struct {
		name string
		opts informerprom.Options
		ok   bool
	}{
		{"zero", informerprom.Options{}, true},
		{"custom", informerprom.Options{ProcessingBuckets: []float64{0.001, 1}, HandlerBuckets: []float64{1}}, true},
		{"decreasing", informerprom.Options{ProcessingBuckets: []float64{1, 0.5}}, false},
		{"repeated", informerprom.Options{HandlerBuckets: []float64{1, 1}}, false},
		{"read waits", informerprom.Options{ReadWaitBuckets: []float64{0.1, 1, 10}}, true},
		{"read waits decreasing", informerprom.Options{ReadWaitBuckets: []float64{1, 0.1}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := informerprom.New(c.opts)
			if c.ok != (err == nil) {
				t.Fatalf("New: %v", err)
			}
			if err != nil {
				if !errors.Is(err, informer.ErrInvalidOptions) {
					t.Errorf("error %v does not wrap ErrInvalidOptions", err)
				}
				return
			}
			m.ProcessingLatency("i", time.Millisecond)
			m.HandlerCallDuration("i", "h", time.Millisecond)
			reg := prometheus.NewRegistry()
			if err := reg.Register(m); err != nil {
				t.Fatal(err)
			}
			e := scrape(t, reg)
			wantP, wantH := len(c.opts.ProcessingBuckets), len(c.opts.HandlerBuckets)
			if wantP == 0 {
				wantP, wantH = 18, 16
			}
			if n := len(e.histogram(t, "ginformer_processing_latency_seconds", "informer", "i").GetBucket()); n != wantP+1 {
				t.Errorf("processing: %d buckets, want %d and +Inf", n, wantP)
			}
			if n := len(e.histogram(t, "ginformer_handler_call_duration_seconds", "informer", "i", "handler", "h").GetBucket()); n != wantH+1 {
				t.Errorf("handler calls: %d buckets, want %d and +Inf", n, wantH)
			}
			m.ReadWaited("w", "get", "ok", time.Millisecond)
			wantR := len(c.opts.ReadWaitBuckets)
			if wantR == 0 {
				wantR = 16
			}
			if n := len(scrape(t, reg).histogram(t, "ginformer_read_wait_duration_seconds", "writer", "w", "op", "get", "result", "ok").GetBucket()); n != wantR+1 {
				t.Errorf("read waits: %d buckets, want %d and +Inf", n, wantR)
			}
		})
	}
}

// The caller's bucket slice is copied: changing it afterwards changes
// nothing.
func TestOptionsBucketsAreCloned(t *testing.T) {
	bs := []float64{0.5, 1}
	m, reg := newRegistered(t, informerprom.Options{HandlerBuckets: bs})
	bs[0] = 0.9
	m.HandlerCallDuration("i", "h", 600*time.Millisecond)
	h := scrape(t, reg).histogram(t, "ginformer_handler_call_duration_seconds", "informer", "i", "handler", "h")
	if got := h.GetBucket()[0].GetUpperBound(); got != 0.5 {
		t.Errorf("first bound %v, want 0.5", got)
	}
}

// Forget removes one informer's series and leaves the others'.
func TestForget(t *testing.T) {
	m, reg := newRegistered(t, informerprom.Options{})
	for _, inf := range []string{"pods", "nodes"} {
		m.EventReceived(inf, informer.EventAdded)
		m.Relisted(inf)
		m.HandlerBacklog(inf, "h", 1)
		m.HandlerCallDuration(inf, "h", time.Millisecond)
		m.VersionApplied(inf, time.Now())
	}
	if n := m.Forget("pods"); n != 5 {
		t.Errorf("Forget deleted %d series, want 5", n)
	}
	e := scrape(t, reg)
	if e.series("ginformer_lists_total", "informer", "pods") != nil {
		t.Error("pods' series are still exposed")
	}
	if got := e.value(t, "ginformer_lists_total", "informer", "nodes"); got != 1 {
		t.Errorf("nodes' lists %v, want 1", got)
	}
	if m.Forget("pods") != 0 {
		t.Error("a second Forget deleted something")
	}
}

// Two Metrics cannot share a registry; a prefixed registry takes a second.
func TestRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, _ := informerprom.New(informerprom.Options{})
	b, _ := informerprom.New(informerprom.Options{})
	if err := reg.Register(a); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(b); err == nil {
		t.Fatal("a second Metrics registered in the same registry")
	}
	if err := prometheus.WrapRegistererWithPrefix("other_", reg).Register(b); err != nil {
		t.Fatalf("with a prefix: %v", err)
	}
	b.Relisted("x")
	if got := scrape(t, reg).value(t, "other_ginformer_lists_total", "informer", "x"); got != 1 {
		t.Errorf("other_ginformer_lists_total = %v, want 1", got)
	}
}

func BenchmarkMetrics(b *testing.B) {
	m, err := informerprom.New(informerprom.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("EventReceived", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.EventReceived("pods", informer.EventModified)
		}
	})
	b.Run("HandlerCallDuration", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.HandlerCallDuration("pods", "audit", time.Millisecond)
		}
	})
	b.Run("HandlerBacklog", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.HandlerBacklog("pods", "audit", 3)
		}
	})
}

// The package doc and docs/metrics.md list every metric exposed.
func TestDocsListEveryMetric(t *testing.T) {
	m, reg := newRegistered(t, informerprom.Options{})
	m.EventReceived("i", informer.EventAdded)
	m.Relisted("i")
	m.WatchRestarted("i")
	m.Error("i", informer.ErrorClassStore)
	m.QueueDepth("i", 0)
	m.HandlerBacklog("i", "h", 0)
	m.ProcessingLatency("i", 0)
	m.HandlerCallDuration("i", "h", 0)
	m.VersionApplied("i", time.Now())
	m.Synced("i", 0)
	m.ReadWaited("w", "get", "ok", 0)
	e := scrape(t, reg)
	for _, file := range []string{"doc.go", "../../docs/metrics.md"} {
		doc, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for name := range e {
			if !strings.Contains(string(doc), name+" ") && !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("%s does not list %s", file, name)
			}
		}
	}
}

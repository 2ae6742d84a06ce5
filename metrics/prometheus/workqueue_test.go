package prometheus_test

import (
	"context"
	"math"
	"net/http/httptest"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	informerprom "github.com/ginformer/ginformer/metrics/prometheus"
	"github.com/ginformer/ginformer/workqueue"
)

// clientGoBuckets are client-go's workqueue duration buckets,
// k8s.io/component-base/metrics/prometheus/workqueue's
// k8smetrics.ExponentialBuckets(10e-9, 10, 10).
var clientGoBuckets = prometheus.ExponentialBuckets(10e-9, 10, 10)

// scrapeInProcess is one scrape of reg through promhttp's handler, answered
// into an httptest.ResponseRecorder instead of over a connection (so that it
// works inside a synctest bubble), and parsed from the text format.
func scrapeInProcess(t *testing.T, reg *prometheus.Registry) exposition {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).ServeHTTP(rec, req)
	require.Equal(t, 200, rec.Code)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(rec.Body)
	require.NoError(t, err)
	return fams
}

func newRegisteredWorkqueue(t *testing.T, opts informerprom.WorkqueueOptions) (*informerprom.WorkqueueMetrics, *prometheus.Registry) {
	t.Helper()
	m, err := informerprom.NewWorkqueue(opts)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(m))
	return m, reg
}

// workqueueFamilies are the families of the adapter, with their types:
// client-go's seven, and the retry budget's delays.
var workqueueFamilies = map[string]dto.MetricType{
	"workqueue_depth":                             dto.MetricType_GAUGE,
	"workqueue_adds_total":                        dto.MetricType_COUNTER,
	"workqueue_queue_duration_seconds":            dto.MetricType_HISTOGRAM,
	"workqueue_work_duration_seconds":             dto.MetricType_HISTOGRAM,
	"workqueue_unfinished_work_seconds":           dto.MetricType_GAUGE,
	"workqueue_longest_running_processor_seconds": dto.MetricType_GAUGE,
	"workqueue_retries_total":                     dto.MetricType_COUNTER,
	"workqueue_retry_budget_delay_seconds":        dto.MetricType_HISTOGRAM,
}

// A queue with the adapter goes through adds, gets, dones, retries (one
// delayed by the retry budget) and a worker stuck on a key, on fake time;
// scrapes along the way show each metric under client-go's name, label
// and buckets, with the values the sequence implies. The last scrape is
// over HTTP, as Prometheus does.
func TestWorkqueueExposition(t *testing.T) {
	m, reg := newRegisteredWorkqueue(t, informerprom.WorkqueueOptions{})
	const pods = "pods"
	synctest.Test(t, func(t *testing.T) {
		q, err := workqueue.New[string](workqueue.Options{
			Name: pods, Metrics: m,
			Backoff:     workqueue.Backoff{Jitter: -1},                 // retries at 5 ms exactly
			RetryBudget: workqueue.RetryBudget{PerSecond: 1, Burst: 1}, // the second retry waits for the budget
		})
		require.NoError(t, err)
		defer q.ShutDown()
		ctx := context.Background()
		start := time.Now()
		at := func(d time.Duration) { // sleeps until d after the queue's creation, and lets its timers run
			time.Sleep(d - time.Since(start))
			synctest.Wait()
		}

		q.Add("a")
		q.Add("a") // deduplicated: not counted
		q.Add("b")
		at(100 * time.Millisecond)
		a, _ := q.Get(ctx) // waited 100 ms
		at(400 * time.Millisecond)
		b, _ := q.Get(ctx) // waited 400 ms
		at(550 * time.Millisecond)

		// The sample at 500 ms: nothing queued; a held 400 ms, b 100 ms.
		e := scrapeInProcess(t, reg)
		require.Equal(t, 0.0, e.value(t, "workqueue_depth", "name", pods))
		require.InDelta(t, 0.5, e.value(t, "workqueue_unfinished_work_seconds", "name", pods), 1e-9)
		require.InDelta(t, 0.4, e.value(t, "workqueue_longest_running_processor_seconds", "name", pods), 1e-9)
		require.Equal(t, 2.0, e.value(t, "workqueue_adds_total", "name", pods))
		h := e.histogram(t, "workqueue_queue_duration_seconds", "name", pods)
		require.Equal(t, uint64(2), h.GetSampleCount())
		require.InDelta(t, 0.5, h.GetSampleSum(), 1e-9)

		q.Done(a)                   // held 450 ms
		q.AddRateLimited(b)         // in progress: queued at 555 ms; the budget's one token
		q.AddRateLimited("c")       // the budget's next token is at 1.55 s: 995 ms beyond c's 5 ms backoff
		q.Done(b)                   // held 150 ms
		at(1000 * time.Millisecond) // b queued at 555 ms; the sample at 1 s

		e = scrapeInProcess(t, reg)
		require.Equal(t, 1.0, e.value(t, "workqueue_depth", "name", pods), "b waits for a worker")
		require.Equal(t, 0.0, e.value(t, "workqueue_unfinished_work_seconds", "name", pods))
		require.Equal(t, 0.0, e.value(t, "workqueue_longest_running_processor_seconds", "name", pods))
		require.Equal(t, 3.0, e.value(t, "workqueue_adds_total", "name", pods))
		require.Equal(t, 2.0, e.value(t, "workqueue_retries_total", "name", pods))
		h = e.histogram(t, "workqueue_retry_budget_delay_seconds", "name", pods)
		require.Equal(t, uint64(1), h.GetSampleCount())
		require.InDelta(t, 0.995, h.GetSampleSum(), 1e-9)

		b, _ = q.Get(ctx) // waited 445 ms; then held 2 s: a stuck worker
		at(3 * time.Second)
		e = scrapeInProcess(t, reg)
		require.Equal(t, 1.0, e.value(t, "workqueue_depth", "name", pods), "c, queued at 1.55 s")
		require.InDelta(t, 2.0, e.value(t, "workqueue_unfinished_work_seconds", "name", pods), 1e-9)
		require.InDelta(t, 2.0, e.value(t, "workqueue_longest_running_processor_seconds", "name", pods), 1e-9)

		q.Done(b)           // held 2 s
		c, _ := q.Get(ctx)  // waited 1.45 s
		q.Done(c)           // held 0
		at(4 * time.Second) // the sample at 3.5 s finds the queue idle: zeros
	})

	e := scrape(t, reg) // over HTTP, outside the bubble
	for name, typ := range workqueueFamilies {
		f := e[name]
		require.NotNil(t, f, "family %s; the exposition has:\n%s", name, e.names())
		require.Equal(t, typ, f.GetType(), name)
		require.NotEmpty(t, f.GetHelp(), name)
		require.Len(t, f.GetMetric(), 1, name)
		require.Equal(t, []string{"name", pods}, labelPairs(f.GetMetric()[0]), "%s: client-go's one label", name)
	}
	require.Len(t, e, len(workqueueFamilies), "nothing else; the exposition has:\n%s", e.names())
	require.Equal(t, 4.0, e.value(t, "workqueue_adds_total", "name", pods))
	require.Equal(t, 2.0, e.value(t, "workqueue_retries_total", "name", pods))
	for _, idle := range []string{"workqueue_depth", "workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds"} {
		require.Equal(t, 0.0, e.value(t, idle, "name", pods), "%s once idle", idle)
	}
	for _, c := range []struct {
		name        string
		count       uint64
		sum         float64
		belowSecond uint64 // observations up to the 1 s bucket
	}{
		{"workqueue_queue_duration_seconds", 4, 0.1 + 0.4 + 0.445 + 1.45, 3},
		{"workqueue_work_duration_seconds", 4, 0.45 + 0.15 + 2 + 0, 3},
	} {
		h := e.histogram(t, c.name, "name", pods)
		require.Equal(t, c.count, h.GetSampleCount(), c.name)
		require.InDelta(t, c.sum, h.GetSampleSum(), 1e-9, c.name)
		var bounds []float64
		for _, b := range h.GetBucket() {
			bounds = append(bounds, b.GetUpperBound())
		}
		require.Equal(t, append(slices.Clone(clientGoBuckets), math.Inf(1)), bounds, "%s: client-go's buckets (and the text format's +Inf)", c.name)
		require.Equal(t, c.belowSecond, bucket(t, h, clientGoBuckets[8]), "%s: le=%v", c.name, clientGoBuckets[8])
		require.Equal(t, c.count, bucket(t, h, clientGoBuckets[9]), "%s: le=%v", c.name, clientGoBuckets[9])
	}

	require.Equal(t, len(workqueueFamilies), m.Forget(pods), "one series per family")
	require.Empty(t, scrape(t, reg), "forgotten")
}

func TestWorkqueueOptions(t *testing.T) {
	for _, bad := range []informerprom.WorkqueueOptions{
		{DurationBuckets: []float64{1, 1}},
		{RetryBudgetBuckets: []float64{2, 1}},
	} {
		_, err := informerprom.NewWorkqueue(bad)
		require.ErrorIs(t, err, workqueue.ErrInvalidOptions)
	}
	custom := []float64{0.001, 0.01}
	m, reg := newRegisteredWorkqueue(t, informerprom.WorkqueueOptions{DurationBuckets: custom})
	custom[0] = 99 // cloned: the caller's slice is not kept
	m.WorkDuration("q", 5*time.Millisecond)
	h := scrape(t, reg).histogram(t, "workqueue_work_duration_seconds", "name", "q")
	require.Len(t, h.GetBucket(), 3, "the two, and +Inf")
	require.Equal(t, 0.001, h.GetBucket()[0].GetUpperBound())
	require.Equal(t, uint64(1), h.GetBucket()[1].GetCumulativeCount())

	// One registry holds the informer's metrics and the work queue's; a
	// second WorkqueueMetrics collides with the first.
	inf, err := informerprom.New(informerprom.Options{})
	require.NoError(t, err)
	require.NoError(t, reg.Register(inf))
	again, err := informerprom.NewWorkqueue(informerprom.WorkqueueOptions{})
	require.NoError(t, err)
	require.Error(t, reg.Register(again))
}

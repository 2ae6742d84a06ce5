package prometheus_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ginformer/ginformer/informer"
	informerprom "github.com/ginformer/ginformer/metrics/prometheus"
	"github.com/ginformer/ginformer/source/memory"
	"github.com/ginformer/ginformer/workqueue"
)

type Service struct{ Name, Region string }

func serviceKey(s *Service) (string, error) { return s.Name, nil }

// An informer's measurements in a Prometheus registry: build the Metrics,
// register it, pass it to the informer.
func Example() {
	src, _ := memory.New(memory.Options[string, *Service]{KeyFunc: serviceKey})
	defer src.Close()
	_, _ = src.Put(&Service{"checkout", "eu-west"})

	metrics, err := informerprom.New(informerprom.Options{}) // 1. build
	if err != nil {
		panic(err)
	}
	prometheus.MustRegister(metrics) // 2. register (here with the default registry)
	defer prometheus.Unregister(metrics)
	inf, _ := informer.NewSharedInformer(informer.Options[string, *Service]{
		Name: "services", Source: src, KeyFunc: serviceKey,
		Metrics: metrics, // 3. pass to every informer, each with its own Name
	})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	_ = informer.WaitForSync(ctx, inf)
	version, _ := src.Put(&Service{"checkout", "us-east"})
	_ = inf.WaitForVersion(ctx, version)
	cancel()
	<-done

	// A program serves this on /metrics: http.Handle("/metrics", promhttp.Handler()).
	rec := httptest.NewRecorder()
	promhttp.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for line := range strings.Lines(rec.Body.String()) {
		if strings.HasPrefix(line, "ginformer_lists_total") || strings.HasPrefix(line, "ginformer_watch_events_total") {
			fmt.Print(line)
		}
	}
	// Output:
	// ginformer_lists_total{informer="services"} 1
	// ginformer_watch_events_total{informer="services",type="modified"} 1
}

// A work queue's measurements under client-go's workqueue metric names, so
// that its dashboards work unchanged: build the WorkqueueMetrics, register
// it, pass it to every queue (or controller), each with its own Name.
func ExampleNewWorkqueue() {
	metrics, err := informerprom.NewWorkqueue(informerprom.WorkqueueOptions{}) // 1. build
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics) // 2. register
	q, err := workqueue.New[string](workqueue.Options{
		Name:    "pods",  // the name label
		Metrics: metrics, // 3. pass to every queue
	})
	if err != nil {
		panic(err)
	}
	defer q.ShutDown()

	ctx := context.Background()
	q.Add("default/web")
	q.Add("default/db")
	key, _ := q.Get(ctx)
	q.AddRateLimited(key) // its reconcile failed: retried after its backoff
	q.Done(key)

	// A program serves this on /metrics: http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{})).
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for line := range strings.Lines(rec.Body.String()) {
		for _, name := range []string{"workqueue_adds_total", "workqueue_retries_total", "workqueue_queue_duration_seconds_count", "workqueue_work_duration_seconds_count"} {
			if strings.HasPrefix(line, name+"{") {
				fmt.Print(line)
			}
		}
	}
	// Output:
	// workqueue_adds_total{name="pods"} 2
	// workqueue_queue_duration_seconds_count{name="pods"} 1
	// workqueue_retries_total{name="pods"} 1
	// workqueue_work_duration_seconds_count{name="pods"} 1
}

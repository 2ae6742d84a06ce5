package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// parallel runs fn(i) for i in [0, n) on workers goroutines and returns the
// first error (the others stop taking work). progress, if set, is called
// every 10 s with the count done.
func parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error, progress func(done int)) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					cancel(err)
					return
				}
				done.Add(1)
			}
		})
	}
	if progress != nil {
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			t := time.NewTicker(10 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					progress(int(done.Load()))
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

// retry calls fn until it succeeds, fails with an error that is not
// transient, or has failed 8 times.
func retry(ctx context.Context, fn func() error) error {
	var err error
	for attempt := range 8 {
		if err = fn(); err == nil || !(apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) ||
			apierrors.IsTimeout(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(50<<attempt) * time.Millisecond):
		}
	}
	return err
}

// populate creates the namespaces, then n pods (each created by
// "kube-controller-manager", then given a running status by "kubelet",
// so that the server keeps managedFields of both), with writers
// concurrent writers. It compacts etcd every 30 s so that the history of
// large runs stays within etcd's quota.
func populate(ctx context.Context, env *k8stest.Env, n, writers int) error {
	cs := env.Client
	for j := range numNS {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceName(j), Labels: map[string]string{"team": teams[j%len(teams)]}}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns.Name}}
		if _, err := cs.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	start := time.Now()
	var lastCompact atomic.Int64
	lastCompact.Store(start.UnixNano())
	return parallel(ctx, n, writers, func(ctx context.Context, i int) error {
		p := newPod(i)
		var created *corev1.Pod
		err := retry(ctx, func() (err error) {
			created, err = cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
			if apierrors.IsAlreadyExists(err) {
				created, err = cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("create pod %d: %w", i, err)
		}
		setStatus(created, i, time.Now())
		if err := retry(ctx, func() error {
			_, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "kubelet"})
			return err
		}); err != nil {
			return fmt.Errorf("status of pod %d: %w", i, err)
		}
		if last := lastCompact.Load(); time.Since(time.Unix(0, last)) > 30*time.Second && lastCompact.CompareAndSwap(last, time.Now().UnixNano()) {
			if err := env.Compact(ctx); err != nil {
				return err
			}
		}
		return nil
	}, func(done int) {
		fmt.Fprintf(os.Stderr, "  %d/%d pods, %.0f pods/s\n", done, n, float64(done)/time.Since(start).Seconds())
	})
}

// servedSizes returns the average size of a served pod as JSON and as
// protobuf, over up to 50 pods spread over the collection.
func servedSizes(ctx context.Context, cs kubernetes.Interface, n int) (jsonB, protoB float64, err error) {
	samples := min(n, 50)
	for k := range samples {
		ns, name := podName(k * n / samples)
		for _, accept := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
			b, err := cs.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").Name(name).
				SetHeader("Accept", accept).DoRaw(ctx)
			if err != nil {
				return 0, 0, err
			}
			if accept == "application/json" {
				jsonB += float64(len(b))
			} else {
				protoB += float64(len(b))
			}
		}
	}
	return jsonB / float64(samples), protoB / float64(samples), nil
}

// compression asks the server for a page of 500 pods and for a watch, as
// JSON and as protobuf, each with Accept-Encoding: gzip, and describes what
// came back.
func compression(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface) ([]string, error) {
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: rt, Timeout: time.Minute}
	defer hc.CloseIdleConnections()
	var out []string
	for _, accept := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		for _, q := range []string{"limit=500", "watch=1&resourceVersion=0",
			"watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"} {
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			req, err := http.NewRequestWithContext(rctx, http.MethodGet, cs.CoreV1().RESTClient().Get().Resource("pods").URL().String()+"?"+q, nil)
			if err != nil {
				cancel()
				return nil, err
			}
			req.Header.Set("Accept", accept)
			req.Header.Set("Accept-Encoding", "gzip") // set by hand: the transport does not decompress
			resp, err := hc.Do(req)
			if err != nil {
				cancel()
				return nil, err
			}
			var n int64
			if q == "limit=500" {
				n, _ = io.Copy(io.Discard, resp.Body)
			}
			_ = resp.Body.Close()
			cancel()
			enc := resp.Header.Get("Content-Encoding")
			if enc == "" {
				enc = "none"
			}
			what := "list of 500"
			if strings.Contains(q, "sendInitialEvents") {
				what = "streaming list (watch with sendInitialEvents)"
			} else if q != "limit=500" {
				what = "watch"
			}
			s := fmt.Sprintf("%s, Accept %s: HTTP %d, Content-Encoding %s", what, accept, resp.StatusCode, enc)
			if n > 0 {
				s += fmt.Sprintf(", %.1f MB on the wire", float64(n)/1e6)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// writeUpdates patches the status of w random pods (the Ready condition's
// probe time and message, as a kubelet does) from writers goroutines and
// returns, for each write, the resourceVersion it produced and when its
// response arrived.
//
// Each patch carries a message unique to the phase (seed) and the write,
// so that none is a no-op: a no-op patch writes nothing and sends no
// event.
func writeUpdates(ctx context.Context, cs kubernetes.Interface, n, w, writers int, seed uint64) ([]update, error) {
	out := make([]update, w)
	err := parallel(ctx, w, writers, func(ctx context.Context, k int) error {
		r := rand.New(rand.NewPCG(seed, uint64(k)))
		ns, name := podName(r.IntN(n))
		var p *corev1.Pod
		var sent int64
		err := retry(ctx, func() (err error) {
			sent = time.Now().UnixNano()
			p, err = cs.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, statusPatch(int(seed)*w+k, time.Now()),
				metav1.PatchOptions{FieldManager: "kubelet"}, "status")
			return err
		})
		if err != nil {
			return fmt.Errorf("update %s/%s: %w", ns, name, err)
		}
		out[k] = update{RV: p.ResourceVersion, NS: time.Now().UnixNano(), Sent: sent}
		return nil
	}, nil)
	if err != nil {
		return nil, err
	}
	rvs := map[string]bool{}
	for _, u := range out {
		if rvs[u.RV] {
			return nil, fmt.Errorf("two writes returned resourceVersion %s: a patch was a no-op", u.RV)
		}
		rvs[u.RV] = true
	}
	return out, nil
}

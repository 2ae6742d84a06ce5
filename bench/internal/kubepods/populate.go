package kubepods

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// Parallel runs fn(i) for i in [0, n) on workers goroutines and returns the
// first error (the others stop taking work). progress, if set, is called
// every 10 s with the count done.
func Parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error, progress func(done int)) error {
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

// Retry calls fn until it succeeds, fails with an error that is not
// transient, or has failed 8 times.
func Retry(ctx context.Context, fn func() error) error {
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

// CreateNamespaces creates the namespaces of the pods, each with a default
// service account; those that exist are kept.
func CreateNamespaces(ctx context.Context, cs kubernetes.Interface) error {
	for j := range Namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: NamespaceName(j), Labels: map[string]string{"team": Teams[j%len(Teams)]}}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns.Name}}
		if _, err := cs.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// Create creates pod i as a ReplicaSet controller does (field manager
// "kube-controller-manager"), then gives it a running status as a kubelet
// does ("kubelet"), so that the server keeps managedFields of both. A pod
// that exists already is given the status. It returns the pod as the
// status write left it.
func Create(ctx context.Context, cs kubernetes.Interface, i int) (*corev1.Pod, error) {
	p := New(i)
	var created *corev1.Pod
	err := Retry(ctx, func() (err error) {
		created, err = cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
		if apierrors.IsAlreadyExists(err) {
			created, err = cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create pod %d: %w", i, err)
	}
	SetStatus(created, i, time.Now())
	var running *corev1.Pod
	if err := Retry(ctx, func() (err error) {
		running, err = cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "kubelet"})
		return err
	}); err != nil {
		return nil, fmt.Errorf("status of pod %d: %w", i, err)
	}
	return running, nil
}

// Populate creates the namespaces, then pods 0 to n-1 ([Create]), with
// writers concurrent writers, printing progress on stderr every 10 s. It
// compacts etcd every 30 s so that the history of large runs stays within
// etcd's quota.
func Populate(ctx context.Context, env *k8stest.Env, n, writers int) error {
	cs := env.Client
	if err := CreateNamespaces(ctx, cs); err != nil {
		return err
	}
	start := time.Now()
	var lastCompact atomic.Int64
	lastCompact.Store(start.UnixNano())
	return Parallel(ctx, n, writers, func(ctx context.Context, i int) error {
		if _, err := Create(ctx, cs, i); err != nil {
			return err
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

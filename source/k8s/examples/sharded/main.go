// Command sharded splits the ConfigMaps of a namespace among several
// replicas of a program, each caching its own slice, with the filtering
// done by the kube-apiserver where it can (ShardedListAndWatch, KEP-5866)
// and on the client where it cannot. It starts a throwaway kube-apiserver
// and etcd from KUBEBUILDER_ASSETS (with the feature gate on, unless
// -gate=false), creates -objects ConfigMaps, and runs -replicas replicas in
// this one process, each with its own client and a static slice
// (k8s.Split). Then the slices are redrawn for one more replica. After each
// step it checks that the caches hold every object exactly once and prints
// each replica's filter mode and what it received and kept. It exits 0 (1
// if a check fails).
//
//	KUBEBUILDER_ASSETS=$(scripts/kube-apiserver-binary.sh) go run ./source/k8s/examples/sharded
//	KUBEBUILDER_ASSETS=$(scripts/kube-apiserver-binary.sh) go run ./source/k8s/examples/sharded -gate=false
//
// With membership (Leases), the static slices give way to a shard.Owner
// per replica (with shard.Hash as its hash), and handlers act on an object
// only if owner.Owns(src.ShardKey(obj)).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

const namespace = "sharded-demo"

func main() {
	replicas := flag.Int("replicas", 3, "replicas to start (one more joins later)")
	objects := flag.Int("objects", 3000, "ConfigMaps to create")
	gate := flag.Bool("gate", true, "start the apiserver with --feature-gates=ShardedListAndWatch=true")
	flag.Parse()
	if err := run(*replicas, *objects, *gate); err != nil {
		fmt.Fprintln(os.Stderr, "sharded:", err)
		os.Exit(1)
	}
}

type cm = *corev1.ConfigMap

// replica is one member: its client, slice, sharded source and informer.
type replica struct {
	name    string
	slices  *k8s.StaticSlices
	src     *k8s.Sharded[cm]
	inf     *informer.SharedInformer[informer.NamespacedKey, cm]
	moved   atomic.Int64 // deletions that were moves to another replica
	deleted atomic.Int64 // deletions of objects deleted in the API
	cancel  context.CancelFunc
	done    sync.WaitGroup
}

func startReplica(cfg *rest.Config, name string, i, n int) (*replica, error) {
	client, err := kubernetes.NewForConfig(rest.CopyConfig(cfg)) // a client of its own, as a separate process would have
	if err != nil {
		return nil, err
	}
	base, err := k8s.New(client.CoreV1().ConfigMaps(namespace), func(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items }, k8s.Options{})
	if err != nil {
		return nil, err
	}
	set, err := k8s.Split(i, n)
	if err != nil {
		return nil, err
	}
	r := &replica{name: name, slices: k8s.NewStaticSlices(set)}
	if r.src, err = k8s.NewSharded(k8s.ShardedOptions[cm]{Source: base, Slices: r.slices}); err != nil {
		return nil, err
	}
	r.inf, err = informer.NewSharedInformer(informer.Options[informer.NamespacedKey, cm]{
		Name: name, Source: r.src, KeyFunc: k8s.Key[cm],
		ListWatch: informer.ListWatchOptions{Backoff: informer.Backoff{Initial: 50 * time.Millisecond, Max: time.Second}},
	})
	if err != nil {
		return nil, err
	}
	// A controller's handler: tell an object that moved to another replica
	// from one deleted in the API.
	_, err = r.inf.AddHandler(informer.HandlerFuncs[informer.NamespacedKey, cm]{
		DeleteFunc: func(d informer.Deletion[informer.NamespacedKey, cm]) {
			if d.FinalStateUnknown && !r.src.InSlice(d.Object) {
				r.moved.Add(1) // another replica has it now: nothing to clean up
				return
			}
			r.deleted.Add(1)
		},
	}, informer.HandlerOptions{Name: "controller"})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.done.Go(func() { _ = r.inf.Run(ctx) })
	return r, nil
}

func (r *replica) stop() {
	r.cancel()
	r.done.Wait()
}

func run(n, objects int, gate bool) error {
	if n < 1 {
		return errors.New("-replicas must be at least 1")
	}
	cfg := k8stest.Config{}
	if gate {
		cfg.FeatureGates = map[string]bool{k8stest.ShardedListAndWatch: true}
	}
	env, err := k8stest.Start(cfg)
	if err != nil {
		return err
	}
	defer env.Stop()
	ctx := context.Background()
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := create(ctx, env.Client, objects); err != nil {
		return err
	}
	fmt.Printf("created %d ConfigMaps in %s (apiserver gate ShardedListAndWatch=%v)\n", objects, namespace, gate)

	var rs []*replica
	defer func() {
		for _, r := range rs {
			r.stop()
		}
	}()
	for i := range n {
		r, err := startReplica(env.Config, fmt.Sprintf("replica-%d", i), i, n)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	if err := step(fmt.Sprintf("%d replicas", n), rs, objects); err != nil {
		return err
	}

	// One more replica: every slice is redrawn for n+1. The watches end,
	// the informers relist; objects that left arrive as deletions.
	r, err := startReplica(env.Config, fmt.Sprintf("replica-%d", n), n, n+1)
	if err != nil {
		return err
	}
	rs = append(rs, r)
	for i, r := range rs[:n] {
		set, err := k8s.Split(i, n+1)
		if err != nil {
			return err
		}
		r.slices.Set(set)
	}
	if err := step(fmt.Sprintf("%d replicas", n+1), rs, objects); err != nil {
		return err
	}
	var moved, deleted int64
	for _, r := range rs {
		moved += r.moved.Load()
		deleted += r.deleted.Load()
	}
	if deleted != 0 {
		return fmt.Errorf("%d deletions reported as deleted in the API, none happened", deleted)
	}
	fmt.Printf("ok: the %d slices cover every object once (%d objects); %d moved between replicas, seen as moves\n", n+1, objects, moved)
	return nil
}

// create makes the ConfigMaps with 16 writers.
func create(ctx context.Context, c kubernetes.Interface, objects int) error {
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < objects; i += 16 {
				_, err := c.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i)},
					Data:       map[string]string{"n": fmt.Sprint(i)},
				}, metav1.CreateOptions{})
				if err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		return *err
	}
	return nil
}

// step waits until the caches cover the objects once, then prints each
// replica's mode, cache size and traffic.
func step(what string, rs []*replica, objects int) error {
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var err error
	for time.Since(start) < time.Minute {
		if err = covered(rs, objects); err == nil {
			break
		}
		<-tick.C
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	var parts []string
	for _, r := range rs {
		recv, kept := r.src.Counts()
		parts = append(parts, fmt.Sprintf("%s %s-side: caches %d, received %d, kept %d",
			r.name, r.src.Mode(), r.inf.Lister().Len(), recv, kept))
	}
	fmt.Printf("%s settled in %v:\n  %s\n", what, time.Since(start).Round(time.Millisecond), strings.Join(parts, "\n  "))
	return nil
}

// covered reports whether the caches hold objects objects, each once and
// each in the slice its replica is assigned now.
func covered(rs []*replica, objects int) error {
	seen := map[string]string{}
	for _, r := range rs {
		assigned, _, _ := r.slices.Slice(context.Background())
		for k, o := range r.inf.Lister().All() {
			if other, dup := seen[k.Name]; dup {
				return fmt.Errorf("%s cached by %s and %s", k.Name, other, r.name)
			}
			seen[k.Name] = r.name
			if !assigned.Shards.Contains(r.src.Hash(o)) {
				return fmt.Errorf("%s caches %s outside its slice", r.name, k.Name)
			}
		}
	}
	if len(seen) != objects {
		return fmt.Errorf("caches hold %d objects, want %d", len(seen), objects)
	}
	return nil
}

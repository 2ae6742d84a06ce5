// Command sharded splits the ConfigMaps of a namespace among several
// replicas of a program, each caching and acting on its own slice, with
// membership through coordination.k8s.io Leases (lease.Membership and a
// shard.Owner per replica) and the filtering done by the kube-apiserver
// where it can (ShardedListAndWatch, KEP-5866) and on the client where it
// cannot. It starts a throwaway kube-apiserver and etcd from
// KUBEBUILDER_ASSETS (with the feature gate on, unless -gate=false), creates
// -objects ConfigMaps, and runs -replicas replicas in this one process, each
// with its own client, Lease, owner and sharded informer. Then a replica
// joins and another leaves. After each step it checks that the caches hold
// every object exactly once, each in the cache of the one replica that owns
// it (Owns), and prints each replica's filter mode and what it received and
// kept. It exits 0 (1 if a check fails).
//
//	KUBEBUILDER_ASSETS=$(scripts/kube-apiserver-binary.sh) go run ./source/k8s/examples/sharded
//	KUBEBUILDER_ASSETS=$(scripts/kube-apiserver-binary.sh) go run ./source/k8s/examples/sharded -gate=false
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
	"github.com/ginformer/ginformer/source/k8s/lease"
)

const (
	namespace = "sharded-demo"
	group     = "demo-controller" // the Lease group: one per sharded program
)

func main() {
	replicas := flag.Int("replicas", 3, "replicas to start (one more joins, then one leaves)")
	objects := flag.Int("objects", 3000, "ConfigMaps to create")
	gate := flag.Bool("gate", true, "start the apiserver with --feature-gates=ShardedListAndWatch=true")
	lease := flag.Duration("lease", 5*time.Second, "lease duration of each replica (whole seconds)")
	flag.Parse()
	if err := run(*replicas, *objects, *gate, *lease); err != nil {
		fmt.Fprintln(os.Stderr, "sharded:", err)
		os.Exit(1)
	}
}

type cm = *corev1.ConfigMap

// replica is one member: its client, membership, owner, sharded source and
// informer.
type replica struct {
	name    string
	owner   *shard.Owner
	src     *k8s.Sharded[cm]
	inf     *informer.SharedInformer[informer.NamespacedKey, cm]
	acted   atomic.Int64 // handler calls on owned objects
	moved   atomic.Int64 // deletions that were moves to another replica
	deleted atomic.Int64 // deletions of objects deleted in the API
	cancel  context.CancelFunc
	done    sync.WaitGroup
}

func startReplica(cfg *rest.Config, name string, leaseDuration time.Duration) (*replica, error) {
	client, err := kubernetes.NewForConfig(rest.CopyConfig(cfg)) // a client of its own, as a separate process would have
	if err != nil {
		return nil, err
	}
	quiet := logr.FromSlogHandler(slog.DiscardHandler)
	m, err := lease.New(lease.Options{
		Client: client.CoordinationV1().Leases(namespace), Group: group, Name: name, LeaseDuration: leaseDuration, Logger: quiet,
	})
	if err != nil {
		return nil, err
	}
	r := &replica{name: name}
	// shard.Hash: the apiserver's FNV-1a over the uid, so that Owns and
	// the ShardSelector agree.
	if r.owner, err = shard.NewOwner(shard.OwnerOptions{Membership: m, Hash: shard.Hash, Logger: quiet}); err != nil {
		return nil, err
	}
	base, err := k8s.New(client.CoreV1().ConfigMaps(namespace), func(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items }, k8s.Options{})
	if err != nil {
		return nil, err
	}
	if r.src, err = k8s.NewSharded(k8s.ShardedOptions[cm]{Source: base, Slices: r.owner}); err != nil {
		return nil, err
	}
	r.inf, err = informer.NewSharedInformer(informer.Options[informer.NamespacedKey, cm]{
		Name: name, Source: r.src, KeyFunc: k8s.Key[cm], Logger: quiet,
		ListWatch: informer.ListWatchOptions{Backoff: informer.Backoff{Initial: 50 * time.Millisecond, Max: time.Second}},
	})
	if err != nil {
		return nil, err
	}
	// A controller's handler: act only on owned objects, and tell an object
	// that moved to another replica from one deleted in the API.
	act := func(o cm) {
		if r.owner.Owns(r.src.ShardKey(o)) {
			r.acted.Add(1) // reconcile o here
		}
	}
	_, err = r.inf.AddHandler(informer.HandlerFuncs[informer.NamespacedKey, cm]{
		AddFunc:    func(o cm, _ bool) { act(o) },
		UpdateFunc: func(_, o cm) { act(o) },
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
	r.done.Go(func() { _ = r.owner.Run(ctx) }) // runs the membership too
	r.done.Go(func() { _ = r.inf.Run(ctx) })
	return r, nil
}

// stop leaves: the owner releases its shards, the Lease and its record are
// deleted, so the others take its shards at once.
func (r *replica) stop() {
	r.cancel()
	r.done.Wait()
}

func run(n, objects int, gate bool, lease time.Duration) error {
	if n < 2 {
		return errors.New("-replicas must be at least 2")
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

	var rs, all []*replica // running; every one started
	defer func() {
		for _, r := range rs {
			r.stop()
		}
	}()
	for i := range n {
		r, err := startReplica(env.Config, fmt.Sprintf("replica-%d", i), lease)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	all = append(all, rs...)
	before, err := step(fmt.Sprintf("%d replicas", n), rs, objects)
	if err != nil {
		return err
	}

	// A join: only the newcomer's shards move, about 1/N. The old owners'
	// watches end, their informers relist; objects that left arrive as
	// deletions their handlers tell from deletions in the API.
	r, err := startReplica(env.Config, fmt.Sprintf("replica-%d", n), lease)
	if err != nil {
		return err
	}
	rs = append(rs, r)
	all = append(all, r)
	after, err := step("a replica joins", rs, objects)
	if err != nil {
		return err
	}
	joinMoved := moves(before, after)
	fmt.Printf("the join moved %d of %d objects (%d of %d shards; 1/%d = %d objects)\n",
		joinMoved, objects, r.owner.Held().Len(), shard.DefaultShards, n+1, objects/(n+1))

	// A graceful leave: the leaver's Lease and record go at once, the
	// others take its shards without waiting for an expiry.
	rs[0].stop()
	rs = rs[1:]
	final, err := step("a replica leaves", rs, objects)
	if err != nil {
		return err
	}
	leaveMoved := moves(after, final)
	var moved, deleted, acted int64
	for _, r := range all {
		moved += r.moved.Load()
		deleted += r.deleted.Load()
		acted += r.acted.Load()
	}
	if deleted != 0 {
		return fmt.Errorf("%d deletions reported as deleted in the API, none happened", deleted)
	}
	fmt.Printf("the leave moved %d objects; handlers saw %d moves away and 0 deletions, and found Owns true in %d calls\n", leaveMoved, moved, acted)
	fmt.Printf("ok: the %d slices cover every object once (%d objects), each cached and owned by one replica\n", len(rs), objects)
	return nil
}

// moves counts the objects cached by another replica in after than in
// before.
func moves(before, after map[string]string) int {
	n := 0
	for name, who := range after {
		if before[name] != who {
			n++
		}
	}
	return n
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

// step waits until the caches cover the objects once, each cached and
// owned by one replica, then prints each replica's mode, cache size and
// traffic, and returns who caches what.
func step(what string, rs []*replica, objects int) (map[string]string, error) {
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var who map[string]string
	var err error
	for time.Since(start) < time.Minute {
		if who, err = covered(rs, objects); err == nil {
			break
		}
		<-tick.C
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var parts []string
	for _, r := range rs {
		recv, kept := r.src.Counts()
		parts = append(parts, fmt.Sprintf("%s %s-side: %d shards, caches %d, received %d, kept %d",
			r.name, r.src.Mode(), r.owner.Held().Len(), r.inf.Lister().Len(), recv, kept))
	}
	fmt.Printf("%s: settled in %v:\n  %s\n", what, time.Since(start).Round(time.Millisecond), strings.Join(parts, "\n  "))
	return who, nil
}

// covered reports whether every replica holds and caches the shards the
// assignment of the replicas' names gives it, the caches hold objects
// objects, each once, and each object is owned by exactly the replica
// caching it. It returns who caches what.
func covered(rs []*replica, objects int) (map[string]string, error) {
	var names []string
	for _, r := range rs {
		names = append(names, r.name)
	}
	a, err := shard.Assign(0, names)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		sl, _ := r.owner.CurrentSlice()
		if want := a.Set(r.name); !r.owner.Held().Equal(want) || !sl.Shards.Equal(want) {
			return nil, fmt.Errorf("%s holds %d shards and caches %d, is assigned %d", r.name, r.owner.Held().Len(), sl.Shards.Len(), want.Len())
		}
	}
	who := make(map[string]string, objects)
	for _, r := range rs {
		for k, o := range r.inf.Lister().All() {
			if other, dup := who[k.Name]; dup {
				return nil, fmt.Errorf("%s cached by %s and %s", k.Name, other, r.name)
			}
			who[k.Name] = r.name
			for _, other := range rs {
				if owns := other.owner.Owns(other.src.ShardKey(o)); owns != (other == r) {
					return nil, fmt.Errorf("%s is cached by %s, and owned by %s: %v", k.Name, r.name, other.name, owns)
				}
			}
		}
	}
	if len(who) != objects {
		return nil, fmt.Errorf("caches hold %d objects, want %d", len(who), objects)
	}
	return who, nil
}

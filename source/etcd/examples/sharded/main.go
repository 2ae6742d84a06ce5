// Command sharded splits an etcd prefix among several replicas of a
// program, each caching and acting on its own slice. It starts an embedded
// etcd in-process (or uses -endpoints), writes -keys keys, and runs
// -replicas replicas in this one process, each with its own etcd client,
// lease and sharded informer. Then a replica joins and another leaves, and
// after each step it checks that the replicas' caches together hold every
// key exactly once and that each key is owned by exactly one replica. It
// prints one line per step and exits 0 (1 if a check fails).
//
//	go run ./source/etcd/examples/sharded
//	go run ./source/etcd/examples/sharded -replicas 5 -keys 10000
//	go run ./source/etcd/examples/sharded -endpoints http://127.0.0.1:2379
package main

import (
	"context"
	"encoding/json"
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
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
	"github.com/ginformer/ginformer/source/etcd/lease"
)

// Job is the stored value: a plain user struct, stored as JSON.
type Job struct {
	Name  string `json:"name"`
	Queue string `json:"queue"`
}

type obj = *etcd.Object[Job]

const (
	dataPrefix    = "/demo/sharded/jobs/"
	membersPrefix = "/demo/sharded/members/"
)

func main() {
	replicas := flag.Int("replicas", 3, "replicas to start")
	keys := flag.Int("keys", 3000, "keys to write")
	ttl := flag.Duration("ttl", 2*time.Second, "lease TTL of each replica")
	endpoints := flag.String("endpoints", "", "comma-separated etcd client URLs (default: start an embedded etcd)")
	flag.Parse()
	if err := run(*replicas, *keys, *ttl, *endpoints); err != nil {
		fmt.Fprintln(os.Stderr, "sharded:", err)
		os.Exit(1)
	}
}

// replica is one member: membership, owner, sharded source, informer.
type replica struct {
	name    string
	client  *clientv3.Client
	owner   *shard.Owner
	src     *etcd.Sharded[Job]
	inf     *informer.SharedInformer[string, obj]
	moved   atomic.Int64 // deletions that were moves to another replica
	deleted atomic.Int64 // deletions of keys deleted in etcd
	cancel  context.CancelFunc
	done    sync.WaitGroup
}

func startReplica(endpoints []string, name string, ttl time.Duration) (*replica, error) {
	c, err := etcdtest.NewClient(endpoints...)
	if err != nil {
		return nil, err
	}
	quiet := logr.FromSlogHandler(slog.DiscardHandler)
	r := &replica{name: name, client: c}
	m, err := lease.New(lease.Options{Client: c, Prefix: membersPrefix, Name: name, TTL: ttl, Logger: quiet})
	if err != nil {
		return nil, err
	}
	if r.owner, err = shard.NewOwner(shard.OwnerOptions{Membership: m, Logger: quiet}); err != nil {
		return nil, err
	}
	base, err := etcd.New(etcd.Options[Job]{Client: c, Prefix: dataPrefix, StripPrefix: true, Logger: quiet})
	if err != nil {
		return nil, err
	}
	if r.src, err = etcd.NewSharded(etcd.ShardedOptions[Job]{Source: base, Slices: r.owner}); err != nil {
		return nil, err
	}
	r.inf, err = informer.NewSharedInformer(informer.Options[string, obj]{
		Name: name, Source: r.src, KeyFunc: etcd.KeyFunc[Job], Logger: quiet,
		ListWatch: informer.ListWatchOptions{Backoff: informer.Backoff{Initial: 50 * time.Millisecond, Max: time.Second}},
	})
	if err != nil {
		return nil, err
	}
	// A controller's handler: act only on owned keys, and tell a key that
	// moved to another replica from one deleted in etcd.
	_, err = r.inf.AddHandler(informer.HandlerFuncs[string, obj]{
		AddFunc: func(o obj, _ bool) {
			if r.owner.Owns(o.Key) {
				_ = o // reconcile o here
			}
		},
		DeleteFunc: func(d informer.Deletion[string, obj]) {
			if d.FinalStateUnknown && !r.src.InSlice(d.Key) {
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
	r.done.Go(func() { _ = r.owner.Run(ctx) })
	r.done.Go(func() { _ = r.inf.Run(ctx) })
	return r, nil
}

// stop leaves: the owner releases its shards, the lease is revoked.
func (r *replica) stop() {
	r.cancel()
	r.done.Wait()
	_ = r.client.Close()
}

func run(n, keys int, ttl time.Duration, endpoints string) error {
	if n < 2 {
		return errors.New("-replicas must be at least 2")
	}
	if endpoints == "" {
		srv, err := etcdtest.Start(etcdtest.Config{})
		if err != nil {
			return err
		}
		defer srv.Close()
		endpoints = srv.Endpoint()
	}
	eps := strings.Split(endpoints, ",")
	cli, err := etcdtest.NewClient(eps...)
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx := context.Background()
	for _, p := range []string{dataPrefix, membersPrefix} {
		if _, err := cli.Delete(ctx, p, clientv3.WithPrefix()); err != nil {
			return err
		}
	}
	for i := 0; i < keys; i += 100 {
		var ops []clientv3.Op
		for j := i; j < min(i+100, keys); j++ {
			name := fmt.Sprintf("job-%05d", j)
			b, _ := json.Marshal(Job{Name: name, Queue: fmt.Sprintf("q%d", j%7)})
			ops = append(ops, clientv3.OpPut(dataPrefix+name, string(b)))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			return err
		}
	}
	fmt.Printf("wrote %d keys under %s\n", keys, dataPrefix)

	var rs, all []*replica // running; every one started
	defer func() {
		for _, r := range rs {
			r.stop()
		}
	}()
	for i := range n {
		r, err := startReplica(eps, fmt.Sprintf("replica-%d", i), ttl)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	all = append(all, rs...)
	step := func(what string) error {
		start := time.Now()
		err := waitCovered(rs, keys, 30*time.Second)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		var parts []string
		for _, r := range rs {
			parts = append(parts, fmt.Sprintf("%s %d keys/%d shards", r.name, r.inf.Lister().Len(), r.owner.Held().Len()))
		}
		fmt.Printf("%-22s settled in %5v: %s\n", what, time.Since(start).Round(time.Millisecond), strings.Join(parts, ", "))
		return nil
	}
	if err := step(fmt.Sprintf("%d replicas:", n)); err != nil {
		return err
	}

	before := rs[0].owner.Assignment()
	r, err := startReplica(eps, fmt.Sprintf("replica-%d", n), ttl)
	if err != nil {
		return err
	}
	rs = append(rs, r)
	all = append(all, r)
	if err := step("a replica joins:"); err != nil {
		return err
	}
	moved := 0
	after := rs[0].owner.Assignment()
	for s := range before.Shards() {
		if before.Owner(s) != after.Owner(s) {
			moved++
		}
	}
	fmt.Printf("the join moved %d of %d shards (1/%d = %d)\n", moved, before.Shards(), n+1, before.Shards()/(n+1))

	rs[0].stop()
	rs = rs[1:]
	if err := step("a replica leaves:"); err != nil {
		return err
	}
	var movedAway, deleted int64
	for _, r := range all {
		movedAway += r.moved.Load()
		deleted += r.deleted.Load()
	}
	fmt.Printf("handlers saw %d keys move away and %d deletions\n", movedAway, deleted)
	fmt.Printf("ok: the %d slices cover every key once (%d keys), each owned by one replica\n", len(rs), keys)
	return nil
}

// waitCovered waits until every replica holds the shards the assignment of
// the replicas' names gives it, and their caches hold every key exactly
// once, each in the cache of the replica that owns it.
func waitCovered(rs []*replica, keys int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var err error
	for time.Now().Before(deadline) {
		if err = covered(rs, keys); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

func covered(rs []*replica, keys int) error {
	var names []string
	for _, r := range rs {
		names = append(names, r.name)
	}
	a, err := shard.Assign(0, names)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if !r.owner.Held().Equal(a.Set(r.name)) {
			return fmt.Errorf("%s holds %d shards, is assigned %d", r.name, r.owner.Held().Len(), a.Set(r.name).Len())
		}
	}
	seen := make(map[string]string, keys)
	for _, r := range rs {
		for k := range r.inf.Lister().Keys() {
			if other, dup := seen[k]; dup {
				return fmt.Errorf("%s is cached by %s and %s", k, other, r.name)
			}
			seen[k] = r.name
		}
	}
	if len(seen) != keys {
		return fmt.Errorf("the caches hold %d keys, want %d", len(seen), keys)
	}
	for k, name := range seen {
		owners := 0
		for _, r := range rs {
			if r.owner.Owns(k) {
				owners++
				if r.name != name {
					return fmt.Errorf("%s is owned by %s but cached by %s", k, r.name, name)
				}
			}
		}
		if owners != 1 {
			return fmt.Errorf("%s is owned by %d replicas", k, owners)
		}
	}
	return nil
}

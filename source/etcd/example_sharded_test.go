package etcd_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-logr/logr"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/lease"
)

// Two replicas split a prefix: each registers through an etcd lease,
// caches its slice and owns its keys.
func ExampleNewSharded() {
	type Job struct {
		Queue string `json:"queue"`
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	quiet := logr.FromSlogHandler(slog.DiscardHandler)

	setup, err := srv.Client() // the embedded etcd of these examples
	if err != nil {
		panic(err)
	}
	defer setup.Close()
	for i := range 100 {
		_, _ = setup.Put(ctx, fmt.Sprintf("/example-sharded/jobs/job-%d", i), `{"queue":"q"}`)
	}

	type replica struct {
		owner *shard.Owner
		inf   *informer.SharedInformer[string, *etcd.Object[Job]]
	}
	var wg sync.WaitGroup
	var rs []replica
	for _, name := range []string{"replica-a", "replica-b"} {
		cli, err := srv.Client() // one client per replica, as in separate processes
		if err != nil {
			panic(err)
		}
		defer cli.Close()
		m, err := lease.New(lease.Options{Client: cli, Prefix: "/example-sharded/members/", Name: name, TTL: 2 * time.Second, Logger: quiet})
		if err != nil {
			panic(err)
		}
		owner, err := shard.NewOwner(shard.OwnerOptions{Membership: m, Logger: quiet})
		if err != nil {
			panic(err)
		}
		base, err := etcd.New(etcd.Options[Job]{Client: cli, Prefix: "/example-sharded/jobs/", StripPrefix: true, Logger: quiet})
		if err != nil {
			panic(err)
		}
		src, err := etcd.NewSharded(etcd.ShardedOptions[Job]{Source: base, Slices: owner})
		if err != nil {
			panic(err)
		}
		inf, err := informer.NewSharedInformer(informer.Options[string, *etcd.Object[Job]]{
			Source: src, KeyFunc: etcd.KeyFunc[Job], Logger: quiet,
			ListWatch: informer.ListWatchOptions{Backoff: informer.Backoff{Initial: 20 * time.Millisecond}},
		})
		if err != nil {
			panic(err)
		}
		wg.Go(func() { _ = owner.Run(ctx) })
		wg.Go(func() { _ = inf.Run(ctx) })
		rs = append(rs, replica{owner, inf})
	}

	// Wait until both hold their half of the shards and cache their keys.
	settled := func() bool {
		a := rs[0].owner.Assignment()
		cached, owned := 0, 0
		for _, r := range rs {
			if len(a.Members()) != 2 || !r.owner.Held().Equal(a.Set(r.owner.Name())) {
				return false
			}
			cached += r.inf.Lister().Len()
			for k := range r.inf.Lister().Keys() {
				if r.owner.Owns(k) {
					owned++
				}
			}
		}
		return cached == 100 && owned == 100
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(20 * time.Second); !settled() && time.Now().Before(deadline); {
		<-tick.C
	}
	fmt.Println("settled:", settled())
	fmt.Println("keys cached by a and b:", rs[0].inf.Lister().Len()+rs[1].inf.Lister().Len())
	cancel() // the replicas leave: owners release, leases are revoked
	wg.Wait()
	_, _ = setup.Delete(context.Background(), "/example-sharded/", clientv3.WithPrefix())
	// Output:
	// settled: true
	// keys cached by a and b: 100
}

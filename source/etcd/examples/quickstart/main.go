// Command quickstart runs a typed informer over an etcd prefix. It starts
// an embedded etcd in-process (nothing to install; or uses -endpoints),
// writes a stream of service endpoints (region, status, weight) as JSON under
// /demo/endpoints/, and runs a shared informer with two indexes and two
// handlers over them. It prints changes and index queries as they happen,
// checks at the end that the cache equals etcd, prints a one-line summary
// and exits 0 (1 if the check fails).
//
//	go run ./source/etcd/examples/quickstart                 # about 10 s
//	go run ./source/etcd/examples/quickstart -duration 3s -quiet
//	go run ./source/etcd/examples/quickstart -endpoints http://127.0.0.1:2379
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/examples/demo"
	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// Endpoint is a plain user struct, stored as JSON.
type Endpoint = demo.Endpoint

const prefix = "/demo/endpoints/"

// Obj is the informer's object type: the etcd key and the decoded value.
type Obj = *etcd.Object[Endpoint]

func main() {
	d := demo.Flags()
	endpoints := flag.String("endpoints", "", "comma-separated etcd client URLs (default: start an embedded etcd)")
	flag.Parse()
	demo.Exit(run(d, *endpoints))
}

func run(d *demo.Demo, endpoints string) error {
	// 1. etcd: embedded in-process unless -endpoints is given.
	if endpoints == "" {
		srv, err := etcdtest.Start(etcdtest.Config{})
		if err != nil {
			return err
		}
		defer srv.Close()
		endpoints = srv.Endpoint()
		d.Say("embedded etcd at %s", endpoints)
	}
	cli, err := etcdtest.NewClient(strings.Split(endpoints, ",")...)
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := cli.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
		return fmt.Errorf("clean %s: %w", prefix, err)
	}

	// 2. The source: typed objects under the prefix, JSON by default.
	src, err := etcd.New(etcd.Options[Endpoint]{Client: cli, Prefix: prefix, StripPrefix: true})
	if err != nil {
		return err
	}

	// 3. The informer: a typed cache keyed by the etcd key, two indexes
	//    (each declared once, then bound to the cache for its queries).
	byRegion, byStatus := etcd.Index("region", demo.ByRegion), etcd.Index("status", demo.ByStatus)
	inf, err := informer.NewSharedInformer(informer.Options[string, Obj]{
		Name:    "endpoints",
		Source:  src,
		KeyFunc: etcd.KeyFunc[Endpoint],
		Indexes: []informer.Index[Obj]{byRegion, byStatus},
	})
	if err != nil {
		return err
	}
	region, err := inf.Lister().IndexRef(byRegion) // fails only if byRegion is not declared on inf
	if err != nil {
		return err
	}
	status, err := inf.Lister().IndexRef(byStatus)
	if err != nil {
		return err
	}

	// 4. Two handlers: one prints the first changes and then a sample, one counts them all.
	if _, err := inf.AddHandler(informer.HandlerFuncs[string, Obj]{
		AddFunc: func(o Obj, initial bool) {
			d.Sample("  add    %s %s %s (rev %d)", o.Key, o.Value.Region, o.Value.Status, o.ModRevision)
		},
		UpdateFunc: func(old, o Obj) {
			d.Sample("  update %s %s→%s weight %d→%d", o.Key, old.Value.Status, o.Value.Status, old.Value.Weight, o.Value.Weight)
		},
		DeleteFunc: func(del informer.Deletion[string, Obj]) { d.Sample("  delete %s", del.Key) },
	}, informer.HandlerOptions{Name: "printer"}); err != nil {
		return err
	}
	counter, err := inf.AddHandler(demo.Counter[string, Obj](d), informer.HandlerOptions{Name: "counter"})
	if err != nil {
		return err
	}

	// Some endpoints exist before the informer starts: the initial list.
	rng := demo.NewRand()
	put := func(e Endpoint) error {
		b, _ := json.Marshal(e)
		_, err := cli.Put(ctx, prefix+e.Service+"/"+e.Name, string(b))
		return err
	}
	for i := range 30 {
		if err := put(demo.NewEndpoint(rng, i)); err != nil {
			return err
		}
	}
	stop, err := demo.Start(ctx, d, inf, counter)
	if err != nil {
		return err
	}

	// 5. The writer: creates, updates and deletes for the given duration.
	start, next := time.Now(), 30
	writes, err := d.Write(func() error {
		switch n := rng.IntN(10); {
		case n < 2:
			next++
			return put(demo.NewEndpoint(rng, next-1))
		case n < 9:
			return put(demo.NewEndpoint(rng, rng.IntN(next)))
		default:
			i := rng.IntN(next)
			_, err := cli.Delete(ctx, fmt.Sprintf("%s%s/ep-%d", prefix, demo.ServiceOf(i), i))
			return err
		}
	}, func(elapsed time.Duration) { demo.Progress(d, elapsed, inf.Lister(), region, status) })
	if err != nil {
		return err
	}

	// 6. Read the prefix, wait for the cache to apply that revision, then
	//    compare. The revision may belong to a write outside the prefix (with
	//    -endpoints): a progress request makes the watch send a bookmark at
	//    least that new.
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	if err := src.RequestProgress(ctx); err != nil {
		return err
	}
	if err := demo.WaitForVersion(ctx, inf, strconv.FormatInt(resp.Header.Revision, 10)); err != nil {
		return err
	}
	mismatch := compare(resp, inf.Lister())
	elapsed := time.Since(start)
	if err := stop(); err != nil {
		return err
	}
	return d.Finish(inf.Lister().Len(), writes, elapsed, mismatch, "cache equals etcd")
}

// compare returns "" if the cache holds exactly the endpoints of resp.
func compare(resp *clientv3.GetResponse, cache informer.Lister[string, Obj]) string {
	if len(resp.Kvs) != cache.Len() {
		return fmt.Sprintf("etcd has %d endpoints, the cache %d", len(resp.Kvs), cache.Len())
	}
	for _, kv := range resp.Kvs {
		key := strings.TrimPrefix(string(kv.Key), prefix)
		var e Endpoint
		if err := json.Unmarshal(kv.Value, &e); err != nil {
			return err.Error()
		}
		got, ok := cache.Get(key)
		if !ok || got.Value != e || got.ModRevision != kv.ModRevision {
			return fmt.Sprintf("%s differs", key)
		}
	}
	return ""
}

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
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// Endpoint is a plain user struct, stored as JSON.
type Endpoint struct {
	Service string `json:"service"`
	Name    string `json:"name"`
	Region  string `json:"region"`
	Status  string `json:"status"` // "ready", "draining", "down"
	Weight  int    `json:"weight"`
}

const prefix = "/demo/endpoints/"

var (
	regions  = []string{"eu-west", "us-east", "ap-south"}
	statuses = []string{"ready", "ready", "ready", "draining", "down"}
	services = []string{"checkout", "search", "profile"}
)

// Obj is the informer's object type: the etcd key and the decoded value.
type Obj = *etcd.Object[Endpoint]

func main() {
	duration := flag.Duration("duration", 10*time.Second, "how long the writer runs")
	endpoints := flag.String("endpoints", "", "comma-separated etcd client URLs (default: start an embedded etcd)")
	quiet := flag.Bool("quiet", false, "print only the summary")
	flag.Parse()
	if err := run(*duration, *endpoints, *quiet); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(duration time.Duration, endpoints string, quiet bool) error {
	say := func(format string, args ...any) {
		if !quiet {
			fmt.Printf(format+"\n", args...)
		}
	}

	// 1. etcd: embedded in-process unless -endpoints is given.
	if endpoints == "" {
		srv, err := etcdtest.Start(etcdtest.Config{})
		if err != nil {
			return err
		}
		defer srv.Close()
		endpoints = srv.Endpoint()
		say("embedded etcd at %s", endpoints)
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

	// 3. The informer: a typed cache keyed by the etcd key, two indexes.
	inf, err := informer.NewSharedInformer(informer.Options[string, Obj]{
		Name:    "endpoints",
		Source:  src,
		KeyFunc: etcd.KeyFunc[Endpoint],
		Indexes: []informer.Index[Obj]{
			etcd.Index("region", func(dst []string, e Endpoint) ([]string, error) { return append(dst, e.Region), nil }),
			etcd.Index("status", func(dst []string, e Endpoint) ([]string, error) { return append(dst, e.Status), nil }),
		},
	})
	if err != nil {
		return err
	}

	// 4. Two handlers: one prints the first changes and then a sample, one counts them all.
	var printed, events atomic.Int64
	show := func(format string, args ...any) {
		if n := printed.Add(1); n <= 6 || n%500 == 0 { // the first few, then a sample
			say(format, args...)
		}
	}
	if _, err := inf.AddHandler(informer.HandlerFuncs[string, Obj]{
		AddFunc: func(o Obj, initial bool) {
			show("  add    %s %s %s (rev %d)", o.Key, o.Value.Region, o.Value.Status, o.ModRevision)
		},
		UpdateFunc: func(old, o Obj) {
			show("  update %s %s→%s weight %d→%d", o.Key, old.Value.Status, o.Value.Status, old.Value.Weight, o.Value.Weight)
		},
		DeleteFunc: func(d informer.Deletion[string, Obj]) { show("  delete %s", d.Key) },
	}, informer.HandlerOptions{Name: "printer"}); err != nil {
		return err
	}
	counter, err := inf.AddHandler(informer.HandlerFuncs[string, Obj]{
		AddFunc:    func(Obj, bool) { events.Add(1) },
		UpdateFunc: func(_, _ Obj) { events.Add(1) },
		DeleteFunc: func(informer.Deletion[string, Obj]) { events.Add(1) },
	}, informer.HandlerOptions{Name: "counter"})
	if err != nil {
		return err
	}

	// Some endpoints exist before the informer starts: the initial list.
	rng := rand.New(rand.NewPCG(1, 2))
	put := func(e Endpoint) error {
		b, _ := json.Marshal(e)
		_, err := cli.Put(ctx, prefix+e.Service+"/"+e.Name, string(b))
		return err
	}
	for i := range 30 {
		if err := put(newEndpoint(rng, i)); err != nil {
			return err
		}
	}

	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	if err := informer.WaitForSync(ctx, inf, counter); err != nil {
		return err
	}
	say("synced: %d endpoints in the cache", inf.Lister().Len())

	// 5. The writer: creates, updates and deletes for the given duration.
	start := time.Now()
	writes, next := 0, 30
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for time.Since(start) < duration {
		switch n := rng.IntN(10); {
		case n < 2:
			err = put(newEndpoint(rng, next))
			next++
		case n < 9:
			err = put(newEndpoint(rng, rng.IntN(next)))
		default:
			i := rng.IntN(next)
			_, err = cli.Delete(ctx, fmt.Sprintf("%s%s/ep-%d", prefix, services[i%len(services)], i))
		}
		if err != nil {
			return err
		}
		writes++
		select {
		case <-tick.C:
			ready, _ := inf.Lister().IndexKeys("status", "ready")
			down, _ := inf.Lister().IndexKeys("status", "down")
			eu, _ := inf.Lister().IndexKeys("region", "eu-west")
			say("[%2.0fs] %d endpoints, %d ready, %d in eu-west, down: %v", time.Since(start).Seconds(),
				inf.Lister().Len(), count(ready), count(eu), first(down, 3))
		default:
		}
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
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := inf.WaitForVersion(wctx, strconv.FormatInt(resp.Header.Revision, 10)); err != nil {
		return err
	}
	mismatch := compare(resp, inf.Lister())
	elapsed := time.Since(start)
	cancel()
	if err := <-done; err != nil {
		return err
	}
	result := "cache equals etcd"
	if mismatch != "" {
		result = "MISMATCH: " + mismatch
	}
	fmt.Printf("quickstart: %d objects, %d writes, %d handler events, %.0f events/s, %s\n",
		inf.Lister().Len(), writes, events.Load(), float64(events.Load())/elapsed.Seconds(), result)
	if mismatch != "" {
		return fmt.Errorf("final check failed")
	}
	return nil
}

func newEndpoint(rng *rand.Rand, i int) Endpoint {
	return Endpoint{
		Service: services[i%len(services)],
		Name:    fmt.Sprintf("ep-%d", i),
		Region:  regions[rng.IntN(len(regions))],
		Status:  statuses[rng.IntN(len(statuses))],
		Weight:  rng.IntN(100),
	}
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

func count(seq func(func(string) bool)) int {
	n := 0
	for range seq {
		n++
	}
	return n
}

func first(seq func(func(string) bool), n int) []string {
	var out []string
	for k := range seq {
		out = append(out, k)
		if len(out) == n {
			break
		}
	}
	slices.Sort(out)
	return out
}

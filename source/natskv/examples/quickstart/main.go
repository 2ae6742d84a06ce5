// Command quickstart runs a typed informer over a NATS JetStream KV
// bucket. It starts a nats-server with JetStream in-process (nothing to
// install; or uses -url), writes a stream of service endpoints (region,
// status, weight) as JSON into the bucket "endpoints", with puts, deletes
// and purges, and runs a shared informer with two indexes and two handlers
// over them. It prints changes and index queries as they happen, checks at
// the end that the cache equals the bucket, prints a one-line summary and
// exits 0 (1 if the check fails).
//
//	go run ./source/natskv/examples/quickstart                 # about 10 s
//	go run ./source/natskv/examples/quickstart -duration 3s -quiet
//	go run ./source/natskv/examples/quickstart -url nats://127.0.0.1:4222
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/natskv"
	"github.com/ginformer/ginformer/source/natskv/natstest"
)

// Endpoint is a plain user struct, stored as JSON.
type Endpoint struct {
	Service string `json:"service"`
	Name    string `json:"name"`
	Region  string `json:"region"`
	Status  string `json:"status"` // "ready", "draining", "down"
	Weight  int    `json:"weight"`
}

const bucket = "endpoints"

var (
	regions  = []string{"eu-west", "us-east", "ap-south"}
	statuses = []string{"ready", "ready", "ready", "draining", "down"}
	services = []string{"checkout", "search", "profile"}
)

// Obj is the informer's object type: the KV key and the decoded value.
type Obj = *natskv.Object[Endpoint]

func main() {
	duration := flag.Duration("duration", 10*time.Second, "how long the writer runs")
	url := flag.String("url", "", "NATS server URL with JetStream (default: start one in-process)")
	quiet := flag.Bool("quiet", false, "print only the summary")
	flag.Parse()
	if err := run(*duration, *url, *quiet); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(duration time.Duration, url string, quiet bool) error {
	say := func(format string, args ...any) {
		if !quiet {
			fmt.Printf(format+"\n", args...)
		}
	}

	// 1. NATS: in-process unless -url is given; a fresh bucket keeping 8
	//    revisions per key (so deletions carry the previous value).
	if url == "" {
		srv, err := natstest.Start(natstest.Config{})
		if err != nil {
			return err
		}
		defer srv.Close()
		url = srv.URL()
		say("embedded nats-server at %s", url)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := js.DeleteKeyValue(ctx, bucket); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
		return fmt.Errorf("clean bucket %s: %w", bucket, err)
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, History: 8})
	if err != nil {
		return err
	}

	// 2. The source: typed objects of the bucket, JSON by default.
	src, err := natskv.New(natskv.Options[Endpoint]{JetStream: js, Bucket: bucket})
	if err != nil {
		return err
	}

	// 3. The informer: a typed cache keyed by the KV key, two indexes.
	inf, err := informer.NewSharedInformer(informer.Options[string, Obj]{
		Name:    "endpoints",
		Source:  src,
		KeyFunc: natskv.KeyFunc[Endpoint],
		Indexes: []informer.Index[Obj]{
			natskv.Index("region", func(dst []string, e Endpoint) ([]string, error) { return append(dst, e.Region), nil }),
			natskv.Index("status", func(dst []string, e Endpoint) ([]string, error) { return append(dst, e.Status), nil }),
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
			show("  add    %s %s %s (rev %d)", o.Key, o.Value.Region, o.Value.Status, o.Revision)
		},
		UpdateFunc: func(old, o Obj) {
			show("  update %s %s→%s weight %d→%d", o.Key, old.Value.Status, o.Value.Status, old.Value.Weight, o.Value.Weight)
		},
		DeleteFunc: func(d informer.Deletion[string, Obj]) { show("  delete %s (was %s)", d.Key, d.Object.Value.Status) },
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
	var last uint64 // the revision of the last write
	put := func(e Endpoint) error {
		b, _ := json.Marshal(e)
		rev, err := kv.Put(ctx, e.Service+"."+e.Name, b)
		last = rev
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

	// 5. The writer: puts, deletes and purges for the given duration.
	start := time.Now()
	writes, next := 0, 30
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for time.Since(start) < duration {
		i := rng.IntN(next)
		key := fmt.Sprintf("%s.ep-%d", services[i%len(services)], i)
		switch n := rng.IntN(20); {
		case n < 4:
			err = put(newEndpoint(rng, next))
			next++
		case n < 18:
			err = put(newEndpoint(rng, i))
		case n == 18:
			err = kv.Delete(ctx, key)
		default:
			err = kv.Purge(ctx, key)
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

	// 6. Read the bucket's last revision (deletes and purges return none),
	//    wait for the cache to apply it, then compare with the bucket.
	stream, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return err
	}
	last = max(last, stream.CachedInfo().State.LastSeq)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := inf.WaitForVersion(wctx, strconv.FormatUint(last, 10)); err != nil {
		return err
	}
	mismatch, err := compare(ctx, kv, inf.Lister())
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	cancel()
	if err := <-done; err != nil {
		return err
	}
	result := "cache equals bucket"
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

// compare returns "" if the cache holds exactly the endpoints of the
// bucket (nothing writes to it any more).
func compare(ctx context.Context, kv jetstream.KeyValue, cache informer.Lister[string, Obj]) (string, error) {
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return "", err
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	_ = lister.Stop()
	if len(keys) != cache.Len() {
		return fmt.Sprintf("the bucket has %d endpoints, the cache %d", len(keys), cache.Len()), nil
	}
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if err != nil {
			return "", err
		}
		var ep Endpoint
		if err := json.Unmarshal(e.Value(), &ep); err != nil {
			return err.Error(), nil
		}
		got, ok := cache.Get(k)
		if !ok || got.Value != ep || got.Revision != e.Revision() {
			return fmt.Sprintf("%s differs", k), nil
		}
	}
	return "", nil
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

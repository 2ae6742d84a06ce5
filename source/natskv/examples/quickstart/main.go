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
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ginformer/ginformer/examples/demo"
	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/natskv"
	"github.com/ginformer/ginformer/source/natskv/natstest"
)

// Endpoint is a plain user struct, stored as JSON.
type Endpoint = demo.Endpoint

const bucket = "endpoints"

// Obj is the informer's object type: the KV key and the decoded value.
type Obj = *natskv.Object[Endpoint]

func main() {
	d := demo.Flags()
	url := flag.String("url", "", "NATS server URL with JetStream (default: start one in-process)")
	flag.Parse()
	demo.Exit(run(d, *url))
}

func run(d *demo.Demo, url string) error {
	// 1. NATS: in-process unless -url is given; a fresh bucket keeping 8
	//    revisions per key (so deletions carry the previous value).
	if url == "" {
		srv, err := natstest.Start(natstest.Config{})
		if err != nil {
			return err
		}
		defer srv.Close()
		url = srv.URL()
		d.Say("embedded nats-server at %s", url)
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

	// 3. The informer: a typed cache keyed by the KV key, two indexes
	//    (each declared once, then bound to the cache for its queries).
	byRegion, byStatus := natskv.Index("region", demo.ByRegion), natskv.Index("status", demo.ByStatus)
	inf, err := informer.NewSharedInformer(informer.Options[string, Obj]{
		Name:    "endpoints",
		Source:  src,
		KeyFunc: natskv.KeyFunc[Endpoint],
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
			d.Sample("  add    %s %s %s (rev %d)", o.Key, o.Value.Region, o.Value.Status, o.Revision)
		},
		UpdateFunc: func(old, o Obj) {
			d.Sample("  update %s %s→%s weight %d→%d", o.Key, old.Value.Status, o.Value.Status, old.Value.Weight, o.Value.Weight)
		},
		DeleteFunc: func(del informer.Deletion[string, Obj]) {
			d.Sample("  delete %s (was %s)", del.Key, del.Object.Value.Status)
		},
	}, informer.HandlerOptions{Name: "printer"}); err != nil {
		return err
	}
	counter, err := inf.AddHandler(demo.Counter[string, Obj](d), informer.HandlerOptions{Name: "counter"})
	if err != nil {
		return err
	}

	// Some endpoints exist before the informer starts: the initial list.
	rng := demo.NewRand()
	var last uint64 // the revision of the last write
	put := func(e Endpoint) error {
		b, _ := json.Marshal(e)
		rev, err := kv.Put(ctx, e.Service+"."+e.Name, b)
		last = rev
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

	// 5. The writer: puts, deletes and purges for the given duration.
	start, next := time.Now(), 30
	writes, err := d.Write(func() error {
		i := rng.IntN(next)
		key := fmt.Sprintf("%s.ep-%d", demo.ServiceOf(i), i)
		switch n := rng.IntN(20); {
		case n < 4:
			next++
			return put(demo.NewEndpoint(rng, next-1))
		case n < 18:
			return put(demo.NewEndpoint(rng, i))
		case n == 18:
			return kv.Delete(ctx, key)
		default:
			return kv.Purge(ctx, key)
		}
	}, func(elapsed time.Duration) { demo.Progress(d, elapsed, inf.Lister(), region, status) })
	if err != nil {
		return err
	}

	// 6. Read the bucket's last revision (deletes and purges return none),
	//    wait for the cache to apply it, then compare with the bucket.
	stream, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return err
	}
	last = max(last, stream.CachedInfo().State.LastSeq)
	if err := demo.WaitForVersion(ctx, inf, strconv.FormatUint(last, 10)); err != nil {
		return err
	}
	mismatch, err := compare(ctx, kv, inf.Lister())
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if err := stop(); err != nil {
		return err
	}
	return d.Finish(inf.Lister().Len(), writes, elapsed, mismatch, "cache equals bucket")
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

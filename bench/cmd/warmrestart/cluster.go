package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/source/etcd"
)

// The parent's side of etcd: the keys it writes, the changes made while no
// child runs, the server's request counters and the check of a child's
// cache against etcd.

// keys is the state of the prefix as the parent wrote it.
type keys struct {
	prefix  string
	gens    []int64 // each key's generation
	present []bool  // whether key i exists
	rng     *rand.Rand
}

func newKeys(prefix string, n int) *keys {
	return &keys{prefix: prefix, gens: make([]int64, n), present: make([]bool, n), rng: rand.New(rand.NewPCG(23, 1))}
}

// txnOps is the number of puts per transaction of the initial load.
const txnOps = 128

// load writes every key, from writers goroutines, txnOps per transaction.
func (k *keys) load(ctx context.Context, c *clientv3.Client, writers int) error {
	n := len(k.gens)
	next := make(chan int)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for from := range next {
				ops := make([]clientv3.Op, 0, txnOps)
				for i := from; i < min(from+txnOps, n); i++ {
					b, err := codec.Encode(newSvc(i, 1, 0))
					if err != nil {
						errs[w] = err
						return
					}
					ops = append(ops, clientv3.OpPut(svcKey(k.prefix, i), string(b)))
				}
				if _, err := c.Txn(ctx).Then(ops...).Commit(); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	for from := 0; from < n; from += txnOps {
		select {
		case next <- from:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for i := range k.gens {
		k.gens[i], k.present[i] = 1, true
	}
	return ctx.Err()
}

// changes counts one round of changes.
type changes struct {
	Updated int `json:"updated"`
	Deleted int `json:"deleted"`
	Created int `json:"created"`
}

func (c changes) total() int { return c.Updated + c.Deleted + c.Created }

// change changes frac of the keys, chosen at random, in transactions of
// distinct keys: a present key is updated (nine in ten) or deleted, an
// absent one (deleted by an earlier round) created again.
func (k *keys) change(ctx context.Context, c *clientv3.Client, frac float64) (changes, error) {
	var ch changes
	picked := k.rng.Perm(len(k.gens))[:int(frac*float64(len(k.gens)))]
	for len(picked) > 0 {
		batch := picked[:min(len(picked), txnOps)]
		picked = picked[len(batch):]
		ops := make([]clientv3.Op, 0, len(batch))
		for _, i := range batch {
			key := svcKey(k.prefix, i)
			if k.present[i] && k.rng.IntN(10) == 0 {
				ops = append(ops, clientv3.OpDelete(key))
				k.present[i] = false
				ch.Deleted++
				continue
			}
			if k.present[i] {
				ch.Updated++
			} else {
				ch.Created++
			}
			k.gens[i]++
			k.present[i] = true
			b, err := codec.Encode(newSvc(i, k.gens[i], 0))
			if err != nil {
				return ch, err
			}
			ops = append(ops, clientv3.OpPut(key, string(b)))
		}
		if _, err := c.Txn(ctx).Then(ops...).Commit(); err != nil {
			return ch, err
		}
	}
	return ch, nil
}

// count returns the number of present keys.
func (k *keys) count() int {
	n := 0
	for _, ok := range k.present {
		if ok {
			n++
		}
	}
	return n
}

// etcdDigest reads the prefix at rev, in one Range, and returns its digest
// as a child computes it.
func etcdDigest(ctx context.Context, c *clientv3.Client, prefix, rev string) (digest, error) {
	var d digest
	r, err := strconv.ParseInt(rev, 10, 64)
	if err != nil {
		return d, fmt.Errorf("the child's version %q: %w", rev, err)
	}
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(r))
	if err != nil {
		return d, err
	}
	for _, kv := range resp.Kvs {
		var o etcd.Object[svc]
		if err := codec.DecodeInto(kv.Value, &o.Value); err != nil {
			return d, fmt.Errorf("%s: %w", kv.Key, err)
		}
		if err := d.add(string(kv.Key), kv.ModRevision, kv.CreateRevision, o.Value); err != nil {
			return d, err
		}
	}
	return d, nil
}

// serverCounts are etcd's own counters of the gRPC requests it started, by
// method (grpc_server_started_total, from its /metrics endpoint).
type serverCounts map[string]float64

// scrapeServer reads the counters from etcd's metrics endpoint.
func scrapeServer(ctx context.Context, endpoint string) (serverCounts, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := serverCounts{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "grpc_server_started_total{") {
			continue
		}
		_, rest, ok := strings.Cut(l, `grpc_method="`)
		if !ok {
			continue
		}
		method, rest, _ := strings.Cut(rest, `"`)
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			continue
		}
		out[method] += v
	}
	return out, sc.Err()
}

// minus returns the counts of s since before.
func (s serverCounts) minus(before serverCounts) map[string]int64 {
	out := map[string]int64{}
	for k, v := range s {
		if d := int64(v - before[k]); d != 0 {
			out[k] = d
		}
	}
	return out
}

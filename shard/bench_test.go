package shard_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ginformer/ginformer/shard"
)

// BenchmarkOwns measures the check a handler makes per key on a member
// holding every shard: a hash, atomic loads, a clock read (and here the
// in-memory backend's ValidUntil, which takes a mutex where etcd's loads an
// atomic pointer).
func BenchmarkOwns(b *testing.B) {
	c := newCluster(shard.DefaultShards)
	m := c.member("a")
	o, err := shard.NewOwner(shard.OwnerOptions{Membership: m, Logger: discard()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	for o.Held().Len() < shard.DefaultShards {
		_, changed, _ := m.Current()
		select {
		case <-changed:
		case <-time.After(10 * time.Millisecond):
		}
	}
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprintf("/registry/jobs/default/job-%d", i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		o.Owns(keys[i%len(keys)])
	}
}

// BenchmarkAssign measures computing an assignment of 256 shards.
func BenchmarkAssign(b *testing.B) {
	for _, n := range []int{3, 32} {
		members := names("replica", n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := shard.Assign(0, members); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package etcd

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/internal/ctxtime"
)

var _ informer.ReachabilityWaiter = (*Source[int])(nil)

const (
	probeEvery   = 250 * time.Millisecond // between rounds of reachability probes
	probeTimeout = time.Second            // for one probe's answer
)

// WaitReachable blocks until a member of the client's answers that it has a
// leader (a status request, on a connection of its own to each endpoint, all
// probed at once, every 250 ms), or ctx is done, then returns ctx's error.
// A reflector calls it while it backs off after an outage, so that its
// watch is back as soon as etcd answers again whatever its backoff had
// grown to (see [informer.ReachabilityWaiter]). A client without endpoints,
// or whose KV is not etcd's own, is probed with a single-key read through
// its KV.
func (s *Source[T]) WaitReachable(ctx context.Context) error {
	for !s.reachable(ctx) {
		if !ctxtime.Sleep(ctx, probeEvery) {
			return ctx.Err()
		}
	}
	return nil
}

// reachable runs one round of probes; it reports whether one succeeded.
func (s *Source[T]) reachable(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cli := s.opts.Client
	eps := cli.Endpoints()
	if len(eps) == 0 || cli.Ctx().Err() != nil {
		_, err := cli.Get(ctx, s.start, clientv3.WithKeysOnly(), clientv3.WithLimit(1))
		return err == nil
	}
	var ok atomic.Bool
	var wg sync.WaitGroup
	for _, ep := range eps {
		wg.Go(func() {
			c, err := s.dial(ep)
			if err != nil {
				_, err = cli.Get(ctx, s.start, clientv3.WithKeysOnly(), clientv3.WithLimit(1))
				if err == nil {
					ok.Store(true)
				}
				return
			}
			defer c.close()
			resp, err := pb.NewMaintenanceClient(c.conn).Status(ctx, &pb.StatusRequest{})
			if err == nil && resp.Leader != 0 {
				s.health.ok(ep)
				ok.Store(true)
				cancel() // one is enough
			}
		})
	}
	wg.Wait()
	return ok.Load()
}

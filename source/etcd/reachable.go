package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
)

var _ informer.ReachabilityWaiter = (*Source[int])(nil)

const (
	probeEvery   = 250 * time.Millisecond // between rounds of reachability probes
	probeTimeout = time.Second            // for one probe's answer
)

// WaitReachable blocks until a member of the client's answers that it has a
// leader, or ctx is done (then it returns ctx's error). Every 250 ms it
// starts a round of probes, a status request to every endpoint at once on
// a connection of its own, each given a second to answer; rounds overlap,
// so one stuck on a silent network does not delay the next. A reflector
// calls it while it backs off after an outage, so that its watch is back as
// soon as etcd answers again whatever its backoff had grown to (see
// [informer.ReachabilityWaiter]). A client without endpoints is probed
// with a single-key read through its KV.
func (s *Source[T]) WaitReachable(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	up := make(chan struct{})
	var once sync.Once
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		wg.Go(func() {
			if s.reachable(ctx) {
				once.Do(func() { close(up) })
			}
		})
		select {
		case <-up:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// reachable runs one round of probes; it reports whether one succeeded.
func (s *Source[T]) reachable(ctx context.Context) bool {
	cli := s.opts.Client
	if len(cli.Endpoints()) == 0 || cli.Ctx().Err() != nil {
		ctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		_, err := cli.Get(ctx, s.start, clientv3.WithKeysOnly(), clientv3.WithLimit(1))
		return err == nil
	}
	_, ok := s.answering(ctx)
	return ok
}

// answering probes every endpoint of the client at once, each on a fresh
// connection of its own, and returns the first whose member answers within
// probeTimeout that it has a leader; false when none does. Used to move a
// failed watch to a member known to answer, rather than trying the others
// one after another while each may take LivenessTimeout to fail.
func (s *Source[T]) answering(ctx context.Context) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	eps := s.opts.Client.Endpoints()
	found := make(chan string, len(eps))
	var wg sync.WaitGroup
	for _, ep := range eps {
		wg.Go(func() {
			c, err := s.dial(ep)
			if err != nil {
				return
			}
			defer c.close()
			resp, err := pb.NewMaintenanceClient(c.conn).Status(ctx, &pb.StatusRequest{})
			if err == nil && resp.Leader != 0 {
				found <- ep
				cancel() // one is enough
			}
		})
	}
	wg.Wait()
	close(found)
	ep, ok := <-found
	if ok {
		s.health.ok(ep)
	}
	return ep, ok
}

// failover is what a watch, a streaming list or a list read does when it
// failed on endpoint ep with err (its attempt-th failure in a row): if err
// is one another member may not share ([informer.ErrTransient]), it marks
// ep failed and, unless attempt exceeds the number of endpoints, returns
// the first member that answers a probe (see answering), to try next at
// once; false when the caller is to give up with err. A move is an outage
// survived: it is reported to the informer ([informer.ReportSourceError],
// class transient), or, without one, logged at V(1).
func (s *Source[T]) failover(ctx context.Context, what, ep string, err error, attempt int) (string, bool) {
	if !errors.Is(err, informer.ErrTransient) || ep == "" || ctx.Err() != nil {
		return "", false
	}
	s.health.fail(ep, err)
	if attempt >= len(s.opts.Client.Endpoints())+1 {
		return "", false
	}
	next, ok := s.answering(ctx)
	if ok && !informer.ReportSourceError(ctx, fmt.Errorf("etcd source: %s failed on %s, moved to %s: %w", what, ep, next, err)) {
		s.log.V(1).Info(what+" failed; moving to a member that answers", "endpoint", ep, "to", next, "err", err)
	}
	return next, ok
}

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
	_, _, ok := s.answering(ctx, 0)
	return ok
}

// answering probes every endpoint of the client at once, each on a fresh
// connection of its own, for a member that answers within probeTimeout
// that it has a leader. It returns the first to answer whose revision is
// at least want, at once; when none is, once every probe has ended, the
// one with the highest revision (a member catching up after a partition
// still answers, and a watch from a revision it has not reached would wait
// for it, then fail); false when none answers. It also returns the
// member's revision. Used to move a failed watch to a member known to
// answer, rather than trying the others one after another while each may
// take LivenessTimeout to fail.
func (s *Source[T]) answering(ctx context.Context, want int64) (string, int64, bool) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	eps := s.opts.Client.Endpoints()
	type answer struct {
		ep  string
		rev int64
	}
	found := make(chan answer, len(eps)) // in the order of the answers
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
				rev := resp.GetHeader().GetRevision()
				found <- answer{ep, rev}
				if rev >= want {
					cancel() // one is enough
				}
			}
		})
	}
	wg.Wait()
	close(found)
	best, ok := answer{}, false
	for a := range found {
		if a.rev >= want {
			best, ok = a, true
			break
		}
		if !ok || a.rev > best.rev {
			best, ok = a, true
		}
	}
	if ok {
		s.health.ok(best.ep)
	}
	return best.ep, best.rev, ok
}

// failover is what a watch, a streaming list or a list read does when it
// failed on endpoint ep with err (its attempt-th failure in a row): if err
// is one another member may not share ([informer.ErrTransient], or, when
// want is set, [informer.ErrVersionTooLarge]: ep stayed behind want), it
// marks ep failed and, unless attempt exceeds the number of endpoints,
// returns a member that answers a probe, preferring one at or past revision
// want (see answering), to try next at once; false when the caller is to
// give up with err, as it does after ErrVersionTooLarge when no member that
// answers has reached want (an etcd restored from a backup). A move is an
// outage survived: it is reported to the informer
// ([informer.ReportSourceError], class transient), or, without one, logged
// at V(1).
func (s *Source[T]) failover(ctx context.Context, what, ep string, err error, attempt int, want int64) (string, bool) {
	behind := want > 0 && errors.Is(err, informer.ErrVersionTooLarge)
	if !errors.Is(err, informer.ErrTransient) && !behind || ep == "" || ctx.Err() != nil {
		return "", false
	}
	s.health.fail(ep, err)
	if attempt >= len(s.opts.Client.Endpoints())+1 {
		return "", false
	}
	next, rev, ok := s.answering(ctx, want)
	if behind && rev < want {
		return "", false
	}
	if ok && !informer.ReportSourceError(ctx, fmt.Errorf("etcd source: %s failed on %s, moved to %s: %w", what, ep, next, err)) {
		s.log.V(1).Info(what+" failed; moving to a member that answers", "endpoint", ep, "to", next, "revision", rev, "err", err)
	}
	return next, ok
}

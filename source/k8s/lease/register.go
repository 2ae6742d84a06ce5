package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ginformer/ginformer/internal/ctxtime"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/source/internal/keepalive"
)

// errNameTaken: another registration's Lease has this member's name.
var errNameTaken = errors.New("k8s lease membership: the name is taken by a live registration; waiting for it to end")

// registerLoop registers, renews, and registers again after a loss, until
// ctx is done; then it leaves.
func (m *Membership) registerLoop(ctx context.Context) {
	backoff := keepalive.Backoff{Min: 100 * time.Millisecond, Max: m.renewEvery()}
	var stale types.UID // a Lease of ours that may still exist
	for {
		lease, err := m.register(ctx, stale)
		if ctx.Err() != nil {
			if err == nil {
				m.reg.End()
				m.publish()
				m.leave(ctx, lease)
			}
			return
		}
		if err != nil {
			pause := backoff.Next()
			if !errors.Is(err, errNameTaken) {
				m.limit.Error(m.log, "register", err, "registration failed, retrying", "in", pause)
			}
			if !ctxtime.Sleep(ctx, pause) {
				return
			}
			continue
		}
		backoff.Reset()
		stale = ""
		m.renew(ctx, lease)
		// The Lease is lost, or ctx is done: the validity ends now (or
		// ended already, and ValidUntil keeps answering with that time).
		m.reg.End()
		m.publish()
		if ctx.Err() != nil {
			m.leave(ctx, lease)
			return
		}
		m.log.Info("lease lost, registering again", "lease", lease.Name, "uid", lease.UID)
		if m.deleteOwn(ctx, lease.UID) != nil {
			stale = lease.UID
		}
	}
}

// renewEvery is the renewal period: a third of the lease duration.
func (m *Membership) renewEvery() time.Duration { return m.opts.LeaseDuration / 3 }

// validFrom is the validity of a write sent at sent.
func (m *Membership) validFrom(sent time.Time) time.Time {
	return keepalive.ValidFrom(sent, m.opts.LeaseDuration, m.opts.MaxClockDrift)
}

// register creates this member's Lease. If the name is taken by stale (a
// Lease of this member's previous registration), that one is deleted first;
// by another, errNameTaken (the janitor deletes it once it is judged
// expired).
func (m *Membership) register(ctx context.Context, stale types.UID) (*coordinationv1.Lease, error) {
	now := metav1.NewMicroTime(time.Now())
	secs := int32(m.opts.LeaseDuration / time.Second)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: m.leaseName, Labels: map[string]string{GroupLabel: m.opts.Group}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       &m.opts.Name,
			LeaseDurationSeconds: &secs,
			AcquireTime:          &now,
			RenewTime:            &now,
		},
	}
	sent := time.Now()
	got, err := m.opts.Client.Create(ctx, lease, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		if stale != "" {
			if derr := m.deleteOwn(ctx, stale); derr == nil {
				return m.register(ctx, "")
			}
		}
		m.log.V(1).Info("name taken, waiting", "lease", m.leaseName)
		return nil, errNameTaken
	}
	if err != nil {
		return nil, fmt.Errorf("k8s lease membership: create lease %s: %w", m.leaseName, err)
	}
	r := m.reg.Store(epochOf(got), m.validFrom(sent), string(got.UID))
	m.publish()
	m.log.Info("registered", "lease", got.Name, "uid", got.UID, "epoch", r.Epoch, "duration", m.opts.LeaseDuration)
	return got, nil
}

// epochOf is the epoch of a registration: its Lease's creation
// resourceVersion if it is a positive integer, otherwise a hash of its UID.
func epochOf(l *coordinationv1.Lease) int64 {
	if rv, err := strconv.ParseInt(l.ResourceVersion, 10, 64); err == nil && rv > 0 {
		return rv
	}
	return max(int64(shard.Hash(string(l.UID))>>1), 1)
}

// renew renews lease every third of its duration until ctx is done or the
// Lease is lost: deleted (by an observer that judged it expired), or not
// renewed before its validity ended.
func (m *Membership) renew(ctx context.Context, lease *coordinationv1.Lease) {
	keepalive.Renew(ctx, m.opts.LeaseDuration, m.reg.Until, func(rctx context.Context, sent time.Time) keepalive.Result {
		next := lease.DeepCopy()
		rt := metav1.NewMicroTime(sent)
		next.Spec.RenewTime = &rt
		got, err := m.opts.Client.Update(rctx, next, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			// Written since we last read it: only this member writes its
			// Lease, so a renewal whose reply was lost. Read it again.
			got, err = m.opts.Client.Get(rctx, lease.Name, metav1.GetOptions{})
			if err == nil && got.UID != lease.UID {
				err = apierrors.NewNotFound(coordinationv1.Resource("leases"), lease.Name)
			}
			if err == nil {
				lease = got
				return keepalive.Again
			}
		}
		switch {
		case err == nil:
			lease = got
			m.reg.Renewed(m.validFrom(sent))
			return keepalive.Renewed
		case ctx.Err() != nil:
		case apierrors.IsNotFound(err):
			m.log.Info("lease deleted by an observer that judged it expired", "lease", lease.Name)
			return keepalive.Lost
		default:
			m.log.V(1).Info("renewal failed, retrying", "err", err)
		}
		return keepalive.Failed
	})
}

// leave deletes this member's Lease and removes its record, so that the
// others may take its shards at once. It runs after ctx is done, bounded by
// one lease duration; what it cannot do, the others do once they judge the
// Lease expired.
func (m *Membership) leave(ctx context.Context, lease *coordinationv1.Lease) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.opts.LeaseDuration)
	defer cancel()
	if err := m.deleteOwn(lctx, lease.UID); err != nil {
		m.log.Info("could not delete the lease on leaving; the others remove it once it expires", "err", err)
		return
	}
	if err := m.removeRecords(lctx, map[string]string{m.opts.Name: string(lease.UID)}); err != nil {
		m.log.Info("could not remove the record on leaving; the others remove it", "err", err)
	}
}

// deleteOwn deletes this member's Lease if it is still incarnation uid.
func (m *Membership) deleteOwn(ctx context.Context, uid types.UID) error {
	err := m.opts.Client.Delete(ctx, m.leaseName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("k8s lease membership: delete lease %s: %w", m.leaseName, err)
	}
	return nil
}

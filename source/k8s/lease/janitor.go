package lease

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// recordKey names a record checked at one version of the claims object.
type recordKey struct{ name, uid, claimsRV string }

// janitor judges the other members' Leases and removes the records of
// ended registrations, on every view change and when the next Lease is due
// to expire, until ctx is done.
//
// A Lease is expired once its duration has passed since this member first
// observed its current resourceVersion; it is then deleted with
// preconditions on that UID and resourceVersion, which fail if it was
// renewed meanwhile (then its expiry starts over from now). A record is
// removed once a get of its member's Lease answers NotFound or another UID:
// the incarnation that wrote it is gone for good.
func (m *Membership) janitor(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// done: Leases (uid/rv) deleted or found gone, not to be tried again.
	done := map[string]struct{}{}
	// checked: records found alive at a claims version, not to be read
	// again until the claims object changes.
	checked := map[recordKey]struct{}{}
	retryAfter := m.renewEvery()
	for {
		m.mu.Lock()
		r := m.reg.Load() // under mu, as in Current: one view
		synced, changed := m.synced, m.changed.C()
		leases := make([]*leaseObs, 0, len(m.leases))
		live := map[[2]string]bool{}
		for _, o := range m.leases {
			leases = append(leases, o)
			live[[2]string{o.holder, o.uid}] = true
		}
		c := m.claims
		m.mu.Unlock()

		var next time.Time
		later := func(t time.Time) {
			if next.IsZero() || t.Before(next) {
				next = t
			}
		}
		if synced {
			now := time.Now()
			// Forget Leases no longer in the view (deleted, or renewed to
			// another resourceVersion): done stays as small as the view.
			seen := make(map[string]struct{}, len(leases))
			for _, o := range leases {
				seen[o.uid+"/"+o.rv] = struct{}{}
			}
			for id := range done {
				if _, ok := seen[id]; !ok {
					delete(done, id)
				}
			}
			for _, o := range leases {
				if r != nil && o.uid == r.Info {
					continue // this member's own: renewed, not judged
				}
				id := o.uid + "/" + o.rv
				if _, ok := done[id]; ok {
					continue
				}
				if due := o.observed.Add(o.duration); now.Before(due) {
					later(due)
					continue
				}
				if m.expire(ctx, o) {
					done[id] = struct{}{}
				} else {
					later(time.Now().Add(retryAfter))
				}
			}
			if c.obj != nil && c.bad == nil {
				if !m.removeDead(ctx, c, live, checked) {
					later(time.Now().Add(retryAfter))
				}
			}
		}
		var due <-chan time.Time
		if !next.IsZero() {
			timer.Reset(time.Until(next))
			due = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-due:
		}
		timer.Stop()
	}
}

// expire deletes a Lease this member judged expired, on condition that it
// is still the incarnation and version observed. It reports whether that is
// settled (deleted, gone, or changed meanwhile: then observed again now);
// false after a failure to reach the apiserver.
func (m *Membership) expire(ctx context.Context, o *leaseObs) bool {
	uid := types.UID(o.uid)
	err := m.opts.Client.Delete(ctx, o.name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &o.rv},
	})
	switch {
	case err == nil:
		m.log.Info("member's lease expired; deleted it", "expired", o.holder, "lease", o.name, "uid", o.uid,
			"observed", o.observed, "duration", o.duration)
		return true
	case apierrors.IsNotFound(err):
		return true
	case apierrors.IsConflict(err):
		m.touch(o.name, o.rv, time.Now())
		return true
	default:
		if ctx.Err() == nil {
			m.log.V(1).Info("deleting an expired lease failed, will retry", "lease", o.name, "err", err)
		}
		return false
	}
}

// removeDead removes, from claims object c, the records whose Lease
// incarnation is not in the view (live: holder and UID) and, read from the
// apiserver, is gone. This member's own records are left to it. It reports
// false after a failure to reach the apiserver.
func (m *Membership) removeDead(ctx context.Context, c claimsObs, live map[[2]string]bool, checked map[recordKey]struct{}) bool {
	dead := map[string]string{}
	ok := true
	for name, rec := range c.recs {
		if name == m.opts.Name || live[[2]string{name, rec.uid}] {
			continue
		}
		k := recordKey{name, rec.uid, c.obj.ResourceVersion}
		if _, seen := checked[k]; seen {
			continue
		}
		l, err := m.opts.Client.Get(ctx, m.opts.Group+"."+name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err), err == nil && string(l.UID) != rec.uid:
			dead[name] = rec.uid
		case err == nil:
			checked[k] = struct{}{} // alive: the view has not caught up
		default:
			ok = false
		}
	}
	if len(checked) > 4*len(c.recs)+16 {
		clear(checked)
	}
	if len(dead) == 0 {
		return ok
	}
	if err := m.removeRecords(ctx, dead); err != nil {
		if ctx.Err() == nil {
			m.log.V(1).Info("removing dead members' records failed, will retry", "err", err)
		}
		return false
	}
	m.log.Info("removed the records of ended registrations", "members", dead)
	return ok
}

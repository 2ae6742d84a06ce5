package lease

import (
	"context"
	"errors"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ginformer/ginformer/internal/ctxtime"
	"github.com/ginformer/ginformer/source/internal/keepalive"
)

// leaseObs is a member's Lease as this member observed it.
type leaseObs struct {
	name     string // object name: Group.holder
	holder   string // the member's name
	uid      string
	rv       string
	duration time.Duration
	// observed is when this member first saw rv (list, watch or get), on
	// its clock: the Lease is expired duration after, unless it changes.
	observed time.Time
}

// watchTimeout bounds each watch of the group's Leases.
const watchTimeout = 5 * time.Minute

// watchLoop keeps the view: a list of the group's Leases, then a watch from
// its resourceVersion, again after any failure or end of the watch.
func (m *Membership) watchLoop(ctx context.Context) {
	backoff := keepalive.Backoff{Min: 50 * time.Millisecond, Max: m.renewEvery()}
	for ctx.Err() == nil {
		err := m.listAndWatch(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			backoff.Reset()
			continue
		}
		pause := backoff.Next()
		m.limit.Error(m.log, "watch", err, "reading the group's leases failed, listing again", "in", pause)
		if !ctxtime.Sleep(ctx, pause) {
			return
		}
	}
}

func (m *Membership) selector() string { return GroupLabel + "=" + m.opts.Group }

// listAndWatch lists the group's Leases (a consistent read), publishes them
// as one view, then applies the watch's events one by one until the watch
// ends.
func (m *Membership) listAndWatch(ctx context.Context) error {
	list, err := m.opts.Client.List(ctx, metav1.ListOptions{LabelSelector: m.selector()})
	if err != nil {
		return err
	}
	now := time.Now()
	m.mu.Lock()
	old := m.leases
	m.leases = make(map[string]*leaseObs, len(list.Items))
	var claims *coordinationv1.Lease
	for i := range list.Items {
		l := &list.Items[i]
		if l.Name == m.opts.Group {
			claims = l
			continue
		}
		if o := m.observe(l, old[l.Name], now); o != nil {
			m.leases[l.Name] = o
		}
	}
	m.setClaimsLocked(claims)
	m.synced = true
	m.publishLocked()
	m.mu.Unlock()

	// The watch ends after a few minutes, and the next list bounds how
	// long a watch that silently stopped delivering can leave the view
	// behind (the view's staleness makes claims conflict, never wrong).
	timeout := int64(watchTimeout / time.Second)
	w, err := m.opts.Client.Watch(ctx, metav1.ListOptions{
		LabelSelector:       m.selector(),
		ResourceVersion:     list.ResourceVersion,
		AllowWatchBookmarks: true,
		TimeoutSeconds:      &timeout,
	})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return nil
		}
		if ev.Type == watch.Error {
			return apierrors.FromObject(ev.Object)
		}
		l, isLease := ev.Object.(*coordinationv1.Lease)
		if !isLease {
			return errors.New("k8s lease membership: watch sent a non-Lease object")
		}
		switch ev.Type {
		case watch.Added, watch.Modified:
			m.apply(l)
		case watch.Deleted:
			m.remove(l)
		}
	}
}

// observe reads a member's Lease observed at now; prev is its previous
// observation (nil if none). It keeps prev's time if the Lease did not
// change, and returns nil for a Lease that is not a member's of this group.
func (m *Membership) observe(l *coordinationv1.Lease, prev *leaseObs, now time.Time) *leaseObs {
	if l.Spec.HolderIdentity == nil || l.Name != m.opts.Group+"."+*l.Spec.HolderIdentity {
		return nil
	}
	o := &leaseObs{
		name: l.Name, holder: *l.Spec.HolderIdentity, uid: string(l.UID), rv: l.ResourceVersion,
		duration: m.opts.LeaseDuration, observed: now,
	}
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d > 0 {
		o.duration = time.Duration(*d) * time.Second
	}
	if prev != nil && prev.uid == o.uid && prev.rv == o.rv {
		o.observed = prev.observed
	}
	return o
}

// apply records an added or modified Lease.
func (m *Membership) apply(l *coordinationv1.Lease) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if l.Name == m.opts.Group {
		m.setClaimsLocked(l)
		m.publishLocked()
		return
	}
	o := m.observe(l, m.leases[l.Name], now)
	if o == nil {
		if _, had := m.leases[l.Name]; !had {
			return
		}
		delete(m.leases, l.Name)
	} else {
		m.leases[l.Name] = o
	}
	m.publishLocked()
}

// remove records a deleted Lease.
func (m *Membership) remove(l *coordinationv1.Lease) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l.Name == m.opts.Group {
		m.setClaimsLocked(nil)
	} else {
		delete(m.leases, l.Name)
	}
	m.publishLocked()
}

// setClaimsLocked records the claims object (nil: absent). A change counts
// as a change of every record: claims based on an earlier view conflict.
func (m *Membership) setClaimsLocked(l *coordinationv1.Lease) {
	if l != nil && m.claims.obj != nil && l.ResourceVersion == m.claims.obj.ResourceVersion {
		return
	}
	if l == nil && m.claims.obj == nil && m.synced {
		return
	}
	m.claims = m.parseClaims(l)
	m.claimAt = m.seq + 1 // the seq of the view publishLocked is about to publish
}

// touch marks a member's Lease as observed again at now if it is still at
// rv: an observer's conditional delete failed, so the Lease changed (a
// renewal this member has not seen yet) and its expiry starts over.
func (m *Membership) touch(name, rv string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o := m.leases[name]; o != nil && o.rv == rv {
		c := *o
		c.observed = now
		m.leases[name] = &c
	}
}

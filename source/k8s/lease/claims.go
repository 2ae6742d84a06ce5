package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ginformer/ginformer/shard"
)

// claimsObs is the claims object as read: the Lease named Group whose
// ClaimsAnnotation records what each member holds.
type claimsObs struct {
	obj  *coordinationv1.Lease // nil: absent
	recs map[string]record     // by member name; never modified once published
	bad  error                 // the annotation does not parse: nothing may be claimed
}

// record is one member's entry in the claims object.
type record struct {
	uid   string // the UID of the member's Lease when it wrote the record
	epoch int64
	held  shard.Set
}

// claimsJSON is the ClaimsAnnotation's value.
type claimsJSON struct {
	Members map[string]recordJSON `json:"members"`
}

type recordJSON struct {
	UID    string `json:"uid"`
	Epoch  int64  `json:"epoch"`
	Shards int    `json:"shards,omitempty"`
	Held   string `json:"held"`
}

// parseClaims reads the claims object (nil: absent). A record that does not
// parse counts as holding every shard of its space (nothing is taken from
// it); an annotation that does not parse makes every claim fail until it is
// fixed. Both are logged.
func (m *Membership) parseClaims(l *coordinationv1.Lease) claimsObs {
	c := claimsObs{obj: l, recs: map[string]record{}}
	if l == nil || l.Annotations[ClaimsAnnotation] == "" {
		return c
	}
	var v claimsJSON
	if err := json.Unmarshal([]byte(l.Annotations[ClaimsAnnotation]), &v); err != nil {
		c.bad = fmt.Errorf("k8s lease membership: claims object %s: %w", l.Name, err)
		m.log.Error(err, "claims object does not parse; claiming nothing until it is fixed", "lease", l.Name)
		return c
	}
	for name, r := range v.Members {
		rec := record{uid: r.UID, epoch: r.Epoch}
		var err error
		if r.Shards != 0 {
			rec.held, err = shard.ParseSet(r.Shards, r.Held)
		}
		if err != nil {
			m.log.Error(err, "bad member record; treating it as holding every shard", "member", name)
			n := min(max(r.Shards, shard.DefaultShards), shard.MaxShards)
			all := make([]int, n)
			for i := range all {
				all[i] = i
			}
			rec.held, _ = shard.NewSet(n, all...)
		}
		c.recs[name] = rec
	}
	return c
}

// encodeClaims renders records as the ClaimsAnnotation's value.
func encodeClaims(recs map[string]record) (string, error) {
	v := claimsJSON{Members: make(map[string]recordJSON, len(recs))}
	for name, r := range recs {
		v.Members[name] = recordJSON{UID: r.uid, Epoch: r.epoch, Shards: r.held.Shards(), Held: r.held.String()}
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// Claim records that this member holds exactly held, with an Update of the
// claims object conditioned on the resourceVersion base was built from (a
// Create if base saw none), and only while registration base.Epoch is
// current and valid. See [shard.Membership.Claim].
//
// Possible errors: [shard.ErrConflict] (the claims object changed since
// base, at the server or in a newer view), [shard.ErrNotRegistered], the
// apiserver's.
func (m *Membership) Claim(ctx context.Context, base shard.View, held shard.Set) error {
	r := m.reg.Load()
	if base.Epoch == 0 || r == nil || r.Epoch != base.Epoch || !time.Now().Before(r.Until) {
		return fmt.Errorf("k8s lease membership: epoch %d: %w", base.Epoch, shard.ErrNotRegistered)
	}
	m.mu.Lock()
	c, stale := m.claims, base.Revision < m.claimAt
	m.mu.Unlock()
	if stale {
		return fmt.Errorf("k8s lease membership: claims changed since view %d: %w", base.Revision, shard.ErrConflict)
	}
	if c.bad != nil {
		return c.bad
	}
	recs := maps.Clone(c.recs)
	recs[m.opts.Name] = record{uid: r.Info, epoch: r.Epoch, held: held}
	return m.writeClaims(ctx, c.obj, recs)
}

// Release records that this member holds exactly held, whatever else
// changed since (it reads the claims object again after a conflict), as
// long as registration epoch is current. It only rewrites this member's own
// record: a record of an earlier registration of this name is replaced
// only by an empty one, and a missing record is not written again (it was
// removed because this registration ended). See
// [shard.Membership.Release].
//
// Possible errors: [shard.ErrNotRegistered], the apiserver's.
func (m *Membership) Release(ctx context.Context, epoch int64, held shard.Set) error {
	r := m.reg.Load()
	if epoch == 0 || r == nil || r.Epoch != epoch {
		return fmt.Errorf("k8s lease membership: epoch %d: %w", epoch, shard.ErrNotRegistered)
	}
	m.mu.Lock()
	c := m.claims
	m.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if c.bad != nil {
			return c.bad
		}
		rec, ok := c.recs[m.opts.Name]
		switch {
		case !ok && held.Empty():
			return nil
		case !ok, rec.uid != r.Info && !held.Empty():
			return fmt.Errorf("k8s lease membership: record of epoch %d removed: %w", epoch, shard.ErrNotRegistered)
		}
		recs := maps.Clone(c.recs)
		recs[m.opts.Name] = record{uid: r.Info, epoch: r.Epoch, held: held}
		err := m.writeClaims(ctx, c.obj, recs)
		if !errors.Is(err, shard.ErrConflict) || attempt == 4 {
			return err
		}
		if c, err = m.getClaims(ctx); err != nil {
			return err
		}
	}
}

// removeRecords removes the records of dead member incarnations (name →
// Lease UID), reading the claims object afresh and retrying on conflicts.
// Records of other incarnations of those names are kept.
func (m *Membership) removeRecords(ctx context.Context, dead map[string]string) error {
	for attempt := 0; ; attempt++ {
		c, err := m.getClaims(ctx)
		if err != nil {
			return err
		}
		if c.bad != nil {
			return c.bad
		}
		recs := maps.Clone(c.recs)
		for name, uid := range dead {
			if rec, ok := recs[name]; ok && rec.uid == uid {
				delete(recs, name)
			}
		}
		if len(recs) == len(c.recs) {
			return nil
		}
		err = m.writeClaims(ctx, c.obj, recs)
		if !errors.Is(err, shard.ErrConflict) || attempt == 4 {
			return err
		}
	}
}

// getClaims reads the claims object from the apiserver.
func (m *Membership) getClaims(ctx context.Context) (claimsObs, error) {
	l, err := m.opts.Client.Get(ctx, m.opts.Group, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return m.parseClaims(nil), nil
	case err != nil:
		return claimsObs{}, fmt.Errorf("k8s lease membership: read claims: %w", err)
	}
	return m.parseClaims(l), nil
}

// writeClaims replaces the records of the claims object obj (nil: create
// it) with recs, conditioned on obj's resourceVersion.
//
// Possible errors: [shard.ErrConflict] (409, or the object was deleted or
// created meanwhile), the apiserver's.
func (m *Membership) writeClaims(ctx context.Context, obj *coordinationv1.Lease, recs map[string]record) error {
	val, err := encodeClaims(recs)
	if err != nil {
		return err
	}
	if obj == nil {
		obj = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name:   m.opts.Group,
			Labels: map[string]string{GroupLabel: m.opts.Group},
		}}
		obj.Annotations = map[string]string{ClaimsAnnotation: val}
		_, err = m.opts.Client.Create(ctx, obj, metav1.CreateOptions{})
	} else {
		obj = obj.DeepCopy()
		if obj.Annotations == nil {
			obj.Annotations = map[string]string{}
		}
		obj.Annotations[ClaimsAnnotation] = val
		_, err = m.opts.Client.Update(ctx, obj, metav1.UpdateOptions{})
	}
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err), apierrors.IsNotFound(err):
		return fmt.Errorf("k8s lease membership: claims object changed: %w", shard.ErrConflict)
	default:
		return fmt.Errorf("k8s lease membership: write claims: %w", err)
	}
}

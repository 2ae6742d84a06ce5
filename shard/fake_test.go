package shard_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ginformer/ginformer/shard"
)

// cluster is an in-memory backend with the properties Membership asks for:
// records attached to registrations, a compare-and-swap claim over every
// record, views published on every change. It also checks, on every claim,
// that no two records hold the same shard.
type cluster struct {
	n int

	mu      sync.Mutex
	rev     int64
	epochs  int64
	recs    map[string]*rec
	changed chan struct{}
	err     error // first invariant violation
}

type rec struct {
	held  shard.Set
	mod   int64
	epoch int64
}

func newCluster(n int) *cluster {
	return &cluster{n: n, recs: map[string]*rec{}, changed: make(chan struct{})}
}

func (c *cluster) bumpLocked() {
	c.rev++
	close(c.changed)
	c.changed = make(chan struct{})
}

// expire removes name's record as a server expiring its lease would.
func (c *cluster) expire(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.recs[name]; ok {
		delete(c.recs, name)
		c.bumpLocked()
	}
}

func (c *cluster) violation() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// member is one replica's Membership.
type member struct {
	c    *cluster
	name string

	mu    sync.Mutex
	epoch int64
	until time.Time // the registration's validity
	// lostReplies: the next claims are recorded but answer an error, as
	// a claim whose reply was lost.
	lostReplies int
	crashed     bool // Run's end does not remove the record
}

func (c *cluster) member(name string) *member { return &member{c: c, name: name} }

func (m *member) Name() string { return m.name }

func (m *member) Run(ctx context.Context) error {
	m.c.mu.Lock()
	m.c.epochs++
	m.mu.Lock()
	m.epoch, m.until = m.c.epochs, time.Now().Add(1000*time.Hour)
	m.mu.Unlock()
	m.c.recs[m.name] = &rec{epoch: m.epoch, mod: m.c.rev + 1}
	m.c.bumpLocked()
	m.c.mu.Unlock()
	<-ctx.Done()
	m.mu.Lock()
	crashed := m.crashed
	if now := time.Now(); now.Before(m.until) {
		m.until = now
	}
	m.mu.Unlock()
	if !crashed {
		m.c.expire(m.name)
	}
	return nil
}

// crash makes the lease lapse locally now, as a member cut off from the
// server whose keepalives fail; the record stays until expire.
func (m *member) crash() {
	m.mu.Lock()
	m.crashed, m.until = true, time.Now()
	m.mu.Unlock()
	m.c.mu.Lock()
	m.c.bumpLocked()
	m.c.mu.Unlock()
}

// Current reads the member's epoch and the cluster in one critical section
// (c.mu, then m.mu: the order Run and Claim take them in), so that a change
// is either in the view returned or closes the channel returned with it.
// Reading the epoch before taking c.mu lost a wakeup: a registration made
// in between came back as "not registered" with the channel of the state
// after it, and the Owner waited for a change that had already happened.
func (m *member) Current() (shard.View, <-chan struct{}, bool) {
	c := m.c
	c.mu.Lock()
	defer c.mu.Unlock()
	m.mu.Lock()
	epoch := m.epoch
	m.mu.Unlock()
	if epoch == 0 {
		return shard.View{}, c.changed, false
	}
	v := shard.View{Revision: c.rev, Epoch: epoch}
	if r, ok := c.recs[m.name]; !ok || r.epoch != epoch {
		v.Epoch = 0
	}
	for _, name := range sortedKeys(c.recs) {
		v.Members = append(v.Members, shard.Member{Name: name, Held: c.recs[name].held})
	}
	return v, c.changed, true
}

func (m *member) Claim(_ context.Context, base shard.View, held shard.Set) (err error) {
	c := m.c
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.recs[m.name]
	if !ok || r.epoch != base.Epoch {
		return shard.ErrNotRegistered
	}
	for _, o := range c.recs {
		if o.mod > base.Revision {
			return shard.ErrConflict
		}
	}
	r.held = held
	r.mod = c.rev + 1
	defer func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.lostReplies > 0 {
			m.lostReplies--
			err = errors.New("reply lost")
		}
	}()
	for name, o := range c.recs {
		if name != m.name && !o.held.Intersect(held).Empty() && c.err == nil {
			c.err = fmt.Errorf("%s and %s both hold %s", m.name, name, o.held.Intersect(held))
		}
	}
	c.bumpLocked()
	return nil
}

func (m *member) Release(_ context.Context, epoch int64, held shard.Set) error {
	c := m.c
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.recs[m.name]
	if !ok || r.epoch != epoch {
		return shard.ErrNotRegistered
	}
	r.held = held
	r.mod = c.rev + 1
	c.bumpLocked()
	return nil
}

func (m *member) ValidUntil(epoch int64) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if epoch != m.epoch {
		return time.Time{}
	}
	return m.until
}

func sortedKeys(m map[string]*rec) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

package informer

import (
	"context"
	"fmt"
	"reflect"
	"sync"
)

// Group runs several informers in one process: it shares one informer per
// (name, key type, object type), starts each lazily (at [Group.Run], or at
// once if the group is running), and can stop a single informer without
// stopping the rest (which client-go's factory cannot, kubernetes#79610).
//
// The zero value is not usable: use [NewGroup]. Safe for concurrent use.
type Group struct {
	// mu guards every field below.
	mu      sync.Mutex
	members map[groupKey]*groupMember
	ctx     context.Context // the Run context, nil before Run
	wg      sync.WaitGroup  // one per running informer
}

type groupKey struct {
	name string
	k, t reflect.Type
}

type groupMember struct {
	informer any // a *SharedInformer[K, T] of the key's types
	run      func(ctx context.Context) error
	synced   Syncer
	cancel   context.CancelFunc // set once started
	done     chan struct{}      // closed when its Run returned
}

// NewGroup returns an empty group.
func NewGroup() *Group {
	return &Group{members: make(map[groupKey]*groupMember)}
}

// InformerFor returns the group's informer named opts.Name for objects of
// type T keyed by K, creating it from opts if there is none yet (opts is
// then ignored: the first caller's options win). A new informer starts at
// once if the group is running, else when it runs.
//
// Possible errors: those of [NewSharedInformer]; [ErrClosed] if the group
// has stopped.
func InformerFor[K comparable, T any](g *Group, opts Options[K, T]) (*SharedInformer[K, T], error) {
	if opts.Name == "" {
		opts.Name = "informer"
	}
	key := groupKey{opts.Name, reflect.TypeFor[K](), reflect.TypeFor[T]()}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ctx != nil && g.ctx.Err() != nil {
		return nil, fmt.Errorf("group: informer %q: %w", opts.Name, ErrClosed)
	}
	if m, ok := g.members[key]; ok {
		return m.informer.(*SharedInformer[K, T]), nil
	}
	inf, err := NewSharedInformer(opts)
	if err != nil {
		return nil, err
	}
	m := &groupMember{informer: inf, run: inf.Run, synced: inf, done: make(chan struct{})}
	g.members[key] = m
	if g.ctx != nil {
		g.startLocked(m)
	}
	return inf, nil
}

// Run starts every informer of the group and blocks until ctx is done and
// all of them have stopped.
//
// Possible errors: [ErrAlreadyStarted].
func (g *Group) Run(ctx context.Context) error {
	g.mu.Lock()
	if g.ctx != nil {
		g.mu.Unlock()
		return fmt.Errorf("group: %w", ErrAlreadyStarted)
	}
	g.ctx = ctx
	for _, m := range g.members {
		g.startLocked(m)
	}
	g.mu.Unlock()
	<-ctx.Done()
	g.wg.Wait()
	return nil
}

func (g *Group) startLocked(m *groupMember) {
	ctx, cancel := context.WithCancel(g.ctx)
	m.cancel = cancel
	g.wg.Go(func() {
		defer close(m.done)
		defer cancel()
		_ = m.run(ctx)
	})
}

// Stop stops the informer named name for objects of type T keyed by K,
// waits until it has exited, and removes it from the group: a later
// [InformerFor] creates a fresh one. The other informers go on. It reports
// whether there was such an informer.
func Stop[K comparable, T any](g *Group, name string) bool {
	key := groupKey{name, reflect.TypeFor[K](), reflect.TypeFor[T]()}
	g.mu.Lock()
	m, ok := g.members[key]
	delete(g.members, key)
	g.mu.Unlock()
	if !ok {
		return false
	}
	if m.cancel != nil {
		m.cancel()
		<-m.done
	}
	return true
}

// WaitForSync blocks until every informer of the group, as of the call, has
// synced, or ctx is done.
//
// Possible errors: ctx.Err().
func (g *Group) WaitForSync(ctx context.Context) error {
	g.mu.Lock()
	syncers := make([]Syncer, 0, len(g.members))
	for _, m := range g.members {
		syncers = append(syncers, m.synced)
	}
	g.mu.Unlock()
	return WaitForSync(ctx, syncers...)
}

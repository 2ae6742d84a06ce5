package informer

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
)

// Group runs several informers in one process: it shares one informer per
// name, starts each lazily (at [Group.Run], or at once if the group is
// running), and can stop a single informer without stopping the rest (which
// client-go's factory cannot, kubernetes#79610).
//
// The zero value is not usable: use [NewGroup]. Safe for concurrent use.
type Group struct {
	// mu guards every field below.
	mu      sync.Mutex
	members map[string]*groupMember // by informer name
	ctx     context.Context         // the Run context, nil before Run
	wg      sync.WaitGroup          // one per running informer
}

type groupMember struct {
	informer Inspector    // a *SharedInformer[K, T]
	opts     any          // the Options[K, T] it was made from, for InformerFor to compare
	k, t     reflect.Type // K and T, for InformerFor's errors
	run      func(ctx context.Context) error
	synced   Syncer
	cancel   context.CancelFunc // set once started
	done     chan struct{}      // closed when its Run returned
}

// NewGroup returns an empty group.
func NewGroup() *Group {
	return &Group{members: make(map[string]*groupMember)}
}

// InformerFor returns the group's informer named opts.Name ("" stands for
// "informer", the default name), creating it from opts if there is none yet.
// A new informer starts at once if the group is running, else when it runs.
//
// Names are unique within a group: a later call for a name must pass the
// same key and object types and the same options, else it fails instead of
// handing out an informer configured otherwise. The fields are compared as
// given, before defaults (a zero BatchSize differs from 1000), by what Go
// can compare safely:
//
//   - Funcs (KeyFunc, Transform, ErrorHandler, ObjectVersion, Index.Func,
//     MutationDetector.Copy and Equal) are compared only for being set: a
//     func one caller gives and the other leaves nil is a mismatch, two
//     funcs are not compared (Go cannot tell whether two func values behave
//     alike). The first caller's funcs win: the informer runs them for
//     every caller. Callers that need other funcs use another name.
//   - Logger is not compared; the first caller's is used (loggers are
//     routinely derived per caller).
//   - Interfaces (Source, Metrics, Snapshot.Store, Snapshot.Codec) are the
//     same if both are nil, or their dynamic types are identical and the
//     values are equal with == (for a pointer: the same pointer). A dynamic
//     value that is not comparable (a [SourceFuncs], which holds funcs) is
//     never the same: pass a pointer to it (&SourceFuncs{...}) and share
//     that.
//   - Indexes are the same if they have the same names in any order, each
//     with a func or each without. Other fields compare with ==.
//
// Possible errors: those of [NewSharedInformer]; [ErrOptionsMismatch] (the
// name is taken by an informer of other types or options; the error names
// the fields that differ); [ErrClosed] if the group has stopped.
func InformerFor[K comparable, T any](g *Group, opts Options[K, T]) (*SharedInformer[K, T], error) {
	if opts.Name == "" {
		opts.Name = "informer"
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ctx != nil && g.ctx.Err() != nil {
		return nil, fmt.Errorf("group: informer %q: %w", opts.Name, ErrClosed)
	}
	if m, ok := g.members[opts.Name]; ok {
		first, ok := m.opts.(Options[K, T])
		if !ok {
			return nil, fmt.Errorf("group: informer %q: exists for key type %v and object type %v, not %v and %v: %w",
				opts.Name, m.k, m.t, reflect.TypeFor[K](), reflect.TypeFor[T](), ErrOptionsMismatch)
		}
		if diff := optionsDiff(&first, &opts); diff != "" {
			return nil, fmt.Errorf("group: informer %q: options differ from the first caller's in %s: %w", opts.Name, diff, ErrOptionsMismatch)
		}
		return m.informer.(*SharedInformer[K, T]), nil
	}
	inf, err := NewSharedInformer(opts)
	if err != nil {
		return nil, err
	}
	kept := opts
	kept.Indexes = slices.Clone(opts.Indexes) // the caller may reuse its slice
	m := &groupMember{informer: inf, opts: kept, k: reflect.TypeFor[K](), t: reflect.TypeFor[T](),
		run: inf.Run, synced: inf, done: make(chan struct{})}
	g.members[opts.Name] = m
	if g.ctx != nil {
		g.startLocked(m)
	}
	return inf, nil
}

// Run starts every informer of the group and blocks until ctx is done and
// all of them have stopped. A group runs once; if ctx is already done when
// Run is called, Run starts nothing and returns ctx's error at once, and
// the group is as it was (it may still run).
//
// Possible errors: ctx.Err() (wrapped; ctx was done before Run started),
// [ErrAlreadyStarted].
func (g *Group) Run(ctx context.Context) error {
	g.mu.Lock()
	if g.ctx != nil {
		g.mu.Unlock()
		return fmt.Errorf("group: %w", ErrAlreadyStarted)
	}
	if err := ctx.Err(); err != nil {
		g.mu.Unlock()
		return fmt.Errorf("group: not started, the context is done: %w", err)
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

// Stop stops the group's informer named name ("" stands for "informer"),
// waits until it has exited, and removes it from the group: a later
// [InformerFor] creates a fresh one, with any types and options. The other
// informers go on. It reports whether there was such an informer.
func (g *Group) Stop(name string) bool {
	if name == "" {
		name = "informer"
	}
	g.mu.Lock()
	m, ok := g.members[name]
	delete(g.members, name)
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

// Inspectors returns the group's informers as of the call, sorted by name,
// for read-only tools such as a debug page (see package informer/debughttp).
func (g *Group) Inspectors() []Inspector {
	g.mu.Lock()
	names := slices.Sorted(maps.Keys(g.members))
	out := make([]Inspector, len(names))
	for i, name := range names {
		out[i] = g.members[name].informer
	}
	g.mu.Unlock()
	return out
}

// WaitForSync blocks until every informer of the group, as of the call, has
// synced, or ctx is done. A group without informers is refused, as
// [WaitForSync] refuses nothing to wait for: informers obtained after the
// call are not waited for.
//
// Possible errors: ctx.Err() (wrapped, with the cause, as for
// [WaitForSync]); [ErrInvalidOptions] (the group has no informers).
func (g *Group) WaitForSync(ctx context.Context) error {
	g.mu.Lock()
	syncers := make([]Syncer, 0, len(g.members))
	for _, m := range g.members {
		syncers = append(syncers, m.synced)
	}
	g.mu.Unlock()
	if len(syncers) == 0 {
		return fmt.Errorf("group: WaitForSync: the group has no informers to wait for: %w", ErrInvalidOptions)
	}
	return WaitForSync(ctx, syncers...)
}

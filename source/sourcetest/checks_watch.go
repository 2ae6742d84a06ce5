package sourcetest

import (
	"errors"
	"fmt"
	"sync"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// checkWatchFromList: a watch from a list's version sees exactly the later
// changes, in order, once each, with the versions of their writes; Deleted
// carries the last state.
func checkWatchFromList[T any](k *kit[T]) {
	k.create("a")
	k.create("b")
	_, v := k.listAll(informer.ListOptions{})
	s := k.watch(k.ctx, informer.WatchOptions{Version: v})
	vc1 := k.create("c")
	va2 := k.update("a")
	vb := k.del("b")
	vc2 := k.update("c")
	vc := k.del("c")
	va3 := k.update("a")
	s.expect(
		change{informer.EventAdded, "c", 1, vc1},
		change{informer.EventModified, "a", 2, va2},
		change{informer.EventDeleted, "b", 1, vb},
		change{informer.EventModified, "c", 2, vc2},
		change{informer.EventDeleted, "c", 2, vc},
		change{informer.EventModified, "a", 3, va3},
	)
	// Nothing else came in between: the next change is the next write.
	vz := k.create("z")
	s.expect(change{informer.EventAdded, "z", 1, vz})
}

// checkWatchReplay: a watch from an older version first replays the changes
// after it, then continues live.
func checkWatchReplay[T any](k *kit[T]) {
	v1 := k.create("a")
	v2 := k.update("a")
	v3 := k.create("b")
	v4 := k.del("a")
	s := k.watch(k.ctx, informer.WatchOptions{Version: v1})
	s.expect(
		change{informer.EventModified, "a", 2, v2},
		change{informer.EventAdded, "b", 1, v3},
		change{informer.EventDeleted, "a", 2, v4},
	)
	v5 := k.update("b")
	s.expect(change{informer.EventModified, "b", 2, v5})

	// Two watches from the same version see the same stream.
	s2 := k.watch(k.ctx, informer.WatchOptions{Version: v3})
	s2.expect(change{informer.EventDeleted, "a", 2, v4}, change{informer.EventModified, "b", 2, v5})
}

// checkWatchConcurrentWrites: while a writer races a watch opened before it,
// the watch sees every write once, in the writer's order.
func checkWatchConcurrentWrites[T any](k *kit[T]) {
	_, v := k.listAll(informer.ListOptions{})
	s := k.watch(k.ctx, informer.WatchOptions{Version: v})
	const n = 50
	type write struct {
		c   change
		err error
	}
	writes := make(chan write, 3*n)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(writes)
		for i := range n {
			name := fmt.Sprintf("w%02d", i)
			v, err := k.h.Create(k.ctx, name)
			writes <- write{change{informer.EventAdded, name, 1, v}, err}
			if i%2 == 0 {
				v, err = k.h.Update(k.ctx, name)
				writes <- write{change{informer.EventModified, name, 2, v}, err}
			}
			if i%3 == 0 {
				v, err = k.h.Delete(k.ctx, name)
				gen := 1
				if i%2 == 0 {
					gen = 2
				}
				writes <- write{change{informer.EventDeleted, name, gen, v}, err}
			}
		}
	})
	defer wg.Wait()
	for w := range writes {
		require.NoError(k.t, w.err, "harness: write %v", w.c)
		k.record(writeOf(w.c))
		s.expect(w.c)
	}
}

// checkFallBehind: a watcher that falls behind the compacted history either
// still delivers every change (it had taken them before the compaction) or
// ends with an Error event wrapping ErrExpired after a gapless prefix of
// them; it never skips changes and goes on.
func checkFallBehind[T any](k *kit[T]) {
	if k.h.Compact == nil {
		k.t.Skip("harness: no Compact")
	}
	_, v := k.listAll(informer.ListOptions{})
	s := k.watch(k.ctx, informer.WatchOptions{Version: v})
	// Write without reading, so a source with small buffers falls behind.
	var want []change
	for i := range 20 {
		name := fmt.Sprintf("f%02d", i)
		want = append(want, change{informer.EventAdded, name, 1, k.create(name)})
		if i%4 == 0 {
			want = append(want, change{informer.EventModified, name, 2, k.update(name)})
		}
	}
	require.NoError(k.t, k.h.Compact(k.ctx), "harness: compact")
	compacted := len(want)
	for i := range 3 {
		name := fmt.Sprintf("g%d", i)
		want = append(want, change{informer.EventAdded, name, 1, k.create(name)})
	}
	for i, w := range want {
		ev, ok := s.next(w.String())
		for ok && ev.Type == informer.EventBookmark {
			ev, ok = s.next(w.String())
		}
		switch {
		case !ok:
			k.t.Fatalf("%s: the channel was closed after %d of %d changes, without an Error event, while %s was due; "+
				"a watcher behind the compacted history must end with an Error event wrapping ErrExpired",
				s.desc, i, len(want), w)
		case ev.Type == informer.EventError:
			if !errors.Is(ev.Err, informer.ErrExpired) {
				k.t.Fatalf("%s: after %d of %d changes (the history was compacted after change %d), an %s; the contract "+
					"requires a watcher behind the compacted history to end with ErrExpired", s.desc, i, len(want),
					compacted, k.describeEvent(ev))
			}
			if ev, ok := s.next("the channel closed after the Error event"); ok {
				k.t.Fatalf("%s: %s follows the Error event", s.desc, k.describeEvent(ev))
			}
			return
		}
		if got := s.got(ev, true); got != w {
			skipped := ""
			for j := i; j < len(want); j++ {
				if want[j] == got {
					skipped = fmt.Sprintf(" (it skipped %d changes from %s on)", j-i, w)
				}
			}
			k.t.Fatalf("%s: change %d of %d (the history was compacted after change %d): expected %s; got %s%s. A "+
				"watcher that falls behind the compacted history must end with an Error event wrapping ErrExpired "+
				"(or Watch must return it), so the reflector relists; going on loses the changes in between",
				s.desc, i+1, len(want), compacted, w, got, skipped)
		}
	}
}

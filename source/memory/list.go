package memory

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ginformer/ginformer/informer"
)

// List returns one page of the objects, in key order (see [Options.Compare]).
// It implements [informer.Source.List]:
//
//   - [informer.ReadLatest], [informer.ReadAny]: the current state.
//   - [informer.ReadNotOlderThan] v: the current state, if it is at least v.
//   - [informer.ReadExact] v: the state at v, rebuilt from the history.
//   - Limit n > 0: at most n items; Continue is then set when more follow.
//     A page's Continue token pins the version of the first page: later pages
//     show the state at that version, whatever was written meanwhile.
//
// Possible errors: [informer.ErrExpired] (v or the token's version was
// compacted), [informer.ErrVersionTooLarge] (v is newer than the store),
// [informer.ErrInvalidOptions] (malformed version or token, negative Limit,
// unknown Mode), ctx.Err(), and errors injected by [Store.FailNextList].
func (s *Store[K, T]) List(ctx context.Context, opts informer.ListOptions) (informer.ListPage[T], error) {
	return s.list(ctx, opts, nil)
}

// list implements List for the store (pred nil) and its filtered views.
func (s *Store[K, T]) list(ctx context.Context, opts informer.ListOptions, pred func(T) bool) (informer.ListPage[T], error) {
	if err := s.beforeCall(ctx, &s.failList); err != nil {
		return informer.ListPage[T]{}, err
	}
	if opts.Limit < 0 {
		return informer.ListPage[T]{}, fmt.Errorf("memory: list limit %d < 0: %w", opts.Limit, informer.ErrInvalidOptions)
	}
	var rev int64
	offset := 0
	var err error
	if opts.Continue != "" {
		rev, offset, err = parseContinue(opts.Continue)
	} else {
		rev, err = s.listRevision(opts)
	}
	if err != nil {
		return informer.ListPage[T]{}, err
	}
	snap, err := s.snapshotAt(rev)
	if err != nil {
		return informer.ListPage[T]{}, err
	}
	page := informer.ListPage[T]{Version: formatVersion(rev)}
	items := snap.items
	if offset > len(items) {
		return informer.ListPage[T]{}, fmt.Errorf("memory: continue token past the end: %w", informer.ErrInvalidOptions)
	}
	i := offset
	switch {
	case pred == nil && opts.Limit == 0:
		page.Items = append([]T(nil), items[i:]...)
		i = len(items)
	case pred == nil:
		end := min(len(items), i+opts.Limit)
		page.Items = append([]T(nil), items[i:end]...)
		i = end
	default:
		for ; i < len(items) && (opts.Limit == 0 || len(page.Items) < opts.Limit); i++ {
			if pred(items[i]) {
				page.Items = append(page.Items, items[i])
			}
		}
	}
	if i < len(items) {
		page.Continue = formatContinue(rev, i)
	}
	return page, nil
}

// listRevision resolves the read mode of a first page to a revision.
func (s *Store[K, T]) listRevision(opts informer.ListOptions) (int64, error) {
	s.mu.Lock()
	cur := s.rev
	s.mu.Unlock()
	switch opts.Mode {
	case informer.ReadLatest, informer.ReadAny:
		return cur, nil
	case informer.ReadNotOlderThan, informer.ReadExact:
		v, err := parseVersion(opts.Version)
		if err != nil {
			return 0, err
		}
		if v > cur {
			return 0, fmt.Errorf("memory: list at %d, current %d: %w", v, cur, informer.ErrVersionTooLarge)
		}
		if opts.Mode == informer.ReadNotOlderThan {
			return cur, nil
		}
		return v, nil // snapshotAt checks compaction
	}
	return 0, fmt.Errorf("memory: read mode %v: %w", opts.Mode, informer.ErrInvalidOptions)
}

// continuePrefix starts every continue token of this package.
const continuePrefix = "mem1:"

func formatContinue(rev int64, offset int) string {
	return continuePrefix + strconv.FormatInt(rev, 10) + ":" + strconv.Itoa(offset)
}

// parseContinue decodes a continue token.
//
// Possible errors: [informer.ErrInvalidOptions].
func parseContinue(tok string) (rev int64, offset int, err error) {
	bad := fmt.Errorf("memory: malformed continue token %q: %w", tok, informer.ErrInvalidOptions)
	rest, ok := strings.CutPrefix(tok, continuePrefix)
	if !ok {
		return 0, 0, bad
	}
	r, o, ok := strings.Cut(rest, ":")
	if !ok {
		return 0, 0, bad
	}
	rev, err1 := strconv.ParseInt(r, 10, 64)
	offset, err2 := strconv.Atoi(o)
	if err1 != nil || err2 != nil || rev < 0 || offset < 0 {
		return 0, 0, bad
	}
	return rev, offset, nil
}

// beforeCall applies the injected delay and failure to a List or Watch.
func (s *Store[K, T]) beforeCall(ctx context.Context, fail *error) error {
	s.mu.Lock()
	err := *fail
	*fail = nil
	d := s.delay
	s.mu.Unlock()
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	if err != nil {
		return err
	}
	return ctx.Err()
}

package memory_test

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/source/memory"
	"github.com/ginformer/ginformer/source/sourcetest"
)

// obj is the test object: a name and a generation.
type obj struct {
	Name string
	Gen  int
	Tier string
}

func objKey(o *obj) (string, error) { return o.Name, nil }

func newStore(t testing.TB, opts memory.Options[string, *obj]) *memory.Store[string, *obj] {
	t.Helper()
	if opts.KeyFunc == nil {
		opts.KeyFunc = objKey
	}
	s, err := memory.New(opts)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func put(t testing.TB, s *memory.Store[string, *obj], name string, gen int) string {
	t.Helper()
	v, err := s.Put(&obj{Name: name, Gen: gen})
	require.NoError(t, err)
	return v
}

func compareVersions(a, b string) int {
	x, err1 := strconv.ParseInt(a, 10, 64)
	y, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		panic(fmt.Sprintf("bad versions %q %q", a, b))
	}
	return cmp.Compare(x, y)
}

func harness(s *memory.Store[string, *obj]) sourcetest.Harness[*obj] {
	return sourcetest.Harness[*obj]{
		Source: s,
		Create: func(_ context.Context, name string) (string, error) {
			if _, _, ok := s.Get(name); ok {
				return "", fmt.Errorf("create %s: exists", name)
			}
			return s.Put(&obj{Name: name, Gen: 1})
		},
		Update: func(_ context.Context, name string) (string, error) {
			o, _, ok := s.Get(name)
			if !ok {
				return "", fmt.Errorf("update %s: not found", name)
			}
			return s.Put(&obj{Name: name, Gen: o.Gen + 1})
		},
		Delete: func(_ context.Context, name string) (string, error) {
			v, ok := s.Delete(name)
			if !ok {
				return "", fmt.Errorf("delete %s: not found", name)
			}
			return v, nil
		},
		Name:            func(o *obj) string { return o.Name },
		Generation:      func(o *obj) int { return o.Gen },
		Compact:         func(context.Context) error { s.CompactAll(); return nil },
		Bookmark:        func(context.Context) error { s.RequestBookmarks(); return nil },
		CompareVersions: compareVersions,
	}
}

func TestConformance(t *testing.T) {
	sourcetest.Run(t, func(t *testing.T) sourcetest.Harness[*obj] {
		return harness(newStore(t, memory.Options[string, *obj]{}))
	})
}

// The same contract holds with tiny buffers and history, a user Compare, and
// through a filtered view that matches everything.
func TestConformanceSmall(t *testing.T) {
	sourcetest.Run(t, func(t *testing.T) sourcetest.Harness[*obj] {
		s := newStore(t, memory.Options[string, *obj]{
			WatchBuffer: 1, HistorySize: 200, Compare: func(a, b string) int { return cmp.Compare(b, a) },
		})
		h := harness(s)
		h.Source = s.Filtered(func(*obj) bool { return true })
		return h
	})
}

package sourcetest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
	"github.com/ginformer/ginformer/source/sourcetest"
)

type item struct {
	name string
	gen  int
}

// minimalHarness is a harness with only the required parts, over a source
// without streaming lists or exact reads: the kit skips what it cannot check
// and verifies that SendInitialEvents is refused with errors.ErrUnsupported.
func minimalHarness(t *testing.T) sourcetest.Harness[item] {
	s, err := memory.New(memory.Options[string, item]{KeyFunc: func(i item) (string, error) { return i.name, nil }})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	write := func(name string, delta int, mustExist bool) (string, error) {
		cur, _, ok := s.Get(name)
		if ok != mustExist {
			return "", fmt.Errorf("%s: exists=%v", name, ok)
		}
		return s.Put(item{name: name, gen: cur.gen + delta})
	}
	return sourcetest.Harness[item]{
		Source: informer.SourceFuncs[item]{ListFunc: s.List, WatchFunc: s.Watch},
		Create: func(_ context.Context, name string) (string, error) { return write(name, 1, false) },
		Update: func(_ context.Context, name string) (string, error) { return write(name, 1, true) },
		Delete: func(_ context.Context, name string) (string, error) {
			v, ok := s.Delete(name)
			if !ok {
				return "", fmt.Errorf("%s: not found", name)
			}
			return v, nil
		},
		Name:                 func(i item) string { return i.name },
		Generation:           func(i item) int { return i.gen },
		DisableReadExact:     true,
		DisableStreamingList: true,
	}
}

func TestRunMinimalHarness(t *testing.T) {
	sourcetest.Run(t, minimalHarness)
}

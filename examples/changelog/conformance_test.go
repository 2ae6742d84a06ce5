package changelog_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/ginformer/ginformer/examples/changelog"
	"github.com/ginformer/ginformer/source/sourcetest"
)

// harness gives the conformance kit a fresh log and the means to write to
// it. The kit names entries; their value is their generation.
func harness(t *testing.T) sourcetest.Harness[changelog.Entry] {
	l := changelog.New()
	write := func(name string, mustExist bool) (string, error) {
		e, ok := l.Get(name)
		if ok != mustExist {
			return "", fmt.Errorf("%s: exists=%v", name, ok)
		}
		gen, _ := strconv.Atoi(e.Value)
		return l.Put(name, strconv.Itoa(gen+1)), nil
	}
	return sourcetest.Harness[changelog.Entry]{
		Source: l,
		Create: func(_ context.Context, name string) (string, error) { return write(name, false) },
		Update: func(_ context.Context, name string) (string, error) { return write(name, true) },
		Delete: func(_ context.Context, name string) (string, error) {
			v, ok := l.Delete(name)
			if !ok {
				return "", fmt.Errorf("%s: not found", name)
			}
			return v, nil
		},
		Name: func(e changelog.Entry) string { return e.Key },
		Generation: func(e changelog.Entry) int {
			n, _ := strconv.Atoi(e.Value)
			return n
		},
		Compact:  func(context.Context) error { return l.Compact(l.Version()) },
		Bookmark: func(context.Context) error { l.RequestProgress(); return nil },
		CompareVersions: func(a, b string) int {
			c, err := l.CompareVersions(a, b)
			if err != nil {
				t.Errorf("CompareVersions: %v", err)
			}
			return c
		},
		DisableStreamingList: true, // Watch refuses SendInitialEvents
	}
}

func TestConformance(t *testing.T) {
	sourcetest.Run(t, harness)
}

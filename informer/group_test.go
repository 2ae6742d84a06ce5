package informer_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// Named funcs and shared values for the options of the group tests.
var (
	byName = informer.Index[*item]{Name: "name", Func: func(dst []string, it *item) ([]string, error) {
		return append(dst, it.Name), nil
	}}
	otherKey = func(it *item) (string, error) { return "x" + it.Name, nil }
)

func keepItem(it *item) (*item, error) { return it, nil }
func dropGroup(it *item) (*item, error) {
	c := *it
	c.Group = ""
	return &c, nil
}
func ignoreError(context.Context, error) {}

// funcMetrics holds a func, so its values are not comparable (a blank
// field counts: a struct is comparable only if all its fields are).
type funcMetrics struct {
	informer.NoopMetrics
	_ func()
}

// TestGroupInformerForComparesOptions: a second InformerFor for a name gets
// the informer if its options are the same, and ErrOptionsMismatch naming
// the fields otherwise.
func TestGroupInformerForComparesOptions(t *testing.T) {
	src, src2 := newSource(t), newSource(t)
	metrics := &atomicityProbe{}
	base := func() informer.Options[string, *item] {
		return informer.Options[string, *item]{
			Name:         "items",
			Source:       src,
			KeyFunc:      itemKey,
			Indexes:      []informer.Index[*item]{byGroup, byName},
			ResyncPeriod: time.Minute,
			Transform:    keepItem,
			Metrics:      metrics,
			ErrorHandler: ignoreError,
			BatchSize:    10,
			ListWatch:    informer.ListWatchOptions{PageSize: 7},
		}
	}
	captured := 0
	tests := []struct {
		name string
		mod  func(o *informer.Options[string, *item])
		diff string // "" when the options are the same
	}{
		{"same", func(*informer.Options[string, *item]) {}, ""},
		{"other Logger", func(o *informer.Options[string, *item]) {
			o.Logger = logr.FromSlogHandler(slog.DiscardHandler)
		}, ""},
		{"indexes reordered", func(o *informer.Options[string, *item]) {
			o.Indexes = []informer.Index[*item]{byName, byGroup}
		}, ""},
		{"Source", func(o *informer.Options[string, *item]) { o.Source = src2 }, "Source"},
		{"nil Source", func(o *informer.Options[string, *item]) { o.Source = nil }, "Source"},
		{"other KeyFunc", func(o *informer.Options[string, *item]) { o.KeyFunc = otherKey }, ""},
		{"no KeyFunc", func(o *informer.Options[string, *item]) { o.KeyFunc = nil }, "KeyFunc"},
		{"fewer Indexes", func(o *informer.Options[string, *item]) { o.Indexes = o.Indexes[:1] }, "Indexes"},
		{"index renamed", func(o *informer.Options[string, *item]) {
			o.Indexes = []informer.Index[*item]{byGroup, {Name: "other", Func: byName.Func}}
		}, "Indexes"},
		{"other index func", func(o *informer.Options[string, *item]) {
			o.Indexes = []informer.Index[*item]{byGroup, {Name: "name", Func: byGroup.Func}}
		}, ""},
		{"no index func", func(o *informer.Options[string, *item]) {
			o.Indexes = []informer.Index[*item]{byGroup, {Name: "name"}}
		}, "Indexes"},
		{"ResyncPeriod", func(o *informer.Options[string, *item]) { o.ResyncPeriod = time.Hour }, "ResyncPeriod"},
		{"other Transform", func(o *informer.Options[string, *item]) { o.Transform = dropGroup }, ""},
		{"no Transform", func(o *informer.Options[string, *item]) { o.Transform = nil }, "Transform"},
		{"Metrics", func(o *informer.Options[string, *item]) { o.Metrics = &atomicityProbe{} }, "Metrics"},
		{"Metrics of another type", func(o *informer.Options[string, *item]) { o.Metrics = informer.NoopMetrics{} }, "Metrics"},
		{"uncomparable Metrics", func(o *informer.Options[string, *item]) { o.Metrics = funcMetrics{} }, "Metrics"},
		{"other ErrorHandler", func(o *informer.Options[string, *item]) {
			o.ErrorHandler = func(context.Context, error) { captured++ }
		}, ""},
		{"no ErrorHandler", func(o *informer.Options[string, *item]) { o.ErrorHandler = nil }, "ErrorHandler"},
		{"BatchSize", func(o *informer.Options[string, *item]) { o.BatchSize = 0 }, "BatchSize"},
		{"StuckHandlerThreshold", func(o *informer.Options[string, *item]) { o.StuckHandlerThreshold = time.Minute }, "StuckHandlerThreshold"},
		{"ListWatch", func(o *informer.Options[string, *item]) { o.ListWatch.Backoff.Initial = time.Second }, "ListWatch"},
		{"ObjectVersion", func(o *informer.Options[string, *item]) { o.ObjectVersion = func(*item) string { return "" } }, "ObjectVersion"},
		{"MutationDetector", func(o *informer.Options[string, *item]) { o.MutationDetector.Enabled = true }, "MutationDetector"},
		{"MutationDetector.Copy", func(o *informer.Options[string, *item]) {
			o.MutationDetector.Copy = func(it *item) *item { c := *it; return &c }
		}, "MutationDetector"},
		{"Snapshot", func(o *informer.Options[string, *item]) {
			o.Snapshot.Store = informer.NewSnapshotFile(filepath.Join(t.TempDir(), "snap"))
			o.Snapshot.Codec = informer.JSONCodec[*item]{}
		}, "Snapshot"},
		{"several", func(o *informer.Options[string, *item]) { o.Transform = nil; o.BatchSize = 1 }, "Transform, BatchSize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := informer.NewGroup()
			first, err := informer.InformerFor(g, base())
			require.NoError(t, err)
			opts := base()
			tt.mod(&opts)
			got, err := informer.InformerFor(g, opts)
			if tt.diff == "" {
				require.NoError(t, err)
				assert.Same(t, first, got)
				return
			}
			require.ErrorIs(t, err, informer.ErrOptionsMismatch)
			assert.Contains(t, err.Error(), `informer "items": options differ from the first caller's in `+tt.diff+": ")
			assert.Nil(t, got)
		})
	}
}

// TestGroupInformerForFirstFuncsWin: funcs are not compared, so a second
// caller with another func gets the first caller's informer, which runs the
// first caller's func; uncomparable sources are never the same.
func TestGroupInformerForFirstFuncsWin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g", 1)
		transform := func(n int) func(*item) (*item, error) {
			return func(it *item) (*item, error) { c := *it; c.V += n; return &c, nil }
		}
		opts := informer.Options[string, *item]{Name: "items", Source: src, KeyFunc: itemKey, Transform: transform(10)}
		g := informer.NewGroup()
		first, err := informer.InformerFor(g, opts)
		require.NoError(t, err)
		opts.Transform = transform(100)
		second, err := informer.InformerFor(g, opts)
		require.NoError(t, err)
		assert.Same(t, first, second)

		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()
		require.NoError(t, g.WaitForSync(t.Context()))
		got, ok := second.Lister().Get("a")
		require.True(t, ok)
		assert.Equal(t, 11, got.V, "the first caller's transform")
		cancel()
		require.NoError(t, <-done)
	})

	src := newSource(t)
	g := informer.NewGroup()
	sf := informer.SourceFuncs[*item]{ListFunc: src.List, WatchFunc: src.Watch}
	byValue := informer.Options[string, *item]{Name: "funcs", Source: sf, KeyFunc: itemKey}
	_, err := informer.InformerFor(g, byValue)
	require.NoError(t, err)
	_, err = informer.InformerFor(g, byValue)
	require.ErrorIs(t, err, informer.ErrOptionsMismatch, "an uncomparable Source is never the same")
	byPointer := informer.Options[string, *item]{Name: "funcs-ptr", Source: &sf, KeyFunc: itemKey}
	_, err = informer.InformerFor(g, byPointer)
	require.NoError(t, err)
	_, err = informer.InformerFor(g, byPointer)
	require.NoError(t, err, "a pointer to it is")
}

// TestGroupNamesAreUnique: a name belongs to one informer, whatever its
// types; Stop, which needs no type arguments, frees it.
func TestGroupNamesAreUnique(t *testing.T) {
	src := newSource(t)
	g := informer.NewGroup()
	_, err := informer.InformerFor(g, informer.Options[string, *item]{Source: src, KeyFunc: itemKey})
	require.NoError(t, err)
	byLen := informer.SourceFuncs[*item]{ListFunc: src.List, WatchFunc: src.Watch}
	intKey := func(it *item) (int, error) { return len(it.Name), nil }
	_, err = informer.InformerFor(g, informer.Options[int, *item]{Source: &byLen, KeyFunc: intKey})
	require.ErrorIs(t, err, informer.ErrOptionsMismatch)
	assert.Contains(t, err.Error(), `informer "informer": exists for key type string and object type *informer_test.item, not int and *informer_test.item`)

	assert.True(t, g.Stop(""), `"" is the default name`)
	assert.False(t, g.Stop("informer"))
	_, err = informer.InformerFor(g, informer.Options[int, *item]{Source: &byLen, KeyFunc: intKey})
	require.NoError(t, err, "a stopped informer's name is free for any types")
	assert.True(t, g.Stop("informer"))
}

// TestGroupComparesEveryOption fails when Options gains a field that
// InformerFor does not know about: add it to optionsDiff (and to
// TestGroupInformerForComparesOptions), or list it here as not compared.
func TestGroupComparesEveryOption(t *testing.T) {
	known := map[string]bool{
		"Name": true, "Logger": true, // the group's key; not compared
		"Source": true, "KeyFunc": true, "Indexes": true, "ResyncPeriod": true, "Transform": true,
		"Metrics": true, "ErrorHandler": true, "StuckHandlerThreshold": true, "BatchSize": true, "ListWatch": true,
		"ObjectVersion": true, "MutationDetector": true, "Snapshot": true,
	}
	for f := range reflect.TypeFor[informer.Options[string, *item]]().Fields() {
		assert.True(t, known[f.Name], "Options.%s is not compared by InformerFor", f.Name)
	}
}

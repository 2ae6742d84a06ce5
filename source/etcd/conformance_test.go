package etcd_test

import (
	"strings"
	"testing"

	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/sourcetest"
)

func TestConformance(t *testing.T) {
	sourcetest.Run(t, func(t *testing.T) sourcetest.Harness[*etcd.Object[obj]] {
		w := writer{c: client(t), prefix: newPrefix(t)}
		h := harness(newSource(t, etcd.Options[obj]{Client: w.c, Prefix: w.prefix}), w)
		h.KeyOnlyDeletesBeforeCaughtUp = true // no previous value is read during a catch-up
		return h
	})
}

// The same contract holds with one key per request, an unbuffered watch,
// stripped keys and a filter that keeps everything.
func TestConformanceSmall(t *testing.T) {
	sourcetest.Run(t, func(t *testing.T) sourcetest.Harness[*etcd.Object[obj]] {
		w := writer{c: client(t), prefix: newPrefix(t)}
		src := newSource(t, etcd.Options[obj]{
			Client: w.c, Prefix: w.prefix, PageSize: 1, WatchBuffer: -1, StripPrefix: true,
			Filter: func(key string, _ obj) bool { return strings.HasPrefix(key, w.prefix) },
		})
		return harness(src, w)
	})
}

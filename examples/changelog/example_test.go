package changelog_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ginformer/ginformer/examples/changelog"
	"github.com/ginformer/ginformer/informer"
)

// An informer keeps a cache of the log: it lists it, then watches from the
// list's version. A compaction does not disturb a watcher that keeps up.
func Example() {
	log := changelog.New()
	log.Put("color", "blue")
	log.Put("size", "L")

	inf, err := informer.NewSharedInformer(informer.Options[string, changelog.Entry]{
		Name:    "settings",
		Source:  log,
		KeyFunc: func(e changelog.Entry) (string, error) { return e.Key, nil },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()

	log.Put("color", "red")
	log.Delete("size")
	v := log.Put("shape", "round")
	if err := log.Compact(v); err != nil {
		fmt.Println(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := inf.WaitForVersion(wctx, v); err != nil { // the cache has every change up to v
		fmt.Println(err)
	}
	cache := maps.Collect(inf.Lister().All())
	for _, k := range slices.Sorted(maps.Keys(cache)) {
		fmt.Println(k, cache[k].Value)
	}
	cancel()
	fmt.Println("run:", <-done)
	// Output:
	// color red
	// shape round
	// run: <nil>
}

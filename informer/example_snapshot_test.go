package informer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

// A warm restart: the first run leaves a snapshot when it stops; the
// second starts from it, catches up with what changed meanwhile (a delete
// and an add) through a watch, and its handler receives the caught-up state
// as initial adds, as after a cold start. (A memory store's versions are
// only meaningful in the process that made it: its snapshots are for
// restarting an informer, not a program; etcd, Kubernetes and NATS KV
// snapshots survive the program.)
func ExampleSnapshotOptions() {
	dir, _ := os.MkdirTemp("", "snapshot-example")
	defer os.RemoveAll(dir)
	src, _ := memory.New(memory.Options[string, *Service]{KeyFunc: serviceKey})
	defer src.Close()
	for _, s := range []*Service{{"checkout", "eu-west"}, {"search", "us-east"}, {"profile", "eu-west"}} {
		_, _ = src.Put(s)
	}

	run := func() informer.Health {
		inf, err := informer.NewSharedInformer(informer.Options[string, *Service]{
			Source:  src,
			KeyFunc: serviceKey,
			Snapshot: informer.SnapshotOptions[*Service]{
				Store: informer.NewSnapshotFile(filepath.Join(dir, "services.snap")),
			},
		})
		if err != nil {
			panic(err)
		}
		var mu sync.Mutex
		var added []string
		reg, _ := inf.AddHandler(informer.HandlerFuncs[string, *Service]{
			AddFunc: func(s *Service, initial bool) {
				mu.Lock()
				added = append(added, s.Name)
				mu.Unlock()
			},
		}, informer.HandlerOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- inf.Run(ctx) }()
		_ = informer.WaitForSync(ctx, inf, reg)
		mu.Lock()
		slices.Sort(added)
		fmt.Println("initial adds:", added)
		mu.Unlock()
		cancel()
		<-done // Run writes the snapshot before it returns
		return inf.Health()
	}

	h := run()
	fmt.Println("restored:", h.RestoredVersion != "", "snapshot at version", h.SnapshotVersion)
	src.Delete("search")
	_, _ = src.Put(&Service{"billing", "us-east"})
	h = run()
	fmt.Println("restored:", h.RestoredVersion != "", "from version", h.RestoredVersion)
	// Output:
	// initial adds: [checkout profile search]
	// restored: false snapshot at version 4
	// initial adds: [billing checkout profile]
	// restored: true from version 4
}

package memory_test

import (
	"context"
	"fmt"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

type Pod struct {
	Name  string
	Phase string
}

func ExampleNew() {
	store, err := memory.New(memory.Options[string, *Pod]{
		KeyFunc: func(p *Pod) (string, error) { return p.Name, nil },
	})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	ctx := context.Background()

	store.Put(&Pod{Name: "web-1", Phase: "Pending"})
	store.Put(&Pod{Name: "db-1", Phase: "Running"})

	// List, then watch from the list's version: nothing is missed.
	page, _ := store.List(ctx, informer.ListOptions{})
	for _, p := range page.Items {
		fmt.Println("listed", p.Name, p.Phase)
	}
	fmt.Println("version", page.Version)
	w, _ := store.Watch(ctx, informer.WatchOptions{Version: page.Version})
	defer w.Stop()

	store.Put(&Pod{Name: "web-1", Phase: "Running"})
	store.Delete("db-1")
	for range 2 {
		ev := <-w.Events()
		fmt.Println(ev.Type, ev.Object.Name, ev.Object.Phase, "at", ev.Version)
	}
	// Output:
	// listed db-1 Running
	// listed web-1 Pending
	// version 3
	// Modified web-1 Running at 4
	// Deleted db-1 Running at 5
}

func ExampleStore_Filtered() {
	store, _ := memory.New(memory.Options[string, *Pod]{
		KeyFunc: func(p *Pod) (string, error) { return p.Name, nil },
	})
	defer store.Close()
	running := store.Filtered(func(p *Pod) bool { return p.Phase == "Running" })

	w, _ := running.Watch(context.Background(), informer.WatchOptions{Version: store.Version()})
	defer w.Stop()
	store.Put(&Pod{Name: "web-1", Phase: "Pending"}) // not selected: no event
	store.Put(&Pod{Name: "web-1", Phase: "Running"}) // enters: Added
	store.Put(&Pod{Name: "web-1", Phase: "Failed"})  // leaves: Deleted, last selected state
	for range 2 {
		ev := <-w.Events()
		fmt.Println(ev.Type, ev.Object.Name, ev.Object.Phase)
	}
	// Output:
	// Added web-1 Running
	// Deleted web-1 Running
}

package informer_test

import (
	"context"
	"fmt"

	"github.com/ginformer/ginformer/informer"
)

type exampleObj struct {
	Namespace, Name string
	Phase           string
}

func ExampleNewDeltaFIFO() {
	f, err := informer.NewDeltaFIFO(informer.DeltaFIFOOptions[informer.NamespacedKey, *exampleObj]{
		KeyFunc: func(o *exampleObj) (informer.NamespacedKey, error) {
			return informer.NamespacedKey{Namespace: o.Namespace, Name: o.Name}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	// A reflector lists, then watches.
	_ = f.Replace([]*exampleObj{{"default", "a", "Pending"}, {"default", "b", "Running"}}, "10")
	_ = f.Update(&exampleObj{"default", "a", "Running"})

	ctx := context.Background()
	for !f.HasSynced() {
		_ = f.Pop(ctx, func(key informer.NamespacedKey, deltas informer.Deltas[*exampleObj], initial bool) error {
			for _, d := range deltas {
				fmt.Println(key, d.Type, d.Object.Phase, initial)
			}
			return nil
		})
	}
	fmt.Println("synced at version", f.LastVersion())
	// Output:
	// default/a Replaced Pending true
	// default/a Updated Running true
	// default/b Replaced Running true
	// synced at version 10
}

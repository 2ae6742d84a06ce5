package informer_test

import (
	"fmt"
	"slices"

	"github.com/ginformer/ginformer/informer"
)

type indexerPod struct {
	Namespace, Name string
	Labels          map[string]string
}

func ExampleNewIndexer() {
	store, err := informer.NewIndexer(informer.IndexerOptions[informer.NamespacedKey, *indexerPod]{
		KeyFunc: func(p *indexerPod) (informer.NamespacedKey, error) {
			return informer.NamespacedKey{Namespace: p.Namespace, Name: p.Name}, nil
		},
		Indexes: []informer.Index[*indexerPod]{{
			Name: "app",
			Func: func(dst []string, p *indexerPod) ([]string, error) {
				if app, ok := p.Labels["app"]; ok {
					dst = append(dst, app)
				}
				return dst, nil
			},
		}},
	})
	if err != nil {
		panic(err)
	}
	_ = store.Add(&indexerPod{Namespace: "prod", Name: "web-1", Labels: map[string]string{"app": "web"}})
	_ = store.Add(&indexerPod{Namespace: "prod", Name: "web-2", Labels: map[string]string{"app": "web"}})
	_ = store.Add(&indexerPod{Namespace: "prod", Name: "db-1", Labels: map[string]string{"app": "db"}})

	web, err := store.ByIndex("app", "web")
	if err != nil {
		panic(err)
	}
	var names []string
	for key := range web {
		names = append(names, key.String())
	}
	slices.Sort(names) // iteration order is not specified
	fmt.Println(names)

	p, ok := store.Get(informer.NamespacedKey{Namespace: "prod", Name: "db-1"})
	fmt.Println(p.Labels["app"], ok, store.Len())
	// Output:
	// [prod/web-1 prod/web-2]
	// db true 3
}

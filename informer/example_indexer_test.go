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

// byApp declares the "app" index once; the same value goes in the store's
// options and binds the index for queries.
var byApp = informer.NewIndex("app", func(dst []string, p *indexerPod) ([]string, error) {
	if app, ok := p.Labels["app"]; ok {
		dst = append(dst, app)
	}
	return dst, nil
})

func ExampleNewIndexer() {
	store, err := informer.NewIndexer(informer.IndexerOptions[informer.NamespacedKey, *indexerPod]{
		KeyFunc: func(p *indexerPod) (informer.NamespacedKey, error) {
			return informer.NamespacedKey{Namespace: p.Namespace, Name: p.Name}, nil
		},
		Indexes: []informer.Index[*indexerPod]{byApp},
	})
	if err != nil {
		panic(err)
	}
	apps, err := store.IndexRef(byApp) // fails only if byApp is not declared on store
	if err != nil {
		panic(err)
	}
	_ = store.Add(&indexerPod{Namespace: "prod", Name: "web-1", Labels: map[string]string{"app": "web"}})
	_ = store.Add(&indexerPod{Namespace: "prod", Name: "web-2", Labels: map[string]string{"app": "web"}})
	_ = store.Add(&indexerPod{Namespace: "prod", Name: "db-1", Labels: map[string]string{"app": "db"}})

	var names []string
	for key := range apps.Keys("web") {
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

// An index declared once: its declaration goes in the store's options and,
// bound once, answers every query with no error to check.
func ExampleNewIndex() {
	byRegion := informer.NewIndex("region", func(dst []string, s *Service) ([]string, error) {
		return append(dst, s.Region), nil
	})
	store, _ := informer.NewIndexer(informer.IndexerOptions[string, *Service]{
		KeyFunc: serviceKey,
		Indexes: []informer.Index[*Service]{byRegion},
	})
	for _, s := range []*Service{{"checkout", "eu-west"}, {"search", "us-east"}, {"profile", "eu-west"}} {
		_ = store.Add(s)
	}

	region, err := store.IndexRef(byRegion) // with an informer: inf.Lister().IndexRef(byRegion)
	if err != nil {
		panic(err) // byRegion is not declared on store: a bug in the program's setup
	}
	for name, s := range region.ByValue("us-east") {
		fmt.Println(name, s.Region)
	}
	fmt.Println(slices.Sorted(region.Keys("eu-west")))
	fmt.Println(slices.Sorted(region.Values()))
	// Output:
	// search us-east
	// [checkout profile]
	// [eu-west us-east]
}

package swmr_test

import (
	"fmt"
	"slices"
	"sync"

	"github.com/ginformer/ginformer/internal/swmr"
)

type objectKey struct{ namespace, name string }

type object struct {
	key   objectKey
	value int
}

func ExampleNew() {
	// The writer serializes its writes with its own mutex; readers take no lock.
	var writeMu sync.Mutex
	objects := swmr.New[objectKey, object](func(o *object) objectKey { return o.key }, nil, 0)

	writeMu.Lock()
	objects.Put(&object{key: objectKey{"default", "a"}, value: 1})
	objects.Put(&object{key: objectKey{"default", "b"}, value: 2})
	old := objects.Put(&object{key: objectKey{"default", "a"}, value: 3})
	objects.Delete(objectKey{"default", "b"})
	writeMu.Unlock()

	fmt.Println(old.value, objects.Get(objectKey{"default", "a"}).value, objects.Len())
	fmt.Println(objects.Get(objectKey{"default", "b"}) == nil)
	// Output:
	// 1 3 1
	// true
}

func ExampleTable_Reset() {
	objects := swmr.New[objectKey, object](func(o *object) objectKey { return o.key }, nil, 0)
	objects.Reset([]*object{
		{key: objectKey{"kube-system", "dns"}, value: 1},
		{key: objectKey{"default", "web"}, value: 2},
	})
	var names []string
	for o := range objects.All() {
		names = append(names, o.key.namespace+"/"+o.key.name)
	}
	slices.Sort(names)
	fmt.Println(names)
	// Output: [default/web kube-system/dns]
}

func ExampleSet() {
	a, b := &object{value: 1}, &object{value: 2}
	var members swmr.Set[object] // the zero value is an empty set
	fmt.Println(members.Add(a), members.Add(b), members.Add(a))
	members.Remove(b)
	fmt.Println(members.Has(a), members.Has(b), members.Len())
	// Output:
	// true true false
	// true false 1
}

func ExampleNewSet() {
	members := swmr.NewSet[object](2) // holds 2 members without growing
	a := &object{value: 1}
	members.Reset([]*object{a, {value: 2}, a})
	fmt.Println(members.Len(), members.Has(a))
	// Output: 2 true
}

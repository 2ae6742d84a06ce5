package compat_test

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/ginformer/ginformer/source/k8s/compat"
)

// The compat informer stands in for client-go's: same constructor
// signature, same handler and indexer interfaces.
func ExampleNewSharedIndexInformer() {
	lw := fcache.NewFakeControllerSource() // any cache.ListerWatcher
	defer lw.Shutdown()
	lw.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}})

	inf := compat.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
	})
	added := make(chan string, 1)
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { added <- obj.(*corev1.Pod).Name },
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	defer func() { cancel(); wg.Wait() }()
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)

	fmt.Println("added:", <-added)
	keys, _ := inf.GetIndexer().IndexKeys(cache.NamespaceIndex, "default")
	fmt.Println("in default:", keys)
	// Output:
	// added: web-1
	// in default: [default/web-1]
}

// New returns the error that NewSharedIndexInformer would panic with.
func ExampleNew() {
	lw := fcache.NewFakeControllerSource()
	defer lw.Shutdown()
	_, err := compat.New(compat.Options{ListerWatcher: lw, Indexers: cache.Indexers{"x": cache.MetaNamespaceIndexFunc}})
	fmt.Println(err)
	_, err = compat.New(compat.Options{})
	fmt.Println(err != nil)
	// Output:
	// <nil>
	// true
}

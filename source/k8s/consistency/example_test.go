package consistency_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/source/k8s/consistency"
)

// A controller that reads its own writes from its cache: every Get and List
// through the writer shows what the writer wrote before it, with no requeue
// and no read from the API. (A fake clientset here; a real one works the
// same, and so does a cache of a projection, k8s.NewProjection.)
func ExampleNewWriter() {
	client := fake.NewClientset()
	stampVersions(client)
	configMaps := client.CoreV1().ConfigMaps("default")
	src, err := k8s.New(configMaps, func(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items },
		k8s.Options{DisableStreamingList: true}) // the fake client does not stream
	if err != nil {
		panic(err)
	}
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *corev1.ConfigMap]{
		Source: src, KeyFunc: k8s.Key[*corev1.ConfigMap],
	})
	if err != nil {
		panic(err)
	}
	w, err := consistency.NewWriter[*corev1.ConfigMap](configMaps, inf, consistency.Options{Name: "example"})
	if err != nil {
		panic(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	if err := informer.WaitForSync(ctx, inf); err != nil {
		panic(err)
	}

	key := informer.NamespacedKey{Namespace: "default", Name: "settings"}
	_, err = w.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data:       map[string]string{"color": "blue"},
	}, metav1.CreateOptions{})
	if err != nil {
		panic(err)
	}
	cm, ok, err := w.Get(ctx, key) // waits until the cache has the create
	fmt.Println("after create:", ok, cm.Data["color"], err)

	cm = cm.DeepCopy() // cached objects are read-only
	cm.Data["color"] = "green"
	if _, err := w.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		panic(err)
	}
	cm, _, err = w.Get(ctx, key)
	fmt.Println("after update:", cm.Data["color"], err)

	if err := w.Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
		panic(err)
	}
	all, err := w.List(ctx)
	fmt.Println("after delete:", len(all), err)

	// Per call: a bound of its own (a read that reaches its bound returns
	// the cache's answer and an error wrapping consistency.ErrStale), or no
	// wait at all.
	_, ok, err = w.Get(ctx, key, consistency.MaxWait(time.Second))
	fmt.Println("bounded:", ok, err)
	_, ok, err = w.Get(ctx, key, consistency.NoWait())
	fmt.Println("no wait:", ok, err)
	// Output:
	// after create: true blue <nil>
	// after update: green <nil>
	// after delete: 0 <nil>
	// bounded: false <nil>
	// no wait: false <nil>
}

// stampVersions makes the fake clientset give each object it creates or
// updates a resourceVersion, as the API server does (client-go's fake
// tracker keeps its versions beside the objects, and the Writer reads them
// from the objects).
func stampVersions(c *fake.Clientset) {
	var last atomic.Int64
	last.Store(1000) // above the versions of the fake's lists
	stamp := func(obj runtime.Object) {
		if o, ok := obj.(metav1.Object); ok {
			o.SetResourceVersion(strconv.FormatInt(last.Add(1), 10))
		}
	}
	c.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		stamp(a.(k8stesting.CreateAction).GetObject())
		return false, nil, nil // the tracker goes on to store it
	})
	c.PrependReactor("update", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		stamp(a.(k8stesting.UpdateAction).GetObject())
		return false, nil, nil
	})
}

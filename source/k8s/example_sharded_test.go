package k8s_test

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// Two replicas split the ConfigMaps of a namespace. The fake client ignores
// the ShardSelector, as an apiserver without the ShardedListAndWatch gate
// does, so each replica receives everything and keeps its slice; against an
// apiserver with the gate, Mode reports FilterServer and each receives only
// its slice.
func ExampleNewSharded() {
	var objs []runtime.Object
	rng := rand.New(rand.NewPCG(1, 2)) // random UIDs, as the apiserver gives, but the same each run
	for i := range 100 {
		uid := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xfff, rng.Uint32()&0xfff, rng.Uint64()&0xffffffffffff)
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: fmt.Sprintf("cm-%03d", i), UID: types.UID(uid),
		}})
	}
	client := fake.NewClientset(objs...)
	total := 0
	for i := range 2 {
		base, err := k8s.New(client.CoreV1().ConfigMaps("default"),
			func(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items },
			k8s.Options{DisableStreamingList: true}) // the fake client does not stream
		if err != nil {
			panic(err)
		}
		slice, err := k8s.Split(i, 2) // replica i of 2; or a shard.Owner
		if err != nil {
			panic(err)
		}
		src, err := k8s.NewSharded(k8s.ShardedOptions[*corev1.ConfigMap]{Source: base, Slices: k8s.NewStaticSlices(slice)})
		if err != nil {
			panic(err)
		}
		inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *corev1.ConfigMap]{
			Source: src, KeyFunc: k8s.Key[*corev1.ConfigMap],
		})
		if err != nil {
			panic(err)
		}
		stop := runUntilSynced(inf)
		received, kept := src.Counts()
		fmt.Printf("replica %d: %s-side filter, received %d, kept %d\n", i, src.Mode(), received, kept)
		total += inf.Lister().Len()
		for _, cm := range inf.Lister().All() {
			if !src.InSlice(cm) {
				fmt.Println("outside the slice:", cm.Name)
			}
		}
		stop()
	}
	fmt.Println("cached in all:", total)
	// Output:
	// replica 0: client-side filter, received 100, kept 58
	// replica 1: client-side filter, received 100, kept 42
	// cached in all: 100
}

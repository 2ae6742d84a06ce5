package k8s_test

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

func examplePod(name, node, app string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

// runUntilSynced runs inf until the returned stop is called.
func runUntilSynced[T any](inf *informer.SharedInformer[informer.NamespacedKey, T]) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	_ = informer.WaitForSync(ctx, inf)
	return func() { cancel(); wg.Wait() }
}

// A typed pod cache with indexes by node and by label, over a client-go
// clientset (a fake one here; a real one from rest.Config works the same).
func ExampleNew() {
	client := fake.NewClientset(
		examplePod("web-1", "node-a", "web"),
		examplePod("web-2", "node-b", "web"),
		examplePod("db-1", "node-a", "db"),
	)
	src, err := k8s.New(client.CoreV1().Pods("default"),
		func(l *corev1.PodList) []corev1.Pod { return l.Items },
		k8s.Options{DisableStreamingList: true}) // the fake client does not stream
	if err != nil {
		panic(err)
	}
	byNode := k8s.FieldIndex("node", func(p *corev1.Pod) string { return p.Spec.NodeName })
	byApp := k8s.LabelIndex[*corev1.Pod]("app")
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *corev1.Pod]{
		Source:  src,
		KeyFunc: k8s.Key[*corev1.Pod],
		Indexes: []informer.Index[*corev1.Pod]{byNode, byApp},
	})
	if err != nil {
		panic(err)
	}
	node, err := inf.Lister().IndexRef(byNode) // once; its queries cannot fail
	if err != nil {
		panic(err)
	}
	app, err := inf.Lister().IndexRef(byApp)
	if err != nil {
		panic(err)
	}
	stop := runUntilSynced(inf)
	defer stop()

	fmt.Println("node-a:", slices.Sorted(keyStrings(node.Keys("node-a"))))
	fmt.Println("app=web:", slices.Sorted(keyStrings(app.Keys("web"))))
	pod, _ := inf.Lister().Get(informer.NamespacedKey{Namespace: "default", Name: "db-1"})
	fmt.Println("db-1 runs on", pod.Spec.NodeName)
	// Output:
	// node-a: [default/db-1 default/web-1]
	// app=web: [default/web-1 default/web-2]
	// db-1 runs on node-a
}

func keyStrings(keys func(func(informer.NamespacedKey) bool)) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range keys {
			if !yield(k.String()) {
				return
			}
		}
	}
}

// A cache of any resource as *unstructured.Unstructured, from a dynamic
// client.
func ExampleNewDynamic() {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "default", "name": "settings"},
		"data":     map[string]any{"color": "blue"},
	}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "ConfigMapList"}, cm)
	src, err := k8s.NewDynamic(client.Resource(gvr).Namespace("default"), k8s.Options{DisableStreamingList: true})
	if err != nil {
		panic(err)
	}
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *unstructured.Unstructured]{
		Source: src, KeyFunc: k8s.Key[*unstructured.Unstructured],
	})
	if err != nil {
		panic(err)
	}
	stop := runUntilSynced(inf)
	defer stop()
	obj, _ := inf.Lister().Get(informer.NamespacedKey{Namespace: "default", Name: "settings"})
	color, _, _ := unstructured.NestedString(obj.Object, "data", "color")
	fmt.Println("color:", color)
	// Output:
	// color: blue
}

// A metadata-only cache: names, labels and owners, no spec or status.
func ExampleNewMetadata() {
	scheme := runtime.NewScheme()
	_ = metav1.AddMetaToScheme(scheme)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	pm := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", Labels: map[string]string{"app": "web"}},
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, pm)
	src, err := k8s.NewMetadata(client.Resource(gvr).Namespace("default"), k8s.Options{DisableStreamingList: true})
	if err != nil {
		panic(err)
	}
	byNamespace := k8s.NamespaceIndex[*metav1.PartialObjectMetadata]()
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *metav1.PartialObjectMetadata]{
		Source:  src,
		KeyFunc: k8s.Key[*metav1.PartialObjectMetadata],
		Indexes: []informer.Index[*metav1.PartialObjectMetadata]{byNamespace},
	})
	if err != nil {
		panic(err)
	}
	namespace, err := inf.Lister().IndexRef(byNamespace)
	if err != nil {
		panic(err)
	}
	stop := runUntilSynced(inf)
	defer stop()
	for k := range namespace.Keys("default") {
		obj, _ := inf.Lister().Get(k)
		fmt.Println(k, obj.Labels["app"])
	}
	// Output:
	// default/web-1 web
}

// The figures of the tables that share strings and spec subtrees between
// the objects the sources decode: the process's, bounded by the largest
// SharingBudget of the live sources.
func ExampleSource_Sharing() {
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "https://apiserver.example.com"})
	if err != nil {
		panic(err)
	}
	src, err := k8s.New(cs.CoreV1().Pods(""), func(l *corev1.PodList) []corev1.Pod { return l.Items },
		k8s.Options{SharingBudget: 256 << 20})
	if err != nil {
		panic(err)
	}
	s := src.Sharing() // an informer over src fills the tables
	fmt.Printf("budget %d MiB\n", s.Budget>>20)
	if s.Bytes > s.Budget || s.HitRate() > 1 {
		fmt.Println("never")
	}
	// Output: budget 256 MiB
}

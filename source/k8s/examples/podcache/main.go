// Command podcache keeps a typed cache of the pods of a namespace, indexed
// by node and by the "app" label, against a real kube-apiserver, and prints
// what the indexes hold.
//
// With KUBECONFIG set it uses that cluster (namespace from -n). Otherwise it
// starts a throwaway kube-apiserver and etcd from KUBEBUILDER_ASSETS and
// creates a few pods first:
//
//	KUBEBUILDER_ASSETS=$(scripts/kube-apiserver-binary.sh) go run ./source/k8s/examples/podcache
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

func main() {
	ns := flag.String("n", "default", "namespace")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var client kubernetes.Interface
	if kc := os.Getenv("KUBECONFIG"); kc != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			log.Fatal(err)
		}
		client = kubernetes.NewForConfigOrDie(cfg)
	} else {
		env, err := k8stest.Start(k8stest.Config{})
		if err != nil {
			log.Fatal(err)
		}
		defer env.Stop()
		client = env.Client
		for i, node := range []string{"node-a", "node-b", "node-a"} {
			app := []string{"web", "web", "db"}[i]
			_, err := client.CoreV1().Pods(*ns).Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", app, i), Labels: map[string]string{"app": app}},
				Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			}, metav1.CreateOptions{})
			if err != nil {
				log.Fatal(err)
			}
		}
	}

	src, err := k8s.New(client.CoreV1().Pods(*ns), func(l *corev1.PodList) []corev1.Pod { return l.Items }, k8s.Options{})
	if err != nil {
		log.Fatal(err)
	}
	indexes := []informer.Index[*corev1.Pod]{
		k8s.FieldIndex("node", func(p *corev1.Pod) string { return p.Spec.NodeName }),
		k8s.LabelIndex[*corev1.Pod]("app"),
	}
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *corev1.Pod]{
		Source:    src,
		KeyFunc:   k8s.Key[*corev1.Pod],
		Transform: k8s.StripManagedFields[*corev1.Pod],
		Indexes:   indexes,
	})
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = inf.Run(ctx) }()
	if err := informer.WaitForSync(ctx, inf); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d pods in %s at resourceVersion %s\n", inf.Lister().Len(), *ns, inf.LastSyncVersion())
	for _, index := range indexes {
		ref, err := inf.Lister().IndexRef(index) // fails only for an index not declared on inf
		if err != nil {
			log.Fatal(err)
		}
		for _, v := range slices.Sorted(ref.Values()) {
			var names []string
			for k := range ref.Keys(v) {
				names = append(names, k.Name)
			}
			slices.Sort(names)
			fmt.Printf("%s=%s: %v\n", index.Name, v, names)
		}
	}
	cancel()
	<-done
}

// Command controller runs a typed controller against a real kube-apiserver:
// every ConfigMap labelled example/mirror=true is mirrored into a ConfigMap
// "<name>-mirror" holding the same data, updated with it and deleted with
// it (or when the label goes). The controller is a ginformer informer over
// the Kubernetes source feeding a workqueue.Controller; with
// -controller-runtime the same reconcile function runs in a
// controller-runtime manager whose informers are compat informers.
//
// With KUBECONFIG set it uses that cluster (namespace from -n), waits until
// the labelled ConfigMaps there are mirrored, and exits. Otherwise it starts
// a throwaway kube-apiserver and etcd from KUBEBUILDER_ASSETS, creates a
// few ConfigMaps, waits until they are mirrored, updates one and deletes
// another, waits again, and exits:
//
//	KUBEBUILDER_ASSETS=$(scripts/kube-apiserver-binary.sh) go run ./source/k8s/examples/controller [-controller-runtime]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

func main() {
	ns := flag.String("n", "default", "namespace")
	useCR := flag.Bool("controller-runtime", false, "run the reconcile function in a controller-runtime manager on compat informers")
	flag.Parse()
	if err := start(runConfig{namespace: *ns, controllerRuntime: *useCR, out: os.Stdout}); err != nil {
		log.Fatal(err)
	}
}

// start connects to KUBECONFIG's cluster, or starts a throwaway one and
// seeds it, then runs the demo; the throwaway cluster is stopped before it
// returns.
func start(cfg runConfig) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if kc := os.Getenv("KUBECONFIG"); kc != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			return err
		}
		cfg.rest = rc
	} else {
		env, err := k8stest.Start(k8stest.Config{})
		if err != nil {
			return err
		}
		defer env.Stop()
		cfg.rest, cfg.seed = env.Config, true
	}
	return run(ctx, cfg)
}

// runConfig is what run needs.
type runConfig struct {
	rest      *rest.Config
	namespace string
	// seed creates, updates and deletes sample ConfigMaps (a throwaway
	// apiserver); otherwise run only waits for what is there.
	seed bool
	// controllerRuntime runs the reconcile function in controller-runtime.
	controllerRuntime bool
	out               io.Writer
}

// run starts the controller, waits until the mirrors are in sync (after
// each step of the demo when seeding), prints a summary, then stops the
// controller and returns once it has stopped.
func run(ctx context.Context, cfg runConfig) error {
	client, err := kubernetes.NewForConfig(cfg.rest)
	if err != nil {
		return err
	}
	cms := client.CoreV1().ConfigMaps(cfg.namespace)
	var reconciles atomic.Int64
	rec := func(ctx context.Context, name string, src *corev1.ConfigMap) error {
		reconciles.Add(1)
		return reconcileMirror(ctx, cms, name, src)
	}
	kind := "typed"
	runner := func(ctx context.Context) error { return runTyped(ctx, client, cfg.namespace, rec) }
	if cfg.controllerRuntime {
		kind = "controller-runtime"
		runner = func(ctx context.Context) error { return runControllerRuntime(ctx, cfg.rest, cfg.namespace, rec) }
	}

	start := time.Now()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{})
	var runErr error
	go func() { defer close(done); runErr = runner(runCtx) }()

	sources, err := demo(ctx, cms, cfg.seed, done)
	stop()
	<-done
	if err = errors.Join(err, runErr); err != nil {
		return err
	}
	fmt.Fprintf(cfg.out, "%s controller: %d ConfigMap(s) mirrored in %s, %d reconciles in %v\n",
		kind, sources, cfg.namespace, reconciles.Load(), time.Since(start).Round(time.Millisecond))
	return nil
}

// demo waits until the mirrors are in sync; when seeding, it first creates
// three labelled ConfigMaps and an unlabelled one, then updates one,
// unlabels another, deletes the third and waits again. It returns the number of sources, or an
// error if the controller stops (done closes) first.
func demo(ctx context.Context, cms corev1client.ConfigMapInterface, seed bool, done <-chan struct{}) (int, error) {
	if !seed {
		return waitInSync(ctx, cms, done)
	}
	for _, name := range []string{"a", "b", "c", "plain"} {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{sourceLabel: "true"}},
			Data:       map[string]string{"greeting": "hello from " + name},
		}
		if name == "plain" {
			cm.Labels = nil
		}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return 0, err
		}
	}
	if _, err := waitInSync(ctx, cms, done); err != nil {
		return 0, err
	}
	a, err := cms.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	a.Data["greeting"] = "hello again"
	if _, err := cms.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		return 0, err
	}
	b, err := cms.Get(ctx, "b", metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	delete(b.Labels, sourceLabel)
	if _, err := cms.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		return 0, err
	}
	if err := cms.Delete(ctx, "c", metav1.DeleteOptions{}); err != nil {
		return 0, err
	}
	return waitInSync(ctx, cms, done)
}

// waitInSync polls the apiserver until [inSync] holds.
func waitInSync(ctx context.Context, cms corev1client.ConfigMapInterface, done <-chan struct{}) (int, error) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		n, ok, err := inSync(ctx, cms)
		if err != nil || ok {
			return n, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("mirrors not in sync: %w", ctx.Err())
		case <-done:
			return 0, errors.New("controller stopped before the mirrors were in sync")
		case <-tick.C:
		}
	}
}

package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// expireWatches makes the pod watches open now fail with 410 Gone, so that
// their informers relist (-relist). It writes a ConfigMap (a revision of
// etcd that no pod watcher is sent), then restarts kube-apiserver (etcd
// keeps running): the restarted server's watch cache starts at etcd's
// current revision, and refuses a watch from an older version as expired
// ("too old resource version", HTTP 410). The children's logs show it: the
// watch errors client-go's reflector reports, ginformer's error classes.
// It returns once the restarted server answers.
func expireWatches(ctx context.Context, env *k8stest.Env) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "kubeapi-expire-"}}
	if _, err := env.Client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("expire: write a revision: %w", err)
	}
	t0 := time.Now()
	if err := env.StopAPIServer(); err != nil {
		return fmt.Errorf("expire: stop kube-apiserver: %w", err)
	}
	if err := env.StartAPIServer(); err != nil {
		return fmt.Errorf("expire: start kube-apiserver: %w", err)
	}
	// Started means healthy; wait until it serves pods too.
	for {
		_, err := env.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	logf("kube-apiserver restarted in %s", time.Since(t0).Round(time.Millisecond))
	return nil
}

// controlPlane is the control plane's configuration: envtest's defaults,
// and with -relist a kube-apiserver that stops in seconds: it closes
// watches after a second (its default waits for them until its shutdown
// timeout, the request timeout of a minute, which envtest's stop timeout
// does not outlast) and bounds the other requests' drain to 30 s.
func controlPlane(cfg config) k8stest.Config {
	if !cfg.Relist {
		return k8stest.Config{}
	}
	return k8stest.Config{APIServerArgs: map[string][]string{
		"shutdown-watch-termination-grace-period": {"1s"},
		"request-timeout":                         {"30s"},
	}}
}

package k8s_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/source/sourcetest"
)

// TestConformance runs the conformance kit against ConfigMaps of a real
// kube-apiserver (served from etcd, see TestMain).
func TestConformance(t *testing.T) {
	needEnv(t)
	sourcetest.Run(t, func(t *testing.T) sourcetest.Harness[*corev1.ConfigMap] {
		return harness(t, k8s.Options{})
	})
}

// TestConformanceNoStreamingList: with streaming lists disabled, the source
// refuses them with errors.ErrUnsupported and the rest still holds.
func TestConformanceNoStreamingList(t *testing.T) {
	needEnv(t)
	sourcetest.Run(t, func(t *testing.T) sourcetest.Harness[*corev1.ConfigMap] {
		h := harness(t, k8s.Options{DisableStreamingList: true, WatchBuffer: -1})
		h.DisableStreamingList = true
		return h
	})
}

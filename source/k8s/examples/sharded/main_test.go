package main

import (
	"os"
	"testing"

	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// TestRun runs the demo against a real kube-apiserver with the gate on,
// with fewer objects.
func TestRun(t *testing.T) {
	if os.Getenv(k8stest.AssetsEnv) == "" {
		t.Skip(k8stest.ErrNoAssets)
	}
	if err := run(3, 300, true); err != nil {
		t.Fatal(err)
	}
}

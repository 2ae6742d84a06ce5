package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ginformer/ginformer/bench/internal/childproc"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// TestMain runs the child role when the test binary is re-executed as a
// child by TestSmoke.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == childproc.Role {
		os.Exit(childMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// TestSmoke runs the whole command small: 500 pods, one run per library,
// 200 updates. The test binary stands in for the command built against
// the next client-go (-clientgo-next), so the client-go columns with
// transforms run too. It needs a kube-apiserver (KUBEBUILDER_ASSETS).
func TestSmoke(t *testing.T) {
	if os.Getenv(k8stest.AssetsEnv) == "" {
		t.Skip(k8stest.ErrNoAssets)
	}
	if testing.Short() {
		t.Skip("short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var out strings.Builder
	rep, err := run(ctx, config{Pods: 500, Runs: 1, Updates: 200, Writers: 16, UpdateWriters: 8,
		Timeout: 2 * time.Minute, Exe: os.Args[0], ClientGoNext: os.Args[0]}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	for _, lib := range []string{libClientGo, libGinformer, colNext, colNextStrip, colNextSlim} {
		ms := rep.results[lib]
		if len(ms) != 1 {
			t.Fatalf("%s: %d results, want 1", lib, len(ms))
		}
		if m := ms[0]; m.seen != 200 || m.matched != 200 || m.timedOut {
			t.Errorf("%s: watch phase saw %d updates (%d matched, timed out %v), want 200", lib, m.seen, m.matched, m.timedOut)
		}
	}
	if rep.jsonSize < 5000 || rep.protoSize < 3000 {
		t.Errorf("served pod: %.0f B JSON, %.0f B protobuf; want a full pod", rep.jsonSize, rep.protoSize)
	}
}

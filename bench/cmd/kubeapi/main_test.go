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

// TestRelistSmoke runs the relist phase small (300 pods, one run of
// client-go and ginformer, 50 updates offered at 200/s): each child's watch
// fails after the apiserver restart and it relists once; ginformer's relist
// decodes about nothing (no pod changed), client-go's decodes every pod.
func TestRelistSmoke(t *testing.T) {
	if os.Getenv(k8stest.AssetsEnv) == "" {
		t.Skip(k8stest.ErrNoAssets)
	}
	if testing.Short() {
		t.Skip("short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var out strings.Builder
	rep, err := run(ctx, config{Pods: 300, Runs: 1, Updates: 50, UpdateRate: 200, Writers: 16, UpdateWriters: 8,
		Relist: true, Timeout: 2 * time.Minute, Exe: os.Args[0]}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	for _, lib := range []string{libClientGo, libGinformer} {
		ms := rep.results[lib]
		if len(ms) != 1 {
			t.Fatalf("%s: %d results, want 1", lib, len(ms))
		}
		m := ms[0]
		if m.seen != 50 || m.rate <= 0 {
			t.Errorf("%s: watch phase saw %d updates at %.0f/s, want 50", lib, m.seen, m.rate)
		}
		if m.relist.lists != 1 {
			t.Errorf("%s: %v relists, want 1", lib, m.relist.lists)
		}
	}
	if d := rep.results[libClientGo][0].relist.decoded; d != 300 {
		t.Errorf("client-go's relist decoded %v pods, want 300", d)
	}
	if d := rep.results[libGinformer][0].relist.decoded; d > 30 {
		t.Errorf("ginformer's relist decoded about %v pods, want about none (none changed)", d)
	}
}

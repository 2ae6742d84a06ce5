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
		os.Exit(childMain(os.Args[2:], time.Now()))
	}
	os.Exit(m.Run())
}

// TestSmoke runs the whole command small: 500 pods, one round with two
// replicas and the expired phase, with profiles. Every child's cache must
// equal the server's pods and be handed to the handler as initial adds;
// warm children must send no list and no streaming list; the expired child
// must relist and decode only the pods changed since its snapshot. It
// needs a kube-apiserver (KUBEBUILDER_ASSETS).
func TestSmoke(t *testing.T) {
	if os.Getenv(k8stest.AssetsEnv) == "" {
		t.Skip(k8stest.ErrNoAssets)
	}
	if testing.Short() {
		t.Skip("short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := run(ctx, config{Pods: 500, Runs: 1, Changed: 0.05, LoadWriters: 16, Writers: 4, Replicas: 2, Expire: true,
		Idle: 200 * time.Millisecond, Linger: 500 * time.Millisecond, ProfileDir: t.TempDir(), Timeout: 2 * time.Minute, Exe: os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := rep.write(&out); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	if len(rep.Runs) != 5 || len(rep.Profiles) == 0 {
		t.Fatalf("%d children, %d profile rows; want 5 and some", len(rep.Runs), len(rep.Profiles))
	}
	for _, r := range rep.Runs {
		s := r.Sync
		if !r.Equal || s.InitialAdds != int64(r.Expected) || s.Adds+s.Updates+s.Deletes != 0 {
			t.Errorf("%s: cache equal %v, %d initial adds and %d other calls for %d pods", r.Phase, r.Equal, s.InitialAdds, s.Adds+s.Updates+s.Deletes, r.Expected)
		}
		lists := s.Requests.ByKind[reqList] + s.Requests.ByKind[reqStreamingList]
		switch r.Phase {
		case phaseCold:
			if s.Restored || lists == 0 || r.Stop.FileBytes == 0 {
				t.Errorf("cold: restored %v, %d lists, snapshot of %d bytes; want a list and a snapshot", s.Restored, lists, r.Stop.FileBytes)
			}
		case phaseWarm, phaseReplica:
			if !s.Restored || s.Relisted || lists != 0 {
				t.Errorf("%s: restored %v, relisted %v, %d lists; want a resume without any", r.Phase, s.Restored, s.Relisted, lists)
			}
		case phaseExpired:
			changed := r.ChangedSince.Updated + r.ChangedSince.Created
			if !s.Relisted || s.Expired == 0 || !s.Counted || s.Decoded+s.NewKeys != changed {
				t.Errorf("expired: relisted %v, %d expired, counted %v, %d decoded and %d new keys; want a relist decoding the %d pods changed",
					s.Relisted, s.Expired, s.Counted, s.Decoded, s.NewKeys, changed)
			}
		}
	}
}

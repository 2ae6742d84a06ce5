package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ginformer/ginformer/bench/internal/kubepods"
)

// podSet is the parent's record of which generated pods exist, and the
// changes it makes while no child runs: status updates (as a kubelet
// sends them), deletions, and creations (pods deleted earlier, again, or
// new ones).
type podSet struct {
	mu      sync.Mutex
	present map[int]bool // pod index → exists
	deleted []int        // pod indexes deleted, to create again
	next    int          // the next pod index never created
	seq     int          // patches sent, so that each differs
	rng     *rand.Rand
}

func newPodSet(n int) *podSet {
	s := &podSet{present: make(map[int]bool, n), next: n, rng: rand.New(rand.NewPCG(23, 1))}
	for i := range n {
		s.present[i] = true
	}
	return s
}

// count is the number of pods that exist.
func (s *podSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.present)
}

// changes is what the parent changed while no child ran.
type changes struct {
	Updated int   `json:"updated"`
	Deleted int   `json:"deleted"`
	Created int   `json:"created"`
	TookNS  int64 `json:"tookNs"`
}

func (c changes) total() int { return c.Updated + c.Deleted + c.Created }

// change changes frac of the pods with writers concurrent writers: a
// twentieth of them deleted, as many created, the rest given a status
// update; no pod twice.
func (s *podSet) change(ctx context.Context, cs kubernetes.Interface, frac float64, writers int) (changes, error) {
	s.mu.Lock()
	total := max(3, int(frac*float64(len(s.present))+0.5))
	few := max(1, total/20)
	var ch changes
	type op struct {
		kind byte // 'u', 'd', 'c'
		i    int
	}
	var ops []op
	for range few { // creations: pods deleted earlier first
		i := s.next
		if len(s.deleted) > 0 {
			i, s.deleted = s.deleted[0], s.deleted[1:]
		} else {
			s.next++
		}
		ops = append(ops, op{'c', i})
	}
	// Deletions and updates among the pods that exist, distinct.
	picked := map[int]bool{}
	idx := make([]int, 0, len(s.present))
	for i := range s.present {
		idx = append(idx, i)
	}
	for len(picked) < total-few && len(picked) < len(idx) {
		i := idx[s.rng.IntN(len(idx))]
		if picked[i] {
			continue
		}
		picked[i] = true
		kind := byte('u')
		if len(picked) <= few {
			kind = 'd'
		}
		ops = append(ops, op{kind, i})
	}
	seq := s.seq
	s.seq += len(ops)
	s.mu.Unlock()

	t0 := time.Now()
	err := kubepods.Parallel(ctx, len(ops), writers, func(ctx context.Context, k int) error {
		o := ops[k]
		ns, name := kubepods.Name(o.i)
		pods := cs.CoreV1().Pods(ns)
		var err error
		switch o.kind {
		case 'u':
			err = kubepods.Retry(ctx, func() error {
				_, err := pods.Patch(ctx, name, types.StrategicMergePatchType, kubepods.StatusPatch(seq+k, time.Now()),
					metav1.PatchOptions{FieldManager: "kubelet"}, "status")
				return err
			})
		case 'd':
			grace := int64(0)
			err = kubepods.Retry(ctx, func() error {
				return pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
			})
		case 'c':
			_, err = kubepods.Create(ctx, cs, o.i)
		}
		if err != nil {
			return fmt.Errorf("change %c of pod %d: %w", o.kind, o.i, err)
		}
		return nil
	}, nil)
	ch.TookNS = time.Since(t0).Nanoseconds()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range ops {
		switch o.kind {
		case 'u':
			ch.Updated++
		case 'd':
			ch.Deleted++
			delete(s.present, o.i)
			s.deleted = append(s.deleted, o.i)
		case 'c':
			ch.Created++
			s.present[o.i] = true
		}
	}
	return ch, err
}

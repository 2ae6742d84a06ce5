package informer

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
)

// testPod is a small object shaped like client-go's small benchmark pod.
type testPod struct {
	Namespace, Name, UID, Version string
	Labels                        map[string]string
}

// Index names used by the test indexers.
const (
	nsIndex     = "namespace"
	labelsIndex = "labels"
)

// podKey is the key function of test pods.
func podKey(p *testPod) (NamespacedKey, error) {
	if p == nil {
		return NamespacedKey{}, errors.New("nil pod")
	}
	return NamespacedKey{Namespace: p.Namespace, Name: p.Name}, nil
}

// nsIndexFunc indexes pods by namespace (no allocation).
func nsIndexFunc(dst []string, p *testPod) ([]string, error) {
	return append(dst, p.Namespace), nil
}

// labelsIndexFunc appends "k=v" for every label.
func labelsIndexFunc(dst []string, p *testPod) ([]string, error) {
	for k, v := range p.Labels {
		dst = append(dst, k+"="+v)
	}
	return dst, nil
}

// testIndexes returns the namespace and labels indexes.
func testIndexes() []Index[*testPod] {
	return []Index[*testPod]{
		{Name: nsIndex, Func: nsIndexFunc},
		{Name: labelsIndex, Func: labelsIndexFunc},
	}
}

// newTestIndexer returns an Indexer of test pods with the given indexes.
func newTestIndexer(indexes ...Index[*testPod]) *Indexer[NamespacedKey, *testPod] {
	s, err := NewIndexer(IndexerOptions[NamespacedKey, *testPod]{KeyFunc: podKey, Indexes: indexes})
	if err != nil {
		panic(err)
	}
	return s
}

// benchPod returns the i-th pod of the benchmark population: namespace
// ns-<i%10>, labels app=app-<i/100>, tier=tier-<i%10>, pod=<name>.
func benchPod(i int) *testPod {
	name := "pod-" + strconv.Itoa(i)
	return &testPod{
		Namespace: "ns-" + strconv.Itoa(i%10),
		Name:      name,
		UID:       fmt.Sprintf("uid-%08d", i),
		Version:   "1",
		Labels: map[string]string{
			"app":  "app-" + strconv.Itoa(i/100),
			"tier": "tier-" + strconv.Itoa(i%10),
			"pod":  name,
		},
	}
}

// benchPods returns n benchmark pods.
func benchPods(n int) []*testPod {
	pods := make([]*testPod, n)
	for i := range pods {
		pods[i] = benchPod(i)
	}
	return pods
}

// pod builds a test pod with labels given as "k=v" strings.
func pod(ns, name string, labels ...string) *testPod {
	p := &testPod{Namespace: ns, Name: name, Labels: map[string]string{}}
	for _, l := range labels {
		for i := range len(l) {
			if l[i] == '=' {
				p.Labels[l[:i]] = l[i+1:]
				break
			}
		}
	}
	return p
}

// collect2 gathers the keys yielded by a Seq2, sorted by String().
func collectKeys[T any](seq func(func(NamespacedKey, T) bool)) []string {
	var out []string
	for k := range seq {
		out = append(out, k.String())
	}
	sort.Strings(out)
	return out
}

// collectStrings gathers a Seq of strings, sorted.
func collectStrings(seq func(func(string) bool)) []string {
	var out []string
	for v := range seq {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

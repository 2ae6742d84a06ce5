package k8s

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"testing"
	"unsafe"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ginformer/ginformer/source/k8s/internal/wire"
)

// testPod is a pod with the fields the decoder treats specially:
// managedFields, labels, resources, containers with IDs.
func testPod(i int) *corev1.Pod {
	now := metav1.Unix(1_750_000_000, 0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("web-%d", i), Namespace: fmt.Sprintf("ns-%d", i%3), UID: types.UID("uid-" + fmt.Sprint(i)),
			ResourceVersion: fmt.Sprint(100 + i),
			Labels:          map[string]string{"app": "web", "tier": "frontend", "pod": fmt.Sprint(i)},
			Annotations:     map[string]string{"a": "b"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "rs"}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
				Time: &now, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)}},
			CreationTimestamp: now,
		},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{
			Name: "web", Image: "registry.example.com/web:v1",
			Env: []corev1.EnvVar{{Name: "LOG", Value: "info"}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", StartTime: &now,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "web", ContainerID: fmt.Sprintf("containerd://%d", i)}}},
	}
}

func withoutMF(p *corev1.Pod) *corev1.Pod {
	c := p.DeepCopy()
	c.ManagedFields = nil
	return c
}

func marshal(t testing.TB, m interface{ Marshal() ([]byte, error) }) []byte {
	b, err := m.Marshal()
	require.NoError(t, err)
	return b
}

// envelope wraps raw as the apiserver does: magic + runtime.Unknown.
func envelope(t testing.TB, raw []byte) []byte {
	u := runtime.Unknown{Raw: raw, ContentType: "application/vnd.kubernetes.protobuf"}
	return append(append([]byte{}, []byte(wire.Magic)...), marshal(t, &u)...)
}

func TestWithoutManagedFields(t *testing.T) {
	p := testPod(1)
	raw := marshal(t, p)
	var scratch []byte
	out, err := wire.WithoutManagedFields(raw, &scratch)
	require.NoError(t, err)
	require.Less(t, len(out), len(raw))
	var got corev1.Pod
	require.NoError(t, got.Unmarshal(out))
	require.True(t, equality.Semantic.DeepEqual(withoutMF(p), &got), "decoded %v", got)

	// No managedFields: the input itself, not a copy.
	raw2 := marshal(t, withoutMF(p))
	out2, err := wire.WithoutManagedFields(raw2, &scratch)
	require.NoError(t, err)
	require.Equal(t, unsafe.SliceData(raw2), unsafe.SliceData(out2))

	_, err = wire.WithoutManagedFields([]byte{0x0a, 0xff}, &scratch)
	require.ErrorIs(t, err, wire.ErrMalformed)
}

func TestProtoListAndVersion(t *testing.T) {
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "77", Continue: "c"}}
	for i := range 5 {
		l.Items = append(l.Items, *testPod(i))
	}
	raw, err := wire.Unwrap(envelope(t, marshal(t, l)))
	require.NoError(t, err)
	meta, items, err := wire.SplitList(raw, 2)
	require.NoError(t, err)
	require.Len(t, items, 5)
	var lm metav1.ListMeta
	require.NoError(t, lm.Unmarshal(meta))
	require.Equal(t, "77", lm.ResourceVersion)
	for i, it := range items {
		key, rv, ok := wire.Identity(it, nil)
		require.True(t, ok)
		require.Equal(t, fmt.Sprint(100+i), string(rv))
		require.Equal(t, fmt.Sprintf("ns-%d/web-%d", i%3, i), string(key))
	}
}

func TestJSONList(t *testing.T) {
	l := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "9"}}
	for i := range 3 {
		l.Items = append(l.Items, *testPod(i))
	}
	body, err := json.MarshalIndent(l, "", "  ")
	require.NoError(t, err)
	meta, items, err := wire.SplitJSONList(body)
	require.NoError(t, err)
	require.Equal(t, "9", meta.ResourceVersion)
	require.Len(t, items, 3)
	c := newCodec[corev1.Pod, *corev1.Pod](Options{})
	got := c.decodeList(formatJSON, items, func(int, error) { t.Fatal("bad item") })
	for i, p := range got {
		require.True(t, equality.Semantic.DeepEqual(withoutMF(&l.Items[i]), p), "item %d", i)
	}

	_, items, err = wire.SplitJSONList([]byte(`{"items":null,"metadata":{"resourceVersion":"3"}}`))
	require.NoError(t, err)
	require.Empty(t, items)
	_, _, err = wire.SplitJSONList([]byte(`{"items":[{"a":1},`))
	require.ErrorIs(t, err, wire.ErrMalformed)
}

func TestDecodeListParallelKeepsOrderAndLeavesOutBadItems(t *testing.T) {
	var items [][]byte
	var want []*corev1.Pod
	for i := range 1000 {
		p := testPod(i)
		if i == 500 {
			items = append(items, []byte{0x0a, 0xff, 0xff}) // truncated
			continue
		}
		items = append(items, marshal(t, p))
		want = append(want, withoutMF(p))
	}
	c := newCodec[corev1.Pod, *corev1.Pod](Options{})
	var bad []int
	got := c.decodeList(formatProto, items, func(i int, err error) { bad = append(bad, i) })
	require.Equal(t, []int{500}, bad)
	require.Len(t, got, len(want))
	for i := range got {
		require.True(t, equality.Semantic.DeepEqual(want[i], got[i]), "item %d", i)
	}
	// Strings repeated across objects are shared; unique ones are not.
	require.Same(t, unsafe.StringData(got[1].Labels["app"]), unsafe.StringData(got[2].Labels["app"]))
	for k := range got[1].Labels {
		require.Same(t, unsafe.StringData(k), unsafe.StringData(wire.Intern(k)), "label key %q", k)
	}
	require.Same(t, unsafe.StringData(got[1].Spec.Containers[0].Image), unsafe.StringData(got[2].Spec.Containers[0].Image))
	require.Same(t, unsafe.StringData(got[1].Spec.NodeName), unsafe.StringData(got[2].Spec.NodeName))
	require.Same(t, unsafe.StringData(got[1].Namespace), unsafe.StringData(got[4].Namespace))
	require.Same(t, unsafe.StringData(got[1].OwnerReferences[0].Kind), unsafe.StringData(got[2].OwnerReferences[0].Kind))
	q1, q2 := got[1].Spec.Containers[0].Resources.Requests, got[2].Spec.Containers[0].Resources.Requests
	for k := range q1 {
		require.Same(t, unsafe.StringData(string(k)), unsafe.StringData(wire.Intern(string(k))), "resource name %q", k)
	}
	require.Equal(t, q1.Cpu().String(), q2.Cpu().String())
	require.NotSame(t, unsafe.StringData(got[1].Name), unsafe.StringData(wire.Intern(got[1].Name)), "names are not shared")

	keep := newCodec[corev1.Pod, *corev1.Pod](Options{KeepManagedFields: true, DisableStringSharing: true})
	got = keep.decodeList(formatProto, items[:2], func(int, error) {})
	require.Len(t, got[0].ManagedFields, 1)
	require.NotSame(t, unsafe.StringData(got[0].Spec.Containers[0].Image), unsafe.StringData(got[1].Spec.Containers[0].Image))
}

// frames encodes events as a protobuf watch stream.
func frames(t testing.TB, evs []watch.Event) []byte {
	var buf bytes.Buffer
	for _, ev := range evs {
		var obj []byte
		switch o := ev.Object.(type) {
		case *corev1.Pod:
			obj = envelope(t, marshal(t, o))
		case *metav1.Status:
			obj = envelope(t, marshal(t, o))
		}
		we := metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: obj}}
		b := marshal(t, &we)
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
		buf.Write(hdr[:])
		buf.Write(b)
	}
	return buf.Bytes()
}

func collect[E any, T ObjectPtr[E]](t *testing.T, body []byte, c *codec[E, T], bad *decodeErrors) []watch.Event {
	w := newWatchInterface(context.Background(), io.NopCloser(bytes.NewReader(body)), c, bad)
	var got []watch.Event
	for ev := range w.ResultChan() {
		got = append(got, ev)
	}
	w.Stop()
	return got
}

func TestDecodingWatchOrderAndBadObjects(t *testing.T) {
	var evs []watch.Event
	for i := range 2000 {
		evs = append(evs, watch.Event{Type: watch.Modified, Object: testPod(i)})
	}
	body := frames(t, evs)
	bad := &decodeErrors{log: logr.Discard()}
	c := newCodec[corev1.Pod, *corev1.Pod](Options{})
	got := collect(t, body, c, bad)
	require.Len(t, got, len(evs))
	for i, ev := range got {
		require.Equal(t, watch.Modified, ev.Type)
		require.Equal(t, fmt.Sprintf("web-%d", i), ev.Object.(*corev1.Pod).Name)
		require.Nil(t, ev.Object.(*corev1.Pod).ManagedFields)
	}

	// An update and a deletion whose objects do not decode both arrive as
	// deletions of the key, with the metadata; both are counted.
	p := testPod(7)
	broken := func(p *corev1.Pod) []byte {
		meta := marshal(t, &p.ObjectMeta)
		// metadata (field 1), then a spec (field 2) that is cut short.
		b := append([]byte{0x0a}, binary.AppendUvarint(nil, uint64(len(meta)))...)
		b = append(b, meta...)
		return append(b, 0x12, 0x7f, 0x01)
	}
	badFrames := func(typs ...string) []byte {
		var buf bytes.Buffer
		for _, typ := range typs {
			we := metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: envelope(t, broken(p))}}
			b := marshal(t, &we)
			require.NoError(t, binary.Write(&buf, binary.BigEndian, uint32(len(b))))
			buf.Write(b)
		}
		return buf.Bytes()
	}
	expired := frames(t, []watch.Event{{Type: watch.Error, Object: &metav1.Status{Code: 410, Reason: metav1.StatusReasonExpired}}})
	got = collect(t, append(badFrames("MODIFIED", "DELETED"), expired...), c, bad)
	require.Len(t, got, 3)
	for _, ev := range got[:2] {
		require.Equal(t, watch.Deleted, ev.Type)
		del := ev.Object.(*corev1.Pod)
		require.Equal(t, "web-7", del.Name)
		require.Equal(t, "ns-1", del.Namespace)
		require.Equal(t, "107", del.ResourceVersion)
	}
	require.Equal(t, watch.Error, got[2].Type)
	require.EqualValues(t, 410, got[2].Object.(*metav1.Status).Code)
	require.EqualValues(t, 2, bad.n.Load())

	// In a streaming list's initial events, an object that does not decode
	// is left out, as a list leaves it out.
	var streamed []watch.Event
	wi := newDecodingWatch(context.Background(), io.NopCloser(bytes.NewReader(append(badFrames("ADDED"), expired...))), c, bad, true,
		func(ev watch.Event) bool { streamed = append(streamed, ev); return true }, nil)
	<-wi.done
	require.Len(t, streamed, 1)
	require.Equal(t, watch.Error, streamed[0].Type)
	require.EqualValues(t, 3, bad.n.Load())

	// An event whose metadata does not decode either ends the watch.
	we := metav1.WatchEvent{Type: "MODIFIED", Object: runtime.RawExtension{Raw: envelope(t, []byte{0x0a, 0x03, 0x0a, 0x7f, 0x01})}}
	b := marshal(t, &we)
	var buf bytes.Buffer
	require.NoError(t, binary.Write(&buf, binary.BigEndian, uint32(len(b))))
	buf.Write(b)
	buf.Write(frames(t, []watch.Event{{Type: watch.Deleted, Object: testPod(8)}}))
	got = collect(t, buf.Bytes(), c, bad)
	require.Len(t, got, 1)
	require.Equal(t, watch.Error, got[0].Type)
	require.Contains(t, got[0].Object.(*metav1.Status).Message, "nor does its metadata")
}

func TestDecodingWatchJSON(t *testing.T) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range 50 {
		p := testPod(i)
		raw, err := json.Marshal(p)
		require.NoError(t, err)
		require.NoError(t, enc.Encode(map[string]any{"type": "ADDED", "object": json.RawMessage(raw)}))
	}
	c := newCodec[corev1.Pod, *corev1.Pod](Options{})
	got := collect(t, buf.Bytes(), c, &decodeErrors{log: logr.Discard()})
	require.Len(t, got, 50)
	for i, ev := range got {
		require.True(t, equality.Semantic.DeepEqual(withoutMF(testPod(i)), ev.Object), "event %d", i)
	}
}

func TestDecodingWatchStopsEarly(t *testing.T) {
	pr, pw := io.Pipe()
	c := newCodec[corev1.Pod, *corev1.Pod](Options{})
	w := newWatchInterface(context.Background(), pr, c, &decodeErrors{log: logr.Discard()})
	go func() { _, _ = pw.Write(frames(t, []watch.Event{{Type: watch.Added, Object: testPod(1)}})) }()
	ev := <-w.ResultChan()
	require.Equal(t, watch.Added, ev.Type)
	w.Stop()
	for range w.ResultChan() {
	}
}

func TestFindStringFieldAndItemsField(t *testing.T) {
	n, ok := itemsFieldOf[*corev1.PodList]()
	require.True(t, ok)
	require.EqualValues(t, 2, n)
	_, ok = itemsFieldOf[*metav1.PartialObjectMetadataList]()
	require.True(t, ok)
	type inner struct{ resource string }
	type outer struct{ *inner }
	s, ok := findStringField(reflect.ValueOf(&outer{&inner{"pods"}}), "resource", 3)
	require.True(t, ok)
	require.Equal(t, "pods", s)
}

func TestJSONStringsShared(t *testing.T) {
	var items [][]byte
	for i := range 3 {
		b, err := json.Marshal(testPod(i))
		require.NoError(t, err)
		items = append(items, b)
	}
	c := newCodec[corev1.Pod, *corev1.Pod](Options{})
	got := c.decodeList(formatJSON, items, func(int, error) { t.Fatal("bad item") })
	require.Same(t, unsafe.StringData(got[1].Spec.Containers[0].Image), unsafe.StringData(got[2].Spec.Containers[0].Image))
	require.Nil(t, got[0].ManagedFields)
}

// watchInterface adapts a decodingWatch to client-go's watch.Interface.
type watchInterface struct {
	result chan watch.Event
	stop   context.CancelFunc
}

func (w *watchInterface) Stop()                          { w.stop() }
func (w *watchInterface) ResultChan() <-chan watch.Event { return w.result }

// newWatchInterface decodes body into a watch.Interface, whose channel is
// closed once every goroutine has exited.
func newWatchInterface[E any, T ObjectPtr[E]](ctx context.Context, body io.ReadCloser, c *codec[E, T], bad *decodeErrors) *watchInterface {
	ctx, cancel := context.WithCancel(ctx)
	wi := &watchInterface{result: make(chan watch.Event), stop: cancel}
	newDecodingWatch(ctx, body, c, bad, false, func(ev watch.Event) bool {
		select {
		case wi.result <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}, func() { close(wi.result) })
	return wi
}

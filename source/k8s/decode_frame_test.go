package k8s

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ginformer/ginformer/source/k8s/internal/wire"
)

// A protobuf frame whose wrapper does not parse ends the watch with an
// internal error: the deletion after it is not delivered by this stream,
// and the reflector watches again from the last version it received
// (which replays the deletion), where skipping the frame would lose it if
// the damaged frame was itself a deletion.
func TestDamagedFrameEndsTheWatch(t *testing.T) {
	for name, damaged := range map[string][]byte{
		"truncated field":   {0x0a, 0xff},                                                      // a length that runs past the frame
		"bad magic wrapper": append(append([]byte{}, []byte(wire.Magic)...), 0x12, 0x05, 0x01), // runtime.Unknown cut short
		"invalid wire type": {0x0f, 0x01},                                                      // field 1, wire type 7
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			buf.Write(frames(t, []watch.Event{{Type: watch.Modified, Object: testPod(1)}}))
			require.NoError(t, binary.Write(&buf, binary.BigEndian, uint32(len(damaged))))
			buf.Write(damaged)
			buf.Write(frames(t, []watch.Event{{Type: watch.Deleted, Object: testPod(2)}}))
			c := newCodec[corev1.Pod, *corev1.Pod](Options{})
			got := collect(t, buf.Bytes(), c, &decodeErrors{log: logr.Discard()})
			require.Len(t, got, 2, "the event before, then the end: %v", got)
			require.Equal(t, watch.Modified, got[0].Type)
			require.Equal(t, watch.Error, got[1].Type)
			st := got[1].Object.(*metav1.Status)
			require.True(t, apierrors.IsInternalError(apierrors.FromObject(st)), "%v", st)
			require.Contains(t, st.Message, "frame does not parse")
		})
	}
}

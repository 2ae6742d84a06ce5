package k8s

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// sprocket is a custom resource's Go type without the generated protobuf
// marshaller.
type sprocket struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Teeth             []int64 `json:"teeth"`
}

func (s *sprocket) DeepCopyObject() runtime.Object {
	c := *s
	s.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Teeth = append([]int64(nil), s.Teeth...)
	return &c
}

// TestRuntimeCodecJSONKinds: a type of the scheme without the generated
// protobuf marshaller is kept in JSON with its kind, and decoded into the
// type the scheme gives for that kind; a scheme that no longer knows the
// kind refuses the record.
func TestRuntimeCodecJSONKinds(t *testing.T) {
	gv := schema.GroupVersion{Group: "example.com", Version: "v1"}
	s := runtime.NewScheme()
	s.AddKnownTypes(gv, &sprocket{})
	c := newRuntimeCodec(s)

	in := &sprocket{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", ResourceVersion: "3"}, Teeth: []int64{1, 1 << 60}}
	b, err := c.AppendEncode(nil, in)
	require.NoError(t, err)
	require.Equal(t, byte(shapeJSON), b[0])
	name, _, ok := cutString(b[1:])
	require.True(t, ok)
	require.Equal(t, "example.com/v1/sprocket", string(name))
	out, err := c.Decode(b)
	require.NoError(t, err)
	require.Equal(t, in, out)
	again, err := newRuntimeCodec(s).Decode(b)
	require.NoError(t, err, "a new codec (a restarted program) finds the kind in the scheme")
	require.Equal(t, in, again)

	_, err = newRuntimeCodec(runtime.NewScheme()).Decode(b)
	require.ErrorContains(t, err, "example.com/v1/sprocket is not in client-go's scheme")
}

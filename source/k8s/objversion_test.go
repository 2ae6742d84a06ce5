package k8s_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

func TestObjectVersion(t *testing.T) {
	dyn := fake.NewSimpleDynamicClient(runtime.NewScheme())
	src, err := k8s.NewDynamic(dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}), k8s.Options{})
	require.NoError(t, err)
	var ov informer.ObjectVersioner[*unstructured.Unstructured] = src
	u := &unstructured.Unstructured{}
	u.SetName("a")
	assert.Equal(t, "", ov.ObjectVersion(u), "no resourceVersion")
	u.SetResourceVersion("17")
	assert.Equal(t, "17", ov.ObjectVersion(u))
	assert.Equal(t, "", ov.ObjectVersion(nil))
}

// A Sharded source tells an object's version as its Source does, so that
// a relist over it delivers only what changed.
func TestShardedObjectVersion(t *testing.T) {
	dyn := fake.NewSimpleDynamicClient(runtime.NewScheme())
	src, err := k8s.NewDynamic(dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}), k8s.Options{})
	require.NoError(t, err)
	set, err := k8s.Split(0, 2)
	require.NoError(t, err)
	sharded, err := k8s.NewSharded(k8s.ShardedOptions[*unstructured.Unstructured]{Source: src, Slices: k8s.NewStaticSlices(set)})
	require.NoError(t, err)
	var ov informer.ObjectVersioner[*unstructured.Unstructured] = sharded
	u := &unstructured.Unstructured{}
	u.SetResourceVersion("17")
	assert.Equal(t, "17", ov.ObjectVersion(u))
	assert.Equal(t, "", ov.ObjectVersion(nil))
}

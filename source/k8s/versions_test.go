package k8s_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

func TestCompareVersions(t *testing.T) {
	dyn := fake.NewSimpleDynamicClient(runtime.NewScheme())
	src, err := k8s.NewDynamic(dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}), k8s.Options{})
	require.NoError(t, err)
	var c informer.VersionComparer = src
	tests := []struct {
		a, b string
		want int
	}{
		{"1", "2", -1},
		{"2", "1", +1},
		{"42", "42", 0},
		{"9", "10", -1}, // as integers, not strings
		{"18446744073709551616", "18446744073709551615", +1}, // beyond uint64
	}
	for _, tt := range tests {
		got, err := c.CompareVersions(tt.a, tt.b)
		require.NoError(t, err, "%q vs %q", tt.a, tt.b)
		assert.Equal(t, tt.want, got, "%q vs %q", tt.a, tt.b)
	}
	for _, bad := range [][2]string{{"", "1"}, {"1", "x"}, {"0", "1"}, {"1", "007"}, {"-1", "1"}} {
		_, err := c.CompareVersions(bad[0], bad[1])
		require.ErrorIs(t, err, informer.ErrInvalidVersion, "%q vs %q", bad[0], bad[1])
	}
}

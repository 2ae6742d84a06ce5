package memory_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

func TestCompareVersions(t *testing.T) {
	s := newStore(t, memory.Options[string, *obj]{})
	v1 := s.Version()
	v2 := put(t, s, "a", 1)
	comparers := map[string]informer.VersionComparer{
		"store":    s,
		"filtered": s.Filtered(nil).(informer.VersionComparer),
	}
	for name, c := range comparers {
		t.Run(name, func(t *testing.T) {
			tests := []struct {
				a, b string
				want int
			}{
				{v1, v2, -1},
				{v2, v1, +1},
				{v2, v2, 0},
				{"9", "10", -1}, // as integers, not strings
				{"0", "0", 0},
			}
			for _, tt := range tests {
				got, err := c.CompareVersions(tt.a, tt.b)
				require.NoError(t, err, "%q vs %q", tt.a, tt.b)
				assert.Equal(t, tt.want, got, "%q vs %q", tt.a, tt.b)
			}
			for _, bad := range [][2]string{{"", "1"}, {"1", "x"}, {"-1", "1"}, {"1", "99999999999999999999"}} {
				_, err := c.CompareVersions(bad[0], bad[1])
				require.ErrorIs(t, err, informer.ErrInvalidVersion, "%q vs %q", bad[0], bad[1])
			}
		})
	}
}

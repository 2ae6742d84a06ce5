package memory

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type ovObj struct {
	Name string
	V    int
}

func TestObjectVersion(t *testing.T) {
	s, err := New(Options[string, *ovObj]{KeyFunc: func(o *ovObj) (string, error) { return o.Name, nil }})
	require.NoError(t, err)
	defer s.Close()
	a1 := &ovObj{Name: "a", V: 1}
	v1, err := s.Put(a1)
	require.NoError(t, err)
	assert.Equal(t, v1, s.ObjectVersion(a1))
	assert.Equal(t, v1, s.Filtered(nil).(filtered[string, *ovObj]).ObjectVersion(a1))
	assert.Equal(t, "", s.ObjectVersion(&ovObj{Name: "a", V: 1}), "a copy is not the held object")
	a2 := &ovObj{Name: "a", V: 2}
	v2, err := s.Put(a2)
	require.NoError(t, err)
	assert.Equal(t, "", s.ObjectVersion(a1), "replaced since")
	assert.Equal(t, v2, s.ObjectVersion(a2))
	s.Delete("a")
	assert.Equal(t, "", s.ObjectVersion(a2), "deleted since")

	// Comparable values: equal values are the same state.
	vs, err := New(Options[string, ovObj]{KeyFunc: func(o ovObj) (string, error) { return o.Name, nil }})
	require.NoError(t, err)
	defer vs.Close()
	vb, err := vs.Put(ovObj{Name: "b", V: 1})
	require.NoError(t, err)
	assert.Equal(t, vb, vs.ObjectVersion(ovObj{Name: "b", V: 1}))
	assert.Equal(t, "", vs.ObjectVersion(ovObj{Name: "b", V: 2}))

	// Values that cannot be compared: never a version.
	ns, err := New(Options[string, []string]{KeyFunc: func(o []string) (string, error) { return o[0], nil }})
	require.NoError(t, err)
	defer ns.Close()
	_, err = ns.Put([]string{"c"})
	require.NoError(t, err)
	assert.Equal(t, "", ns.ObjectVersion([]string{"c"}))
}

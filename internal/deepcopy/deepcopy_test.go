package deepcopy

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type copyInner struct {
	N      int
	hidden []string
}

type copyObj struct {
	Name    string
	Ptr     *copyInner
	Alias   *copyInner // == Ptr in the tests: sharing is preserved
	Self    *copyObj   // a cycle
	Map     map[string]copyInner
	Slice   []*copyInner
	Empty   []int // empty, not nil
	Nil     []int
	Any     any
	Arr     [2]map[string]int
	When    time.Time
	private map[string][]int
}

func newCopyObj() *copyObj {
	in := &copyInner{N: 1, hidden: []string{"h"}}
	o := &copyObj{
		Name:    "o",
		Ptr:     in,
		Alias:   in,
		Map:     map[string]copyInner{"k": {N: 2, hidden: []string{"m"}}},
		Slice:   []*copyInner{{N: 3}},
		Empty:   []int{},
		Any:     &copyInner{N: 4},
		Arr:     [2]map[string]int{{"a": 1}, nil},
		When:    time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 3600)),
		private: map[string][]int{"p": {1, 2}},
	}
	o.Self = o
	return o
}

// TestCopy: the copy is deeply equal and shares nothing mutable with
// the original, unexported fields included; sharing and cycles inside the
// object are kept.
func TestCopy(t *testing.T) {
	o := newCopyObj()
	c := Copy(o)
	require.True(t, reflect.DeepEqual(o, c))
	assert.NotSame(t, o, c)
	assert.Same(t, c, c.Self, "the cycle is kept")
	assert.Same(t, c.Ptr, c.Alias, "sharing is kept")
	assert.NotSame(t, o.Ptr, c.Ptr)
	assert.NotNil(t, c.Empty)
	assert.Nil(t, c.Nil)

	// Every mutable part of the original, changed: the copy keeps its values.
	o.Ptr.N = 10
	o.Ptr.hidden[0] = "x"
	o.Map["k"].hidden[0] = "x"
	o.Slice[0].N = 30
	o.Any.(*copyInner).N = 40
	o.Arr[0]["a"] = 10
	o.private["p"][0] = 10
	assert.Equal(t, 1, c.Ptr.N)
	assert.Equal(t, []string{"h"}, c.Ptr.hidden)
	assert.Equal(t, []string{"m"}, c.Map["k"].hidden)
	assert.Equal(t, 3, c.Slice[0].N)
	assert.Equal(t, 4, c.Any.(*copyInner).N)
	assert.Equal(t, 1, c.Arr[0]["a"])
	assert.Equal(t, []int{1, 2}, c.private["p"])

	// Values, not only pointers.
	v := copyInner{N: 1, hidden: []string{"v"}}
	vc := Copy(v)
	v.hidden[0] = "w"
	assert.Equal(t, []string{"v"}, vc.hidden)
	var nilObj *copyObj
	assert.Nil(t, Copy(nilObj))
}

// TestDiff names the first difference by its path.
func TestDiff(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(o *copyObj)
		want   string
	}{
		{"none", func(*copyObj) {}, ""},
		{"field", func(o *copyObj) { o.Name = "p" }, `.Name: "o" -> "p"`},
		{"through a pointer", func(o *copyObj) { o.Ptr.N = 2 }, `.Ptr.N: 1 -> 2`},
		{"unexported", func(o *copyObj) { o.Ptr.hidden = append(o.Ptr.hidden, "i") }, `.Ptr.hidden: length 1 -> 2`},
		{"map value", func(o *copyObj) { o.Map["k"] = copyInner{N: 5, hidden: []string{"m"}} }, `.Map["k"].N: 2 -> 5`},
		{"map entry added", func(o *copyObj) { o.Map["new"] = copyInner{} }, `.Map["new"]: added {0 []}`},
		{"map entry deleted", func(o *copyObj) { delete(o.Map, "k") }, `.Map["k"]: deleted`},
		{"slice element", func(o *copyObj) { o.Slice[0] = nil }, `.Slice[0]: &{3 []} -> nil`},
		{"nil to empty", func(o *copyObj) { o.Nil = []int{} }, `.Nil: nil -> []`},
		{"interface", func(o *copyObj) { o.Any = "s" }, `.Any: type *deepcopy.copyInner -> string`},
		{"array of maps", func(o *copyObj) { o.Arr[1] = map[string]int{} }, `.Arr[1]: nil -> map[]`},
		{"private map", func(o *copyObj) { o.private["p"][1] = 3 }, `.private["p"][1]: 2 -> 3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newCopyObj()
			c := Copy(o)
			tt.mutate(o)
			assert.Equal(t, tt.want, Diff(c, o))
			assert.Equal(t, tt.want == "", reflect.DeepEqual(c, o))
		})
	}
	assert.Equal(t, "the object: 1 -> 2", Diff(1, 2))
	assert.Contains(t, Diff(struct{ F func() }{func() {}}, struct{ F func() }{}), ".F: a non-nil func")
}

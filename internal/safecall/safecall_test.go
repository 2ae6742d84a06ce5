package safecall_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/internal/safecall"
)

var errBad = errors.New("bad")

func double(n int) (int, error) {
	switch n {
	case -1:
		return 0, errBad
	case -2:
		panic("negative")
	case -3:
		var m map[string]int
		//lint:ignore SA5000 the panic of a runtime error is what this case is for
		m["x"] = 1
	}
	return 2 * n, nil
}

func TestCall(t *testing.T) {
	v, err := safecall.Call(double, 21)
	require.NoError(t, err)
	assert.Equal(t, 42, v)

	_, err = safecall.Call(double, -1)
	assert.Same(t, errBad, err, "f's own error comes back as it is")

	_, err = safecall.Call(double, -2)
	var pe *safecall.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "negative", pe.Value)
	assert.True(t, strings.HasPrefix(err.Error(), "panic: negative\n"), err.Error())
	assert.Contains(t, string(pe.Stack), "safecall_test.double", "the stack shows where the panic happened")

	_, err = safecall.Call(double, -3)
	var re runtime.Error
	require.ErrorAs(t, err, &re, "a panic with an error value unwraps to it")

	// Several arguments: a func literal.
	s, err := safecall.Call(func(sep string) (string, error) { return strings.Join([]string{"a", "b"}, sep), nil }, "-")
	require.NoError(t, err)
	assert.Equal(t, "a-b", s)
}

func TestCallAllocatesNothingWithoutAPanic(t *testing.T) {
	k := 3
	allocs := testing.AllocsPerRun(1000, func() {
		_, _ = safecall.Call(double, k)
		_, _ = safecall.Call(func(n int) (int, error) { return n + k, nil }, k)
	})
	assert.Zero(t, allocs)
}

func BenchmarkCall(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			_, _ = double(3)
		}
	})
	b.Run("Call", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = safecall.Call(double, 3)
		}
	})
}

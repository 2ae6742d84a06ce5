package valuecodec

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type inner struct {
	Port  int32
	Proto string
	flags uint8 // unexported: kept too
}

type node struct {
	Name string
	Next *node
}

type rich struct {
	Name     string
	Labels   map[string]string
	Ports    []inner
	Ptr      *inner
	NilPtr   *inner
	Nil      []string
	Empty    []string
	Raw      []byte
	When     time.Time
	Addr     netip.Addr
	F32      float32
	F64      float64
	I8       int8
	I16      int16
	U16      uint16
	U        uint
	B        bool
	Arr      [3]int64
	Matrix   [][]float64
	ByID     map[int64]*inner
	List     *node
	private  string
	Duration time.Duration
}

func sample() rich {
	return rich{
		Name:   "checkout",
		Labels: map[string]string{"app": "checkout", "tier": "web", "": "empty key"},
		Ports:  []inner{{80, "TCP", 1}, {443, "TCP", 2}, {-1, "", 0}},
		Ptr:    &inner{8080, "UDP", 3},
		Empty:  []string{},
		Raw:    []byte{0, 1, 2, 255},
		When:   time.Date(2026, 11, 26, 20, 0, 0, 123, time.UTC),
		Addr:   netip.MustParseAddr("2001:db8::1"),
		F32:    -1.5, F64: math.Inf(-1), I8: -128, I16: 300, U16: 65535, U: math.MaxUint, B: true,
		Arr:      [3]int64{math.MinInt64, 0, math.MaxInt64},
		Matrix:   [][]float64{{1, 2}, nil, {}},
		ByID:     map[int64]*inner{1: {Port: 1}, -2: nil},
		List:     &node{"a", &node{"b", nil}},
		private:  "kept",
		Duration: time.Minute,
	}
}

func TestRoundTrip(t *testing.T) {
	c, err := For[rich]()
	require.NoError(t, err)
	for _, v := range []rich{{}, sample()} {
		b, err := c.Append([]byte("prefix"), &v)
		require.NoError(t, err)
		require.Equal(t, "prefix", string(b[:6]), "appends")
		var got rich
		require.NoError(t, c.Decode(b[6:], &got))
		assert.True(t, reflect.DeepEqual(v, got), "deeply equal:\n%+v\n%+v", v, got)
		for i := range b {
			b[i] = 0xAA // the decoded value shares nothing with its input
		}
		assert.True(t, reflect.DeepEqual(v, got))
	}
}

// TestDamagedInputs: every truncation and random damage gives an error or
// a value, never a panic or a huge allocation.
func TestDamagedInputs(t *testing.T) {
	c, err := For[rich]()
	require.NoError(t, err)
	v := sample()
	b, err := c.Append(nil, &v)
	require.NoError(t, err)
	for n := range len(b) {
		var got rich
		require.Error(t, c.Decode(b[:n], &got), "cut at %d", n)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		d := append([]byte(nil), b...)
		for range 1 + r.IntN(4) {
			d[r.IntN(len(d))] = byte(r.Uint32())
		}
		var got rich
		_ = c.Decode(d, &got)
	}
	var got rich
	require.Error(t, c.Decode(append(b, 0), &got), "a byte left over")
}

func TestUnsupported(t *testing.T) {
	_, err := For[struct{ X any }]()
	require.ErrorIs(t, err, ErrUnsupported)
	_, err = For[struct{ F func() }]()
	require.ErrorIs(t, err, ErrUnsupported)
	_, err = For[map[string]chan int]()
	require.ErrorIs(t, err, ErrUnsupported)
}

func TestCycleFailsToEncode(t *testing.T) {
	c, err := For[node]()
	require.NoError(t, err)
	n := &node{Name: "loop"}
	n.Next = n
	_, err = c.Append(nil, n)
	require.Error(t, err)
}

func TestFingerprint(t *testing.T) {
	a, _ := For[inner]()
	type inner2 struct {
		Port  int32
		Proto string
		flags uint16 //lint:ignore U1000 only its type matters: a field of another width changes the fingerprint
	}
	b, _ := For[inner2]()
	assert.Contains(t, a.Fingerprint(), "Port int32;Proto string;flags uint8;")
	assert.NotEqual(t, strings.TrimPrefix(a.Fingerprint(), "github.com/ginformer/ginformer/internal/valuecodec.inner"),
		strings.TrimPrefix(b.Fingerprint(), "github.com/ginformer/ginformer/internal/valuecodec.inner2"), "a field's width changes it")
	r, _ := For[node]()
	assert.Equal(t, "github.com/ginformer/ginformer/internal/valuecodec.node{Name string;Next *@github.com/ginformer/ginformer/internal/valuecodec.node;}", r.Fingerprint())
}

// config is a realistic etcd value: what BenchmarkDecode compares.
type config struct {
	Service   string            `json:"service"`
	Namespace string            `json:"namespace"`
	Replicas  int               `json:"replicas"`
	Image     string            `json:"image"`
	Labels    map[string]string `json:"labels"`
	Env       []envVar          `json:"env"`
	Ports     []int             `json:"ports"`
	Enabled   bool              `json:"enabled"`
	Updated   time.Time         `json:"updated"`
	Notes     string            `json:"notes"`
}

type envVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func sampleConfig() config {
	c := config{Service: "checkout-api", Namespace: "payments", Replicas: 6, Image: "registry.example.com/payments/checkout-api:v1.42.7",
		Labels: map[string]string{"app": "checkout", "team": "payments", "tier": "backend", "env": "production"},
		Ports:  []int{8080, 8443, 9090}, Enabled: true, Updated: time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC),
		Notes: strings.Repeat("routing through the eu-west gateway; ", 10)}
	for i := range 8 {
		c.Env = append(c.Env, envVar{Name: "VAR_" + strings.Repeat("X", i+3), Value: strings.Repeat("v", 20+i)})
	}
	return c
}

// BenchmarkDecode: a ~1 KB configuration value, decoded from this codec's
// form and from JSON.
//
//	go test -run '^$' -bench . -benchmem ./internal/valuecodec/
func BenchmarkDecode(b *testing.B) {
	v := sampleConfig()
	js, _ := json.Marshal(v)
	c, _ := For[config]()
	bin, _ := c.Append(nil, &v)
	b.Run("json", func(b *testing.B) {
		b.SetBytes(int64(len(js)))
		for b.Loop() {
			var got config
			if err := json.Unmarshal(js, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("valuecodec", func(b *testing.B) {
		b.SetBytes(int64(len(bin)))
		for b.Loop() {
			var got config
			if err := c.Decode(bin, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	v := sampleConfig()
	c, _ := For[config]()
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	var buf []byte
	b.Run("valuecodec", func(b *testing.B) {
		for b.Loop() {
			buf, _ = c.Append(buf[:0], &v)
		}
	})
}

package valuecodec

import (
	"math"
	"reflect"
	"testing"
)

// floaty has floats (NaN is not DeepEqual to itself, so it is compared by
// its encoding), a binary marshaler, an array and no map (its encoding is
// deterministic).
type floaty struct {
	F32 float32
	F64 []float64
	Arr [2]int16
	P   *inner
	Raw []byte
}

// fuzzCase decodes raw into one type and checks what a decoded value must
// satisfy.
type fuzzCase struct {
	seed  func(t testing.TB) []byte
	check func(t *testing.T, raw []byte)
}

// caseFor is the case of T: seeded with v's encoding; deep compares
// decoded values with reflect.DeepEqual (types without floats), ordered
// compares encodings byte for byte (types without maps).
func caseFor[T any](v T, deep, ordered bool) fuzzCase {
	return fuzzCase{
		seed: func(t testing.TB) []byte {
			c, err := For[T]()
			if err != nil {
				t.Fatal(err)
			}
			b, err := c.Append(nil, &v)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		check: func(t *testing.T, raw []byte) { roundTrip[T](t, raw, deep, ordered) },
	}
}

var fuzzCases = []fuzzCase{
	caseFor(sample(), false, false),
	caseFor(sampleConfig(), true, false),
	caseFor(map[string]string{"a": "b", "": "c"}, true, false),
	caseFor([]inner{{1, "TCP", 2}, {}}, true, true),
	caseFor(node{"a", &node{"b", nil}}, true, true),
	caseFor(floaty{F32: 1.5, F64: []float64{math.Copysign(0, -1), 2}, Arr: [2]int16{-1, 1}, P: &inner{Port: 8}, Raw: []byte{}}, false, true),
}

// roundTrip decodes raw into a T: an error is fine, a panic is not. A
// value it decodes encodes, and that encoding decodes to the same value;
// raw is not retained.
func roundTrip[T any](t *testing.T, raw []byte, deep, ordered bool) {
	c, err := For[T]()
	if err != nil {
		t.Fatal(err)
	}
	in := append([]byte(nil), raw...)
	var v T
	if err := c.Decode(in, &v); err != nil {
		return
	}
	enc, err := c.Append(nil, &v)
	if err != nil {
		t.Fatalf("a decoded %T does not encode: %v", v, err)
	}
	for i := range in {
		in[i] ^= 0xff // the value shares nothing with its input
	}
	enc2, err := c.Append(nil, &v)
	if err != nil {
		t.Fatalf("a decoded %T does not encode after its input changed: %v", v, err)
	}
	var w T
	if err := c.Decode(enc, &w); err != nil {
		t.Fatalf("the encoding of a decoded %T does not decode: %v", v, err)
	}
	if deep && !reflect.DeepEqual(v, w) {
		t.Fatalf("a round trip changes a %T:\n%+v\n%+v", v, v, w)
	}
	if ordered {
		enc3, err := c.Append(nil, &w)
		if err != nil {
			t.Fatal(err)
		}
		if string(enc) != string(enc2) || string(enc) != string(enc3) {
			t.Fatalf("a %T encodes differently after a round trip or after its input changed:\n%x\n%x\n%x", v, enc, enc2, enc3)
		}
	}
}

// FuzzValueCodec: Decode of any bytes into a few representative types
// returns an error or a value, never panics; a decoded value encodes, and
// decodes again to itself.
//
//	go test ./internal/valuecodec -run '^$' -fuzz '^FuzzValueCodec$' -fuzztime 60s
func FuzzValueCodec(f *testing.F) {
	for i, c := range fuzzCases {
		b := c.seed(f)
		f.Add(uint8(i), b)
		f.Add(uint8(i), b[:len(b)/2])
		flip := append([]byte(nil), b...)
		flip[len(flip)/2] ^= 0x80
		f.Add(uint8(i), flip)
		f.Add(uint8(i), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}) // a huge length
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		fuzzCases[int(which)%len(fuzzCases)].check(t, raw)
	})
}

package wire

import (
	"encoding/json"
	"testing"
)

// BenchmarkSplitJSONWatchEvent: an event of a 10 KB custom resource split
// by the plan's scanner, and by encoding/json as the source did before.
//
//	go test ./source/k8s/internal/wire -run '^$' -bench SplitJSONWatchEvent -benchmem
func BenchmarkSplitJSONWatchEvent(b *testing.B) {
	obj := benchWorkloadJSON(b, 1)
	frame := append(append([]byte(`{"type":"ADDED","object":`), obj...), '}')
	b.Logf("event of %d bytes", len(frame))
	b.Run("scanner", func(b *testing.B) {
		b.SetBytes(int64(len(frame)))
		for b.Loop() {
			if _, _, err := SplitJSONWatchEvent(frame); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(frame)))
		for b.Loop() {
			var ev struct {
				Type   string          `json:"type"`
				Object json.RawMessage `json:"object"`
			}
			if err := json.Unmarshal(frame, &ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package natskv_test

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ginformer/ginformer/source/natskv"
	"github.com/ginformer/ginformer/source/sourcetest"
)

func TestConformance(t *testing.T) {
	sourcetest.Run(t, func(t *testing.T) sourcetest.Harness[*natskv.Object[obj]] {
		_, js := conn(t, srv)
		w := writer{js: js, kv: newBucket(t, js, jetstream.KeyValueConfig{})}
		return harness(newSource(t, natskv.Options[obj]{JetStream: js, Bucket: w.kv.Bucket()}), w)
	})
}

// The same contract holds with an unbuffered watch and a list kept for
// continues at most a few at a time.
func TestConformanceSmall(t *testing.T) {
	sourcetest.Run(t, func(t *testing.T) sourcetest.Harness[*natskv.Object[obj]] {
		_, js := conn(t, srv)
		w := writer{js: js, kv: newBucket(t, js, jetstream.KeyValueConfig{})}
		return harness(newSource(t, natskv.Options[obj]{JetStream: js, Bucket: w.kv.Bucket(), WatchBuffer: -1, MaxContinues: 2}), w)
	})
}

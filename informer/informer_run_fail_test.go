package informer

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunWaitsForHandlersWhenTheReflectorFails checks Run's promise on its
// error path: the handler goroutines it started before building the
// reflector have exited when it returns. NewSharedInformer validates what
// NewReflector checks, so the test breaks the reflector's options behind
// its back, the one way left for NewReflector to fail in Run.
func TestRunWaitsForHandlersWhenTheReflectorFails(t *testing.T) {
	for _, warm := range []bool{false, true} {
		name := map[bool]string{false: "cold", true: "warm restart, no snapshot yet"}[warm]
		t.Run(name, func(t *testing.T) {
			opts := Options[string, string]{Source: newScriptSource(), KeyFunc: directKey, Name: "broken"}
			if warm {
				opts.Snapshot = SnapshotOptions[string]{Store: NewSnapshotFile(filepath.Join(t.TempDir(), "snap"))}
			}
			inf, err := NewSharedInformer(opts)
			require.NoError(t, err)
			var regs []*Registration[string, string]
			for range 2 {
				reg, err := inf.AddHandler(&recorder{}, HandlerOptions{})
				require.NoError(t, err)
				regs = append(regs, reg)
			}
			inf.reflOpts.Source = nil

			err = inf.Run(t.Context())
			require.ErrorIs(t, err, ErrInvalidOptions)
			for i, reg := range regs {
				select {
				case <-reg.l.done:
				default:
					t.Fatalf("Run returned %v while the goroutine of handler %d still runs", err, i)
				}
			}
			require.ErrorIs(t, inf.Run(t.Context()), ErrClosed, "a Run that failed has stopped the informer")
		})
	}
}

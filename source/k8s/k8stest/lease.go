package k8stest

import (
	"log/slog"
	"time"

	"github.com/go-logr/logr"
)

// LeaseDuration is the lease duration for lease memberships in tests. The
// shortest the API allows is 1 s, renewed every 333 ms, which a loaded
// machine under -race misses now and then; 2 s is not missed.
const LeaseDuration = 2 * time.Second

// Quiet returns a logger that discards everything, for the components of a
// test whose expected errors (a cut network, a lost lease) would fill the
// output. The zero logr.Logger would not do: components log it to
// slog.Default.
func Quiet() logr.Logger { return logr.FromSlogHandler(slog.DiscardHandler) }

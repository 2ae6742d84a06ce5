package lograte

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLimiterBurstThenOnePerPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r Limiter
		for range Burst {
			ok, _ := r.Allow("a")
			require.True(t, ok)
		}
		for range 10 {
			ok, _ := r.Allow("a")
			require.False(t, ok)
		}
		ok, _ := r.Allow("b")
		require.True(t, ok, "kinds are limited separately")
		time.Sleep(Every)
		ok, suppressed := r.Allow("a")
		require.True(t, ok)
		require.Equal(t, 10, suppressed)
		ok, _ = r.Allow("a")
		require.False(t, ok)
	})
}

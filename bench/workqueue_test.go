package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWorkqueueSmoke runs every work queue workload at tiny sizes, once
// per side, and renders the report.
func TestWorkqueueSmoke(t *testing.T) {
	cfg := Config{Quick: true, Count: 1, Scale: 100, MinTime: time.Millisecond}
	rows := Run(cfg, WorkqueueBuilders(cfg))
	require.NotEmpty(t, rows)
	for _, r := range rows {
		require.Len(t, r.GI, 1, r.Name)
		require.Len(t, r.CG, 1, r.Name)
		require.Greater(t, r.GI[0]+r.CG[0], 0.0, r.Name)
	}
	md := WorkqueueMarkdown(rows, NewEnv(), cfg, "go run ./bench/cmd/workqueue -quick", time.Second)
	require.Contains(t, md, "| Workqueue | gets/s, 8 workers draining")
	require.Contains(t, md, "(information)")
}

func TestRewriteWorkqueueRegion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.md")
	require.NoError(t, os.WriteFile(path, []byte("# Title\n\n"+BeginMarker+"\nx\n"+EndMarker+"\n\n## Other\nkept\n"), 0o644))
	require.NoError(t, RewriteWorkqueueRegion(path, "one\n"))
	require.NoError(t, RewriteWorkqueueRegion(path, "two\n"))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(string(b), "## Other\nkept\n\n"+WorkqueueBeginMarker+"\ntwo\n"+WorkqueueEndMarker+"\n"), string(b))
	require.Contains(t, string(b), BeginMarker+"\nx\n"+EndMarker, "the informer region is untouched")
}

package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCompareSmoke runs every workload at tiny sizes, once per side, and
// renders the report: the harness works, both sides deliver every event.
func TestCompareSmoke(t *testing.T) {
	cfg := Config{Quick: true, Count: 1, Scale: 1000, MinTime: time.Millisecond}
	rows := Run(cfg, All(cfg))
	require.NotEmpty(t, rows)
	for _, r := range rows {
		require.Len(t, r.GI, 1, r.Name)
		if r.Group != "Floor" {
			require.Len(t, r.CG, 1, r.Name)
		}
	}
	text := Text(rows)
	require.Contains(t, text, "ByIndex")
	md := Markdown(rows, NewEnv(), cfg, "go run ./bench/cmd/compare -quick", time.Second)
	require.Contains(t, md, "| group | workload |")
	svg := SVG(rows, "smoke")
	require.True(t, strings.HasPrefix(svg, "<svg"))
	require.True(t, strings.HasSuffix(svg, "</svg>\n"))
}

func TestRewriteRegion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.md")
	require.NoError(t, os.WriteFile(path, []byte("# Title\n\n## Other\nkept\n"), 0o644))
	require.NoError(t, RewriteRegion(path, "one\n"))
	require.NoError(t, RewriteRegion(path, "two\n"))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "# Title\n\n"+BeginMarker+"\ntwo\n"+EndMarker+"\n\n## Other\nkept\n", string(b))
}

// Command compare runs the same workloads through ginformer and client-go's
// tools/cache, prints a table of medians with min..max and the ratio
// ginformer/client-go, and regenerates the comparison section of
// docs/benchmarks.md and the chart docs/benchmarks.svg.
//
// From the repository root:
//
//	go run ./bench/cmd/compare          # full run (about 20 minutes), rewrites the doc and chart
//	go run ./bench/cmd/compare -quick   # a few minutes, prints only (-write yes: rewrites the doc too)
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ginformer/ginformer/bench"
)

func main() {
	c := bench.RunCommand("smaller sizes and one repetition: a few minutes",
		"docs/benchmarks.md and docs/benchmarks.svg", bench.All)
	if !c.Write {
		return
	}
	root, err := bench.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	args := "go run ./bench/cmd/compare"
	if c.Cfg.Quick {
		args += " -quick"
	}
	md := bench.Markdown(c.Rows, c.Env, c.Cfg, args, c.Took)
	docPath := filepath.Join(root, "docs", "benchmarks.md")
	if err := bench.RewriteRegion(docPath, md); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	env := c.Env
	sub := fmt.Sprintf("%s, %d cores, %s, client-go %s, %s, %d runs per side", env.CPU, env.Cores, env.Go, env.ClientGo, env.Date, c.Cfg.Count)
	if err := os.WriteFile(filepath.Join(root, "docs", "benchmarks.svg"), []byte(bench.SVG(c.Rows, sub)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s and docs/benchmarks.svg\n", docPath)
}

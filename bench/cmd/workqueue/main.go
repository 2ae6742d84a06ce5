// Command workqueue compares ginformer's workqueue with client-go's
// util/workqueue, side by side in one process, prints a table of medians
// with min..max and the ratio ginformer/client-go, and rewrites the work
// queue region of docs/benchmarks.md.
//
// From the repository root:
//
//	go run ./bench/cmd/workqueue          # full run (about a minute), rewrites the doc region
//	go run ./bench/cmd/workqueue -quick   # a few seconds, prints only
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ginformer/ginformer/bench"
)

func main() {
	c := bench.RunCommand("smaller sizes and one repetition, prints only",
		"the docs/benchmarks.md region", bench.WorkqueueBuilders)
	if !c.Write {
		return
	}
	root, err := bench.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	command := "go run ./bench/cmd/workqueue"
	if c.Count != 0 {
		command += fmt.Sprintf(" -count %d", c.Count)
	}
	docPath := filepath.Join(root, "docs", "benchmarks.md")
	if err := bench.RewriteWorkqueueRegion(docPath, bench.WorkqueueMarkdown(c.Rows, c.Env, c.Cfg, command, c.Took)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s\n", docPath)
}

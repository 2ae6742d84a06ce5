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
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/ginformer/ginformer/bench"
)

func main() {
	quick := flag.Bool("quick", false, "smaller sizes and one repetition, prints only")
	count := flag.Int("count", 0, "repetitions per side (0: 5, or 1 with -quick)")
	write := flag.String("write", "auto", "rewrite the docs/benchmarks.md region: yes, no, or auto (yes unless -quick or -only)")
	only := flag.String("only", "", "run only the workloads whose first row matches this regexp (for development)")
	flag.Parse()

	cfg := bench.Config{Quick: *quick, Count: *count, MinTime: 300 * time.Millisecond, Log: os.Stderr}
	if cfg.Count == 0 {
		cfg.Count = 5
		if cfg.Quick {
			cfg.Count = 1
		}
	}
	if cfg.Quick {
		cfg.MinTime = 60 * time.Millisecond
	}
	env := bench.NewEnv()
	start := time.Now()
	builders := bench.WorkqueueBuilders(cfg)
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		builders = bench.Filter(builders, re)
	}
	rows := bench.Run(cfg, builders)
	env.LoadEnd = bench.LoadAvg()
	env.Date = start.UTC().Format("2006-01-02 15:04 MST")
	took := time.Since(start)

	fmt.Print(bench.Text(rows))
	fmt.Printf("\n%d repetitions per side; took %s; load average at start %s, at end %s\n",
		cfg.Count, took.Round(time.Second), env.LoadStart, env.LoadEnd)

	if !(*write == "yes" || *write == "auto" && !cfg.Quick && *only == "") {
		return
	}
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	command := "go run ./bench/cmd/workqueue"
	if *count != 0 {
		command += fmt.Sprintf(" -count %d", *count)
	}
	docPath := filepath.Join(root, "docs", "benchmarks.md")
	if err := bench.RewriteWorkqueueRegion(docPath, bench.WorkqueueMarkdown(rows, env, cfg, command, took)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s\n", docPath)
}

// repoRoot finds the directory holding go.work, from the working directory up.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.work above the working directory: run from the repository")
		}
		dir = parent
	}
}

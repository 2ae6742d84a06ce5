// Command compare runs the same workloads through ginformer and client-go's
// tools/cache, prints a table of medians with min..max and the ratio
// ginformer/client-go, and regenerates the comparison section of
// docs/benchmarks.md and the chart docs/benchmarks.svg.
//
// From the repository root:
//
//	go run ./bench/cmd/compare          # full run (about 10 minutes), rewrites the doc and chart
//	go run ./bench/cmd/compare -quick   # under two minutes, prints only
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
	quick := flag.Bool("quick", false, "smaller sizes and one repetition: under two minutes")
	count := flag.Int("count", 0, "repetitions per side (0: 5, or 1 with -quick)")
	write := flag.String("write", "auto", "rewrite docs/benchmarks.md and docs/benchmarks.svg: yes, no, or auto (yes unless -quick or -only)")
	only := flag.String("only", "", "run only the workload groups matching this regexp (for development)")
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
	builders := bench.All(cfg)
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		builders = bench.Filter(builders, re)
	}
	env := bench.NewEnv()
	start := time.Now()
	rows := bench.Run(cfg, builders)
	env.LoadEnd = bench.LoadAvg()
	env.Date = start.UTC().Format("2006-01-02 15:04 MST")
	took := time.Since(start)

	fmt.Print(bench.Text(rows))
	fmt.Printf("\n%d repetitions per side; took %s; load average at start %s, at end %s\n",
		cfg.Count, took.Round(time.Second), env.LoadStart, env.LoadEnd)

	doWrite := *write == "yes" || (*write == "auto" && !cfg.Quick && *only == "")
	if !doWrite {
		return
	}
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	args := "go run ./bench/cmd/compare"
	if cfg.Quick {
		args += " -quick"
	}
	md := bench.Markdown(rows, env, cfg, args, took)
	docPath := filepath.Join(root, "docs", "benchmarks.md")
	if err := bench.RewriteRegion(docPath, md); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sub := fmt.Sprintf("%s, %d cores, %s, client-go %s, %s, %d runs per side", env.CPU, env.Cores, env.Go, env.ClientGo, env.Date, cfg.Count)
	if err := os.WriteFile(filepath.Join(root, "docs", "benchmarks.svg"), []byte(bench.SVG(rows, sub)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s and docs/benchmarks.svg\n", docPath)
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

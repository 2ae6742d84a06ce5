package bench

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// Command is a side-by-side run driven from the command line, what the
// programs under bench/cmd share: the flags -quick, -count, -write and -only,
// the run, and the table printed on stdout.
type Command struct {
	Cfg  Config
	Rows []Row
	Env  Env
	Took time.Duration
	// Count is the -count flag as given (0: the default).
	Count int
	// Write says whether the caller should rewrite its docs: -write yes, or
	// -write auto (the default) on a full run (neither -quick nor -only).
	Write bool
}

// RunCommand parses the flags (writeWhat says what -write rewrites, quickHelp
// what -quick does), runs the workloads of builders (those matching -only),
// prints the table and a summary line, and returns the run. It exits the
// process with status 2 on a bad -only pattern.
func RunCommand(quickHelp, writeWhat string, builders func(Config) []Builder) Command {
	quick := flag.Bool("quick", false, quickHelp)
	count := flag.Int("count", 0, "repetitions per side (0: 5, or 1 with -quick)")
	write := flag.String("write", "auto", "rewrite "+writeWhat+": yes, no, or auto (yes unless -quick or -only)")
	only := flag.String("only", "", "run only the workloads whose group matches this regexp (for development)")
	flag.Parse()

	cfg := Config{Quick: *quick, Count: *count, MinTime: 300 * time.Millisecond, Log: os.Stderr}
	if cfg.Count == 0 {
		cfg.Count = 5
		if cfg.Quick {
			cfg.Count = 1
		}
	}
	if cfg.Quick {
		cfg.MinTime = 60 * time.Millisecond
	}
	bs := builders(cfg)
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		bs = Filter(bs, re)
	}
	env := NewEnv()
	start := time.Now()
	rows := Run(cfg, bs)
	env.LoadEnd = LoadAvg()
	env.Date = start.UTC().Format("2006-01-02 15:04 MST")
	took := time.Since(start)

	fmt.Print(Text(rows))
	fmt.Printf("\n%d repetitions per side; took %s; load average at start %s, at end %s\n",
		cfg.Count, took.Round(time.Second), env.LoadStart, env.LoadEnd)
	return Command{Cfg: cfg, Rows: rows, Env: env, Took: took, Count: *count,
		Write: *write == "yes" || (*write == "auto" && !cfg.Quick && *only == "")}
}

// RepoRoot finds the directory holding go.work, from the working directory
// up.
func RepoRoot() (string, error) {
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

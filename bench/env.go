package bench

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

// Env describes the machine and versions of a run.
type Env struct {
	CPU       string
	Cores     int
	MaxProcs  int
	MemGiB    float64
	Go        string
	ClientGo  string
	LoadStart string
	LoadEnd   string
	Date      string
}

// NewEnv reads the machine's description (Linux /proc; fields stay empty
// elsewhere).
func NewEnv() Env {
	e := Env{Cores: runtime.NumCPU(), MaxProcs: runtime.GOMAXPROCS(0), Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if _, v, ok := strings.Cut(l, ":"); ok {
					e.CPU = strings.TrimSpace(v)
					break
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				var kb float64
				for _, c := range f[1] {
					kb = kb*10 + float64(c-'0')
				}
				e.MemGiB = kb / (1 << 20)
			}
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/client-go" {
				e.ClientGo = d.Version
			}
		}
	}
	e.LoadStart = LoadAvg()
	return e
}

// LoadAvg returns the 1, 5 and 15 minute load averages.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

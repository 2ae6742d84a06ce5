package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// The control plane's side: the CPU of the kube-apiserver and etcd
// processes envtest started (children of this process), and the
// apiserver's own metrics.

// clockTicks is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on Linux): the CPU figures read there have 10 ms resolution.
const clockTicks = 100

// serverProcs are the pids of the control plane's processes.
type serverProcs struct {
	apiserver, etcd int
}

// findServerProcs finds the kube-apiserver and etcd processes among the
// children of this process (envtest starts them with exec).
//
// Possible errors: /proc cannot be read, or either process is missing.
func findServerProcs() (serverProcs, error) {
	var sp serverProcs
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return sp, err
	}
	self := os.Getpid()
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.ppid != self {
			continue
		}
		switch st.comm {
		case "kube-apiserver":
			sp.apiserver = pid
		case "etcd":
			sp.etcd = pid
		}
	}
	if sp.apiserver == 0 || sp.etcd == 0 {
		return sp, fmt.Errorf("no kube-apiserver (pid %d) or etcd (pid %d) among the children of process %d", sp.apiserver, sp.etcd, self)
	}
	return sp, nil
}

// procStat is what is read of /proc/<pid>/stat.
type procStat struct {
	comm     string
	ppid     int
	cpuTicks int64 // utime + stime
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[end+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ppid, _ := strconv.Atoi(f[1])
	utime, _ := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, _ := strconv.ParseInt(f[12], 10, 64) // field 15
	return procStat{comm: s[open+1 : end], ppid: ppid, cpuTicks: utime + stime}, nil
}

// serverCPU is the CPU the control plane's processes have used since they
// started, in nanoseconds.
type serverCPU struct {
	APIServerNS int64 `json:"apiserverNs"`
	EtcdNS      int64 `json:"etcdNs"`
}

// cpu reads the processes' CPU.
//
// Possible errors: a process is gone.
func (sp serverProcs) cpu() (serverCPU, error) {
	a, err := readStat(sp.apiserver)
	if err != nil {
		return serverCPU{}, err
	}
	e, err := readStat(sp.etcd)
	if err != nil {
		return serverCPU{}, err
	}
	return serverCPU{APIServerNS: a.cpuTicks * 1e9 / clockTicks, EtcdNS: e.cpuTicks * 1e9 / clockTicks}, nil
}

func (c serverCPU) minus(o serverCPU) serverCPU {
	return serverCPU{APIServerNS: c.APIServerNS - o.APIServerNS, EtcdNS: c.EtcdNS - o.EtcdNS}
}

// scaled returns c × f (an idle rate over another duration).
func (c serverCPU) scaled(f float64) serverCPU {
	return serverCPU{APIServerNS: int64(float64(c.APIServerNS) * f), EtcdNS: int64(float64(c.EtcdNS) * f)}
}

// Metrics read from the apiserver's /metrics, for pods.
const (
	metWatchCacheCapacity = "watch cache capacity (events)"
	metWatchEvents        = "watch events sent"
	metWatchEventBytes    = "watch event bytes sent"
	metRequestsPrefix     = "requests, verb "
)

// scrapeMetrics reads the apiserver's /metrics and returns, for pods: the
// watch cache's capacity, the watch events and their bytes sent so far,
// and the requests served so far by verb (a streaming list is a WATCH).
//
// Possible errors: the request's.
func scrapeMetrics(ctx context.Context, cs kubernetes.Interface) (map[string]float64, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("apiserver metrics: %w", err)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "#") || !strings.Contains(l, `resource="pods"`) || !strings.Contains(l, `group=""`) {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			continue
		}
		switch name := l[:strings.IndexByte(l, '{')]; name {
		case "watch_cache_capacity", "apiserver_watch_cache_capacity":
			out[metWatchCacheCapacity] = v
		case "apiserver_watch_events_total":
			out[metWatchEvents] += v
		case "apiserver_watch_events_sizes_sum":
			out[metWatchEventBytes] += v
		case "apiserver_request_total":
			if j := strings.Index(l, `verb="`); j >= 0 {
				verb := l[j+len(`verb="`):]
				verb = verb[:strings.IndexByte(verb, '"')]
				out[metRequestsPrefix+verb] += v
			}
		}
	}
	return out, sc.Err()
}

// metricsDelta returns after - before for the counters (the capacity is a
// gauge: before's).
func metricsDelta(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if k == metWatchCacheCapacity {
			continue
		}
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	if c, ok := before[metWatchCacheCapacity]; ok {
		out[metWatchCacheCapacity] = c
	}
	return out
}

// waitCPUQuiet waits up to limit for the apiserver's CPU to fall below
// rate (a fraction of a core) over a 2 s window; past limit it returns
// nil all the same (the idle window measured next says how busy it was).
//
// Possible errors: a process is gone, or ctx is done.
func (sp serverProcs) waitCPUQuiet(ctx context.Context, rate float64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		c0, err := sp.cpu()
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
		c1, err := sp.cpu()
		if err != nil {
			return err
		}
		if float64(c1.minus(c0).APIServerNS)/2e9 < rate {
			return nil
		}
	}
	return nil
}

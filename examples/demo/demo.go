// Package demo holds what the quickstart programs share
// (examples/quickstart, source/etcd/examples/quickstart,
// source/natskv/examples/quickstart): the Endpoint type and its random
// generator, the -duration and -quiet flags, the sampled printing, the
// counting handler, starting the informer, the writer loop, the progress
// line and the final summary. What talks to a particular source (its
// setup, its writes, reading it back for the final check) stays in each
// program.
//
// It is support code for the example programs, not API: nothing in it is
// covered by compatibility promises. It is not under an internal/ directory
// only because Go's internal rule admits no directory that both
// examples/quickstart and source/*/examples/quickstart may import from,
// except the module root's internal/, which holds only what sits below the
// engine.
package demo

import (
	"context"
	"flag"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ginformer/ginformer/informer"
)

// Endpoint is a plain user struct, stored as JSON by the etcd and NATS
// sources.
type Endpoint struct {
	Service string `json:"service"`
	Name    string `json:"name"`
	Region  string `json:"region"`
	Status  string `json:"status"` // "ready", "draining", "down"
	Weight  int    `json:"weight"`
}

var (
	regions  = []string{"eu-west", "us-east", "ap-south"}
	statuses = []string{"ready", "ready", "ready", "draining", "down"}
	services = []string{"checkout", "search", "profile"}
)

// NewRand returns the demo's random source, with a fixed seed so that
// every run writes the same sequence.
func NewRand() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

// NewEndpoint returns endpoint number i: its service and name depend on i
// only ("ep-<i>" of one of three services), its region, status and weight
// are drawn from rng.
func NewEndpoint(rng *rand.Rand, i int) Endpoint {
	return Endpoint{
		Service: ServiceOf(i),
		Name:    fmt.Sprintf("ep-%d", i),
		Region:  regions[rng.IntN(len(regions))],
		Status:  statuses[rng.IntN(len(statuses))],
		Weight:  rng.IntN(100),
	}
}

// ServiceOf returns the service of endpoint number i (see [NewEndpoint]).
func ServiceOf(i int) string { return services[i%len(services)] }

// ByRegion is the index function of the "region" index: the endpoint's region.
func ByRegion(dst []string, e Endpoint) ([]string, error) { return append(dst, e.Region), nil }

// ByStatus is the index function of the "status" index: the endpoint's status.
func ByStatus(dst []string, e Endpoint) ([]string, error) { return append(dst, e.Status), nil }

// Demo is one run of a quickstart: its flags and its counters. Create it
// with [Flags].
type Demo struct {
	// Duration is how long the writer runs (-duration, default 10s).
	Duration time.Duration
	// Quiet prints only the summary (-quiet).
	Quiet bool

	printed, events atomic.Int64
}

// Flags registers -duration and -quiet on the command line's flag set and
// returns the Demo they fill in when the program calls flag.Parse.
func Flags() *Demo {
	d := new(Demo)
	flag.DurationVar(&d.Duration, "duration", 10*time.Second, "how long the writer runs")
	flag.BoolVar(&d.Quiet, "quiet", false, "print only the summary")
	return d
}

// Exit ends the program: with status 1 and the error on stderr if err is
// not nil, else it returns.
func Exit(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// Say prints a line unless the demo is quiet.
func (d *Demo) Say(format string, args ...any) {
	if !d.Quiet {
		fmt.Printf(format+"\n", args...)
	}
}

// Sample is [Demo.Say] for the printing handler: it prints the first six
// calls and then every 500th.
func (d *Demo) Sample(format string, args ...any) {
	if n := d.printed.Add(1); n <= 6 || n%500 == 0 {
		d.Say(format, args...)
	}
}

// Counter returns a handler that counts every event it gets in d.
func Counter[K comparable, T any](d *Demo) informer.HandlerFuncs[K, T] {
	return informer.HandlerFuncs[K, T]{
		AddFunc:    func(T, bool) { d.events.Add(1) },
		UpdateFunc: func(_, _ T) { d.events.Add(1) },
		DeleteFunc: func(informer.Deletion[K, T]) { d.events.Add(1) },
	}
}

// Start runs inf in a goroutine, waits until inf and the counting handler's
// registration have synced, and says how many endpoints the cache holds.
// stop cancels the run, waits for it to end and returns its error. If the
// sync fails Start stops inf itself and returns the error.
func Start[K comparable, T any](ctx context.Context, d *Demo, inf *informer.SharedInformer[K, T], counter informer.Syncer) (stop func() error, err error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	stop = func() error {
		cancel()
		return <-done
	}
	if err := informer.WaitForSync(ctx, inf, counter); err != nil {
		_ = stop()
		return nil, err
	}
	d.Say("synced: %d endpoints in the cache", inf.Lister().Len())
	return stop, nil
}

// Write calls write until d.Duration has passed since the first call,
// and progress about once a second with the time since then. It returns
// the number of writes, or the first error of write.
func (d *Demo) Write(write func() error, progress func(elapsed time.Duration)) (writes int, err error) {
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for time.Since(start) < d.Duration {
		if err := write(); err != nil {
			return writes, err
		}
		writes++
		select {
		case <-tick.C:
			progress(time.Since(start))
		default:
		}
	}
	return writes, nil
}

// Progress says how many endpoints the cache holds, how many are ready
// and in eu-west, and the first three that are down, from the cache's
// "region" and "status" indexes (indexed with [ByRegion] and [ByStatus]),
// bound with Lister.IndexRef.
func Progress[K comparable, T any](d *Demo, elapsed time.Duration, cache informer.Lister[K, T], region, status informer.IndexRef[K, T]) {
	d.Say("[%2.0fs] %d endpoints, %d ready, %d in eu-west, down: %v", elapsed.Seconds(),
		cache.Len(), Count(status.Keys("ready")), Count(region.Keys("eu-west")), First(status.Keys("down"), 3))
}

// WaitForVersion waits, at most 10 s, until inf has applied version.
func WaitForVersion[K comparable, T any](ctx context.Context, inf *informer.SharedInformer[K, T], version string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return inf.WaitForVersion(ctx, version)
}

// Finish prints the one-line summary: objects in the cache, writes,
// handler events and their rate over elapsed, then equal (such as "cache
// equals etcd") if mismatch is empty, else the mismatch. It returns an
// error if mismatch is not empty.
func (d *Demo) Finish(objects, writes int, elapsed time.Duration, mismatch, equal string) error {
	result := equal
	if mismatch != "" {
		result = "MISMATCH: " + mismatch
	}
	events := d.events.Load()
	fmt.Printf("quickstart: %d objects, %d writes, %d handler events, %.0f events/s, %s\n",
		objects, writes, events, float64(events)/elapsed.Seconds(), result)
	if mismatch != "" {
		return fmt.Errorf("final check failed")
	}
	return nil
}

// Count returns the number of values seq yields.
func Count[V any](seq iter.Seq[V]) int {
	n := 0
	for range seq {
		n++
	}
	return n
}

// First returns the first n values of seq as strings (fmt's %v), sorted.
func First[V any](seq iter.Seq[V], n int) []string {
	var out []string
	for v := range seq {
		out = append(out, fmt.Sprint(v))
		if len(out) == n {
			break
		}
	}
	slices.Sort(out)
	return out
}

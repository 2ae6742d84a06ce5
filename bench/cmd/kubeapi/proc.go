package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// proc is a running child process.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // stdout, line by line; closed at EOF
	wait  chan error  // the exit status, once
}

var (
	procsMu sync.Mutex
	procs   = map[*proc]bool{}
)

// killAll kills every child still running (on error or interrupt).
func killAll() {
	procsMu.Lock()
	defer procsMu.Unlock()
	for p := range procs {
		_ = p.cmd.Process.Kill()
	}
}

// startChild starts exe as a child with args. Its stderr goes to ours; it
// dies with us (Pdeathsig on Linux, and EOF on its stdin everywhere).
func startChild(exe string, args []string) (*proc, error) {
	cmd := exec.Command(exe, append([]string{childRole}, args...)...)
	cmd.Stderr = os.Stderr
	dieWithParent(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, stdin: stdin, lines: make(chan string, 4), wait: make(chan error, 1)}
	procsMu.Lock()
	procs[p] = true
	procsMu.Unlock()
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<30)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		err := cmd.Wait()
		procsMu.Lock()
		delete(procs, p)
		procsMu.Unlock()
		p.wait <- err
	}()
	return p, nil
}

// expect waits for a line starting with prefix and returns the rest.
func (p *proc) expect(ctx context.Context, prefix string, timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return "", fmt.Errorf("child exited before %q: %v", prefix, <-p.wait)
			}
			if rest, found := strings.CutPrefix(l, prefix); found {
				return strings.TrimSpace(rest), nil
			}
			fmt.Fprintln(os.Stderr, "child:", l)
		case <-t.C:
			return "", fmt.Errorf("no %q from child after %s", prefix, timeout)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// kill stops the child and waits for it.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	for range p.lines {
	}
	_ = p.stdin.Close()
}

// runChild runs one measurement of lib in a child process: it waits for
// the sync, has write perform the watch phase's writes, and returns the
// child's result with the writes.
func runChild(ctx context.Context, exe string, args []string, timeout time.Duration, write func() ([]update, error)) (*result, []update, error) {
	p, err := startChild(exe, args)
	if err != nil {
		return nil, nil, err
	}
	ok := false
	defer func() {
		if !ok {
			p.kill()
		}
	}()
	if _, err := p.expect(ctx, "READY", timeout); err != nil {
		return nil, nil, err
	}
	writes, err := write()
	if err != nil {
		return nil, nil, err
	}
	// The child may have finished already (and closed its end): an error
	// here shows as a missing RESULT below.
	_, _ = io.WriteString(p.stdin, "DONE\n")
	line, err := p.expect(ctx, "RESULT", timeout)
	if err != nil {
		return nil, nil, err
	}
	var res result
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		return nil, nil, err
	}
	for range p.lines {
	}
	select {
	case err = <-p.wait:
	case <-time.After(time.Minute):
		err = errors.New("child did not exit")
	}
	_ = p.stdin.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("child: %w", err)
	}
	ok = true
	return &res, writes, nil
}

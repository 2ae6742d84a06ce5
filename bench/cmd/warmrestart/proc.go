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

// childRole is the first argument of a child process.
const childRole = "-role=child"

// proc is a running child process. The parent and the child talk in lines:
// the child prints "WORD {json}" on its stdout when it reaches a step, the
// parent writes "WORD {json}" on the child's stdin to move it on.
type proc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string // stdout, line by line; closed at EOF
	wait    chan error  // the exit status, once
	started time.Time   // just before the process was started
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
	p := &proc{cmd: cmd, stdin: stdin, lines: make(chan string, 4), wait: make(chan error, 1), started: time.Now()}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
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

// expect waits for a line "word {json}" and decodes the JSON into v (nil:
// ignored). Other lines are copied to stderr.
func (p *proc) expect(ctx context.Context, word string, timeout time.Duration, v any) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return fmt.Errorf("child exited before %s: %v", word, <-p.wait)
			}
			rest, found := strings.CutPrefix(l, word)
			if !found || (rest != "" && rest[0] != ' ') {
				fmt.Fprintln(os.Stderr, "child:", l)
				continue
			}
			if rest = strings.TrimSpace(rest); v != nil && rest != "" {
				return json.Unmarshal([]byte(rest), v)
			}
			return nil
		case <-t.C:
			return fmt.Errorf("no %s from the child after %s", word, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// send writes the line "word {json of v}" (v nil: "word") to the child.
func (p *proc) send(word string, v any) error {
	line := word
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		line += " " + string(b)
	}
	_, err := io.WriteString(p.stdin, line+"\n")
	return err
}

// finish waits for the child to exit, having said everything.
func (p *proc) finish() error {
	for range p.lines {
	}
	var err error
	select {
	case err = <-p.wait:
	case <-time.After(time.Minute):
		err = errors.New("child did not exit")
	}
	_ = p.stdin.Close()
	if err != nil {
		return fmt.Errorf("child: %w", err)
	}
	return nil
}

// kill stops the child and waits for it.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	for range p.lines {
	}
	_ = p.stdin.Close()
}

// readCommands reads the parent's lines from stdin, in a child, and sends
// them on the returned channel; when stdin ends (the parent is gone) the
// child exits.
func readCommands() <-chan string {
	ch := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			ch <- sc.Text()
		}
		os.Exit(3)
	}()
	return ch
}

// awaitCommand waits for the parent's line "word {json}" and decodes the
// JSON into v (nil: ignored).
func awaitCommand(cmds <-chan string, word string, v any) error {
	for l := range cmds {
		rest, found := strings.CutPrefix(l, word)
		if !found {
			continue
		}
		if rest = strings.TrimSpace(rest); v != nil && rest != "" {
			return json.Unmarshal([]byte(rest), v)
		}
		return nil
	}
	return fmt.Errorf("no %s from the parent", word)
}

// say prints the line "word {json of v}" for the parent.
func say(word string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Printf("%s %s\n", word, b)
	return err
}

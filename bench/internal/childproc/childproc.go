// Package childproc runs the benchmark commands' measured programs as
// child processes of their own (the command's binary, re-executed), so
// that the CPU, memory and requests measured are the child's alone. Parent
// and child talk in lines: the child prints "WORD {json}" on its stdout
// when it reaches a step ([Say]), the parent writes "WORD {json}" on the
// child's stdin to move it on ([Proc.Send]). A child dies with its parent
// (SIGKILL on Linux, EOF on its stdin everywhere).
package childproc

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

// Role is the first argument of a child process: a command's main runs
// its child's code when os.Args[1] is Role.
const Role = "-role=child"

// Proc is a running child process. Its methods are for one goroutine at a
// time.
type Proc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string // stdout, line by line; closed at EOF
	wait    chan error  // the exit status, once
	started time.Time   // just before the process was started
}

// Started is when the parent started the process (just before it did).
func (p *Proc) Started() time.Time { return p.started }

// Pid is the child's process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

var (
	procsMu sync.Mutex
	procs   = map[*Proc]bool{}
)

// KillAll kills every child still running (on error or interrupt); it
// does not wait for them.
func KillAll() {
	procsMu.Lock()
	defer procsMu.Unlock()
	for p := range procs {
		_ = p.cmd.Process.Kill()
	}
}

// Start starts exe as a child with [Role] and args. Its stderr goes to
// ours; it dies with us (Pdeathsig on Linux, and EOF on its stdin
// everywhere).
func Start(exe string, args []string) (*Proc, error) {
	cmd := exec.Command(exe, append([]string{Role}, args...)...)
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
	p := &Proc{cmd: cmd, stdin: stdin, lines: make(chan string, 4), wait: make(chan error, 1), started: time.Now()}
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

// Expect waits for a line "word {json}" and decodes the JSON into v (nil:
// ignored). Other lines are copied to stderr.
//
// Possible errors: the child exited, timeout passed, ctx is done, or the
// JSON did not decode into v.
func (p *Proc) Expect(ctx context.Context, word string, timeout time.Duration, v any) error {
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

// Send writes the line "word {json of v}" (v nil: "word") to the child.
func (p *Proc) Send(word string, v any) error {
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

// Finish waits (up to a minute) for the child to exit, having said
// everything, and returns an error if it did not exit with status 0.
func (p *Proc) Finish() error {
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

// Kill kills the child and waits for its output to end.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Kill()
	for range p.lines {
	}
	_ = p.stdin.Close()
}

// ReadCommands reads the parent's lines from stdin, in a child, and sends
// them on the returned channel; when stdin ends (the parent is gone) the
// child exits with status 3. Call it once, early.
func ReadCommands() <-chan string {
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

// AwaitCommand waits, in a child, for the parent's line "word {json}" on
// cmds ([ReadCommands]) and decodes the JSON into v (nil: ignored); other
// lines are skipped.
func AwaitCommand(cmds <-chan string, word string, v any) error {
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

// Say prints, in a child, the line "word {json of v}" for the parent.
func Say(word string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Printf("%s %s\n", word, b)
	return err
}

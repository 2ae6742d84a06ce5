//go:build unix

package debughttp_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A minimal client of the Chrome DevTools Protocol over
// --remote-debugging-pipe (standard library only): Chromium reads
// NUL-terminated JSON messages on its fd 3 and writes replies and events
// on its fd 4. One browser process, one page, driven one call at a time.

// browser is a headless Chromium and the page the test drives.
type browser struct {
	t       *testing.T
	cmd     *exec.Cmd
	toB     *os.File // our end of Chromium's fd 3
	fromB   *os.File // our end of Chromium's fd 4
	stderr  string   // file Chromium's stderr goes to
	session string   // the page's session

	wmu sync.Mutex // serialises writes to toB

	mu      sync.Mutex // guards the fields below
	next    int
	pending map[int]chan cdpMessage
	waiters map[string]chan cdpMessage // by event method
	readErr error

	readDone chan struct{} // closed when the reader has returned
}

type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *cdpError       `json:"error,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
}

type cdpError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// callTimeout bounds each protocol call, so that a wedged browser fails
// the test instead of hanging it; nothing is asserted about durations.
const callTimeout = 2 * time.Minute

// startBrowser starts Chromium headless with a fresh profile and opens a
// page of width × height CSS pixels. Cleanup closes the browser and kills
// its process group, whatever state it is in.
func startBrowser(t *testing.T, bin string, width, height int) *browser {
	t.Helper()
	dir := t.TempDir()
	b := &browser{
		t: t, stderr: filepath.Join(dir, "stderr.log"),
		pending: map[int]chan cdpMessage{}, waiters: map[string]chan cdpMessage{},
		readDone: make(chan struct{}),
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errFile, err := os.Create(b.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	b.cmd = exec.Command(bin,
		"--headless=new", "--remote-debugging-pipe",
		"--user-data-dir="+filepath.Join(dir, "profile"),
		fmt.Sprintf("--window-size=%d,%d", width, height),
		"--no-sandbox", // CI runs as root, which the sandbox refuses
		"--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
		"--disable-extensions", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--mute-audio", "about:blank")
	b.cmd.ExtraFiles = []*os.File{inR, outW} // fd 3, fd 4
	b.cmd.Stdout, b.cmd.Stderr = errFile, errFile
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	inR.Close()
	outW.Close()
	b.toB, b.fromB = inW, outR
	go b.read()
	t.Cleanup(b.close)

	var target struct{ TargetID string }
	b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct{ SessionID string }
	b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	b.session = attached.SessionID
	b.call(b.session, "Page.enable", nil, nil)
	b.resize(width, height)
	return b
}

// resize sets the page's viewport to width × height CSS pixels.
func (b *browser) resize(width, height int) {
	b.call(b.session, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false,
	}, nil)
}

// read dispatches Chromium's messages until the pipe closes.
func (b *browser) read() {
	defer close(b.readDone)
	r := bufio.NewReader(b.fromB)
	for {
		line, err := r.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			b.readErr = err
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			for method, ch := range b.waiters {
				close(ch)
				delete(b.waiters, method)
			}
			b.mu.Unlock()
			return
		}
		var m cdpMessage
		if json.Unmarshal(line[:len(line)-1], &m) != nil {
			continue
		}
		b.mu.Lock()
		var ch chan cdpMessage
		if m.ID != 0 {
			ch = b.pending[m.ID]
			delete(b.pending, m.ID)
		} else if m.SessionID == b.session {
			ch = b.waiters[m.Method]
			delete(b.waiters, m.Method)
		}
		b.mu.Unlock()
		if ch != nil {
			ch <- m // buffered: never blocks
		}
	}
}

// send writes a call and returns the channel its reply comes on.
func (b *browser) send(session, method string, params any) chan cdpMessage {
	b.t.Helper()
	ch, err := b.write(session, method, params)
	if err != nil {
		b.t.Fatalf("%s: write to chromium: %v%s", method, err, b.log())
	}
	return ch
}

// write writes a call and returns the channel its reply comes on.
func (b *browser) write(session, method string, params any) (chan cdpMessage, error) {
	b.mu.Lock()
	b.next++
	id := b.next
	ch := make(chan cdpMessage, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg, err := json.Marshal(struct {
		ID        int    `json:"id"`
		Method    string `json:"method"`
		Params    any    `json:"params,omitempty"`
		SessionID string `json:"sessionId,omitempty"`
	}{id, method, params, session})
	if err != nil {
		return nil, err
	}
	b.wmu.Lock()
	defer b.wmu.Unlock()
	_, err = b.toB.Write(append(msg, 0))
	return ch, err
}

// call makes one call and decodes its result into result (if not nil).
func (b *browser) call(session, method string, params, result any) {
	b.t.Helper()
	b.await(method, b.send(session, method, params), result)
}

// await waits for the reply on ch.
func (b *browser) await(method string, ch chan cdpMessage, result any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	select {
	case m, ok := <-ch:
		switch {
		case !ok:
			b.t.Fatalf("%s: chromium closed the pipe%s", method, b.log())
		case m.Error != nil:
			b.t.Fatalf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		case result != nil:
			if err := json.Unmarshal(m.Result, result); err != nil {
				b.t.Fatalf("%s: %v", method, err)
			}
		}
	case <-ctx.Done():
		b.t.Fatalf("%s: no answer from chromium in %v%s", method, callTimeout, b.log())
	}
}

// navigate loads url in the page and returns once its load event fired.
func (b *browser) navigate(url string) {
	b.t.Helper()
	loaded := make(chan cdpMessage, 1)
	b.mu.Lock()
	b.waiters["Page.loadEventFired"] = loaded
	b.mu.Unlock()
	var nav struct{ ErrorText string }
	b.call(b.session, "Page.navigate", map[string]any{"url": url}, &nav)
	if nav.ErrorText != "" {
		b.t.Fatalf("navigate to %s: %s", url, nav.ErrorText)
	}
	b.await("Page.loadEventFired", loaded, nil)
}

// eval evaluates a JavaScript expression in the page and decodes its
// value (JSON-serialisable) into result.
func (b *browser) eval(expr string, result any) {
	b.t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	b.call(b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r)
	if r.ExceptionDetails != nil {
		b.t.Fatalf("evaluate: %s %s", r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if err := json.Unmarshal(r.Result.Value, result); err != nil {
		b.t.Fatalf("evaluate: %v: %s", err, r.Result.Value)
	}
}

// screenshot saves the whole page, as wide as the viewport, as a PNG.
func (b *browser) screenshot(path string) {
	b.t.Helper()
	var size struct{ W, H float64 }
	b.eval(`({W: document.documentElement.clientWidth, H: document.documentElement.scrollHeight})`, &size)
	var shot struct{ Data string }
	b.call(b.session, "Page.captureScreenshot", map[string]any{
		"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": 0, "y": 0, "width": size.W, "height": size.H, "scale": 1},
	}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// close asks Chromium to exit, waits for it (killing its process group if
// it does not exit), kills whatever of the group is left and waits for the
// reader to see the pipe close.
func (b *browser) close() {
	exited := make(chan error, 1)
	_, _ = b.write("", "Browser.close", nil) // the reply may never come
	go func() { exited <- b.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(callTimeout):
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	// Helpers (renderer, GPU, zygote) share the group: none outlives the test.
	if err := syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		b.t.Errorf("kill chromium's process group: %v", err)
	}
	b.toB.Close()
	<-b.readDone
	b.fromB.Close()
}

// log returns the end of Chromium's stderr, for a failure message.
func (b *browser) log() string {
	data, _ := os.ReadFile(b.stderr)
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	if len(data) == 0 {
		return ""
	}
	return "\nchromium's stderr (end):\n" + string(data)
}

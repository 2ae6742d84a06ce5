package informer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ginformer/ginformer/internal/snapshotfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fmtObj struct {
	Name string
	Data string
}

func fmtKey(o *fmtObj) (string, error) { return o.Name, nil }

func fmtObjs(n, size int) []*fmtObj {
	objs := make([]*fmtObj, n)
	for i := range objs {
		objs[i] = &fmtObj{Name: fmt.Sprintf("obj-%05d", i), Data: strings.Repeat(strconv.Itoa(i%10), size)}
	}
	return objs
}

func encodeFmt(t testing.TB, id, version string, objs []*fmtObj, workers int) []byte {
	var buf bytes.Buffer
	st, err := encodeSnapshot(&buf, id, version, objs, JSONCodec[*fmtObj]{}, workers)
	require.NoError(t, err)
	require.Equal(t, int64(buf.Len()), st.Bytes)
	return buf.Bytes()
}

// TestSnapshotRoundTrip: what is encoded is decoded, in order, with its
// keys, whatever the number of workers on either side. (The layout's own
// tests are internal/snapshotfmt's.)
func TestSnapshotRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, snapshotfmt.ChunkObjects, snapshotfmt.ChunkObjects + 1, 3000} {
		objs := fmtObjs(n, 20)
		for _, workers := range []int{1, 3} {
			data := encodeFmt(t, "id", "v7", objs, workers)
			dec, err := decodeSnapshot(data, "id", JSONCodec[*fmtObj]{}, fmtKey, 4-workers)
			require.NoError(t, err)
			assert.Equal(t, "v7", dec.version)
			require.Len(t, dec.objs, n)
			for i, o := range objs {
				assert.Equal(t, *o, *dec.objs[i])
				assert.Equal(t, o.Name, dec.keys[i])
			}
		}
	}
}

// TestSnapshotRefusals: every refusal of the layout is an ErrSnapshot
// error that says the snapshot is refused and why.
func TestSnapshotRefusals(t *testing.T) {
	data := encodeFmt(t, "ginformer snapshot v2\nsource: a\nuser: u", "v1", fmtObjs(snapshotfmt.ChunkObjects+3, 3), 1)
	id := "ginformer snapshot v2\nsource: a\nuser: u"
	codec := JSONCodec[*fmtObj]{}
	flip := func(i int) []byte {
		b := bytes.Clone(data)
		b[i] ^= 1
		return b
	}
	layout := bytes.Clone(data)
	layout[8] = 3
	tests := []struct {
		name, id string
		data     []byte
		msg      string
	}{
		{"truncated", id, data[:len(data)-1], "refused, not a whole snapshot (truncated or damaged): no end marker after the last chunk"},
		{"no header", id, data[:10], "refused, not a whole snapshot (truncated or damaged): no snapshot header"},
		{"header flipped", id, flip(20), "refused, not a whole snapshot (truncated or damaged): header checksum"},
		{"chunk flipped", id, flip(len(data) - 20), "refused, not a whole snapshot (truncated or damaged): chunk checksum"},
		{"trailer flipped", id, flip(len(data) - 1), "refused, not a whole snapshot (truncated or damaged): end checksum"},
		{"layout version", id, layout, "refused, written in layout version 3, this release reads 2"},
		{"another source", "ginformer snapshot v2\nsource: b\nuser: u", data, `refused, it is a snapshot of something else: it has "source: a" where this informer has "source: b"`},
		{"trailing line", id + "\n", data, "refused, identity differs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeSnapshot(tt.data, tt.id, codec, fmtKey, 2)
			require.ErrorIs(t, err, ErrSnapshot)
			assert.Equal(t, ErrSnapshot.Error()+": "+tt.msg, err.Error())
		})
	}
}

// TestSnapshotRefusesUndecodableObjects: an object the codec or the key
// function refuses refuses the whole snapshot: never a partial cache.
func TestSnapshotRefusesUndecodableObjects(t *testing.T) {
	data := encodeFmt(t, "id", "v1", fmtObjs(10, 3), 1)
	_, err := decodeSnapshot(data, "id", JSONCodec[*fmtObj]{}, func(o *fmtObj) (string, error) {
		if o.Name == "obj-00007" {
			return "", errors.New("no")
		}
		return o.Name, nil
	}, 2)
	require.ErrorIs(t, err, ErrSnapshot)
	require.ErrorIs(t, err, ErrKeyFunc)
	_, err = decodeSnapshot(data, "id", JSONCodec[*fmtObj]{}, func(o *fmtObj) (string, error) { panic("key") }, 2)
	require.ErrorIs(t, err, ErrKeyFunc)
	_, err = decodeSnapshot(data, "id", JSONCodec[*struct{ Name int }]{}, func(*struct{ Name int }) (string, error) { return "", nil }, 2)
	require.ErrorIs(t, err, ErrSnapshot)
	assert.Contains(t, err.Error(), "cannot decode an object")
}

// TestSnapshotFileKeepsThePreviousOnFailure: a Save whose writer fails, or
// whose context ends, leaves the previous snapshot and no temporary file.
func TestSnapshotFileKeepsThePreviousOnFailure(t *testing.T) {
	dir := t.TempDir()
	f := NewSnapshotFile(filepath.Join(dir, "snap"))
	_, err := f.Load(context.Background())
	require.ErrorIs(t, err, fs.ErrNotExist)
	write := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	require.NoError(t, f.Save(context.Background(), write("one")))
	require.Error(t, f.Save(context.Background(), func(w io.Writer) error {
		_, _ = io.WriteString(w, "half")
		return errors.New("encoder failed")
	}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.Error(t, f.Save(ctx, write("two")))
	got, err := f.Load(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "one", string(got))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, ents, 1, "no temporary file left")
}

// killEnv names the directory the child of TestSnapshotSurvivesSIGKILL
// writes snapshots into.
const killEnv = "GINFORMER_SNAPSHOT_KILL_DIR"

// TestSnapshotKillChild is the child of TestSnapshotSurvivesSIGKILL: it
// writes snapshots of changing sizes until it is killed. It does nothing
// in a normal test run.
func TestSnapshotKillChild(t *testing.T) {
	dir := os.Getenv(killEnv)
	if dir == "" {
		t.Skip("the child of TestSnapshotSurvivesSIGKILL")
	}
	f := NewSnapshotFile(filepath.Join(dir, "snap"))
	for i := 1; ; i++ {
		objs := fmtObjs(100+(i*37)%400, 1000)
		err := f.Save(context.Background(), func(w io.Writer) error {
			_, err := encodeSnapshot(w, "kill", strconv.Itoa(i)+"/"+strconv.Itoa(len(objs)), objs, JSONCodec[*fmtObj]{}, 1)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			fmt.Println("wrote the first snapshot")
		}
	}
}

// TestSnapshotSurvivesSIGKILL: a process killed with SIGKILL at random
// points while it writes snapshots, 50 times, always leaves a complete
// snapshot (the last one it finished, or the one it was writing if the
// rename happened) that decodes whole, and the next write cleans up.
func TestSnapshotSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 50 processes")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "snap")
	midWrite, whole := 0, 0 // rounds killed with a temporary file present; rounds with a snapshot
	for round := range 50 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSnapshotKillChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), killEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		if round%2 == 0 {
			// Half the rounds wait for a first snapshot (so the kill
			// lands in a later write); the others may kill before any.
			buf := make([]byte, 64)
			_, _ = out.Read(buf)
		}
		time.Sleep(time.Duration(rand.IntN(30_000)) * time.Microsecond) // a random point: not an interleaving the test asserts on
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		if ents, err := os.ReadDir(dir); err == nil && len(ents) > 1 {
			midWrite++
		}

		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // killed before the first rename: a cold start
		}
		require.NoError(t, err)
		dec, err := decodeSnapshot(data, "kill", JSONCodec[*fmtObj]{}, fmtKey, 2)
		require.NoError(t, err, "round %d: the snapshot on disk is whole", round)
		_, n, _ := strings.Cut(dec.version, "/")
		assert.Equal(t, n, strconv.Itoa(len(dec.objs)), "round %d", round)
		whole++
	}
	t.Logf("%d rounds killed during a write, %d left a snapshot, all whole", midWrite, whole)
	// The temporary files of killed writes go with the next Save.
	require.NoError(t, NewSnapshotFile(path).Save(context.Background(), func(w io.Writer) error {
		_, err := io.WriteString(w, "x")
		return err
	}))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, ents, 1)
}

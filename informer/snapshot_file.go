package informer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// SnapshotFile is a [SnapshotStore] on local disk: one file, replaced
// atomically. Build one with [NewSnapshotFile].
//
// Save writes the new snapshot to a temporary file beside the path
// (path + ".tmp-" and a random suffix), flushes it to disk (fsync), renames
// it over the path and flushes the directory, so that a crash at any point
// leaves the previous snapshot or the new one, whole. Temporary files left
// by a crash are removed by the next Save. Give each informer its own path.
type SnapshotFile struct {
	path string
}

// NewSnapshotFile returns the store of a snapshot kept at path. The
// directory must exist; the file need not. A path that cannot name a file
// ("", one ending in a separator, an existing directory) is refused by
// [NewSharedInformer] with [ErrInvalidOptions].
func NewSnapshotFile(path string) *SnapshotFile { return &SnapshotFile{path: path} }

// check refuses a path that cannot name the snapshot's file, so that the
// mistake shows when the informer is built, not at its first write.
//
// Possible errors: [ErrInvalidOptions].
func (f *SnapshotFile) check() error {
	switch {
	case f.path == "":
		return fmt.Errorf("NewSnapshotFile: empty path: %w", ErrInvalidOptions)
	case os.IsPathSeparator(f.path[len(f.path)-1]):
		return fmt.Errorf("NewSnapshotFile(%q): a directory, not a file: %w", f.path, ErrInvalidOptions)
	}
	if fi, err := os.Stat(f.path); err == nil && fi.IsDir() {
		return fmt.Errorf("NewSnapshotFile(%q): a directory, not a file: %w", f.path, ErrInvalidOptions)
	}
	return nil
}

// Path returns the file's path.
func (f *SnapshotFile) Path() string { return f.path }

// Load reads the whole file.
//
// Possible errors: an error wrapping [fs.ErrNotExist] when there is no
// snapshot; other I/O errors.
func (f *SnapshotFile) Load(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return os.ReadFile(f.path)
}

// Save writes a new snapshot as described on [SnapshotFile].
//
// Possible errors: write's error, ctx's, or an I/O error (wrapped).
func (f *SnapshotFile) Save(ctx context.Context, write func(w io.Writer) error) (err error) {
	dir, base := filepath.Split(f.path)
	if dir == "" {
		dir = "."
	}
	f.removeStale(dir, base)
	tmp, err := os.CreateTemp(dir, base+".tmp-")
	if err != nil {
		return fmt.Errorf("snapshot file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(&ctxWriter{ctx: ctx, w: tmp}, 1<<20)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("snapshot file: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("snapshot file: sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("snapshot file: close %s: %w", tmp.Name(), err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("snapshot file: %w", err)
	}
	// The rename is durable once the directory is: without this, a power
	// loss could bring back the old file (or none). An error here leaves a
	// complete snapshot either way.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// removeStale removes the temporary files of earlier Saves that did not
// finish (the process died): each informer has its own path, and Saves of
// one store do not overlap, so none is in use.
func (f *SnapshotFile) removeStale(dir, base string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), base+".tmp-") {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// ctxWriter fails writes once ctx is done, so that a Save in progress
// stops promptly when its informer is asked to.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c *ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, errors.Join(errors.New("snapshot write cancelled"), err)
	}
	return c.w.Write(p)
}

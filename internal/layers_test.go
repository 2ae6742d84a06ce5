// Package internal_test checks the layering of the whole tree (every module
// of the repository): which packages may import which. The tree's directory
// internal/ holds no package of its own; its subdirectories are the
// packages below the engine.
package internal_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// modulePath is the import path of the repository root; every module of the
// repository is rooted at its directory's path below it.
const modulePath = "github.com/ginformer/ginformer"

// goFile is one parsed Go file: its package directory relative to the
// repository root (slash-separated) and the imports of ours it names,
// relative to the repository root as well.
type goFile struct {
	path    string // relative file path, for messages
	dir     string // relative package directory, e.g. "source/etcd"
	test    bool   // a _test.go file
	imports []string
}

// parseTree reads the imports of every Go file under root, skipping hidden
// directories and testdata.
func parseTree(t *testing.T, root string) []goFile {
	t.Helper()
	var files []goFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		gf := goFile{
			path: filepath.ToSlash(rel),
			dir:  filepath.ToSlash(filepath.Dir(rel)),
			test: strings.HasSuffix(name, "_test.go"),
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if p == modulePath {
				gf.imports = append(gf.imports, ".")
			} else if rest, ok := strings.CutPrefix(p, modulePath+"/"); ok {
				gf.imports = append(gf.imports, rest)
			}
		}
		files = append(files, gf)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// under reports whether the relative package path p is dir or below it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// sourceOf returns the concrete source a relative package path belongs to
// ("etcd" for source/etcd/etcdtest), or "" if it belongs to none:
// source/internal and source/sourcetest are shared by the sources, not one.
func sourceOf(p string) string {
	rest, ok := strings.CutPrefix(p, "source/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	if name == "internal" || name == "sourcetest" {
		return ""
	}
	return name
}

// isExample reports whether a relative package path is an example program or
// their shared support (a path element named examples).
func isExample(p string) bool {
	return slices.Contains(strings.Split(p, "/"), "examples")
}

// layerRule returns why the import imp from a file is not allowed, or "".
func layerRule(f goFile, imp string) string {
	from := f.dir
	switch {
	case under(from, "internal/ringbuf") && !f.test:
		return "internal/ringbuf imports nothing of ginformer's"
	case under(from, "internal") && !f.test && !under(imp, "internal"):
		return "internal/ is below the engine: it imports only internal/"
	case (under(from, "informer") || under(from, "shard") || under(from, "workqueue")) && !f.test &&
		(under(imp, "source") || under(imp, "bench") || under(imp, "examples") || under(imp, "metrics")):
		return "the engine (informer, shard, workqueue) imports no source, metrics, bench or examples"
	case under(from, "source/internal") && !f.test && sourceOf(imp) != "":
		return "source/internal is shared by the sources: it imports none of them"
	case sourceOf(from) != "" && sourceOf(imp) != "" && sourceOf(imp) != sourceOf(from):
		return "sources do not import each other (what they share goes under source/internal)"
	case under(imp, "bench") && !under(from, "bench"):
		return "only bench/ imports bench/"
	case under(imp, "examples") && !isExample(from):
		return "only example programs import examples/"
	}
	return ""
}

// TestLayers checks that no import in the tree runs upward: internal/ below
// the engine, the engine (informer, shard, workqueue), the sources and what
// they share (source/internal), then metrics, bench and examples on top.
// Library files are checked for every rule; test files only for the rules
// that hold for them too (sources do not import each other; nothing imports
// bench/ or examples/ from outside): an engine test may run against
// source/memory.
func TestLayers(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("repository root not found above internal/: %v", err)
	}
	files := parseTree(t, root)
	if len(files) < 100 {
		t.Fatalf("parsed %d Go files under %s; expected the whole tree", len(files), root)
	}
	for _, f := range files {
		for _, imp := range f.imports {
			if why := layerRule(f, imp); why != "" {
				t.Errorf("%s imports %s: %s", f.path, imp, why)
			}
		}
	}
}

// TestLayerRule checks the rule itself on imports that must and must not
// pass, so a rule that stops matching anything cannot pass silently.
func TestLayerRule(t *testing.T) {
	tests := []struct {
		from, imp string
		test      bool
		ok        bool
	}{
		{from: "internal/valuecodec", imp: "internal/ctxtime", ok: true},
		{from: "internal/ringbuf", imp: "internal/ctxtime", ok: false},
		{from: "internal/swmr", imp: "informer", ok: false},
		{from: "internal/swmr", imp: "shard", ok: false},
		{from: "internal/swmr", imp: "source/internal/sourcekit", ok: false},
		{from: "informer", imp: "internal/swmr", ok: true},
		{from: "informer", imp: "source/memory", ok: false},
		{from: "informer", imp: "source/memory", test: true, ok: true},
		{from: "shard", imp: "source/internal/keepalive", ok: false},
		{from: "informer", imp: "bench", ok: false},
		{from: "source/internal/sliceload", imp: "shard", ok: true},
		{from: "source/internal/sliceload", imp: "source/etcd", ok: false},
		{from: "source/etcd", imp: "source/internal/sliceload", ok: true},
		{from: "source/etcd", imp: "source/sourcetest", test: true, ok: true},
		{from: "source/etcd", imp: "source/k8s", ok: false},
		{from: "source/etcd", imp: "source/memory", test: true, ok: false},
		{from: "source/k8s/compat", imp: "source/k8s", ok: true},
		{from: "source/natskv/examples/quickstart", imp: "examples/demo", ok: true},
		{from: "source/natskv", imp: "examples/demo", ok: false},
		{from: "bench/cmd/kubeapi", imp: "source/k8s", ok: true},
		{from: "source/k8s", imp: "bench/internal/kubepods", test: true, ok: false},
	}
	for _, tt := range tests {
		why := layerRule(goFile{dir: tt.from, test: tt.test}, tt.imp)
		if (why == "") != tt.ok {
			t.Errorf("%s (test %v) importing %s: allowed %v, want %v (%s)", tt.from, tt.test, tt.imp, why == "", tt.ok, why)
		}
	}
}

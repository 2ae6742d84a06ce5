// Package docs holds the documentation's own tests: the names the pages
// cite must exist in the code.
package docs

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mapRow is one row of a table of docs/design.md with a file column and a
// function column: the files (relative to the repository root) and the
// names the row cites. names are the row's own steps, declared in its
// files; refs are names the row mentions in parentheses (a caller, a type
// an argument has), declared anywhere in the packages of its files.
type mapRow struct {
	line  int
	files []string
	names []string
	refs  []string
}

var (
	// codeSpan is a `backticked` span of Markdown.
	codeSpan = regexp.MustCompile("`([^`]*)`")
	// parens is a parenthesised argument list inside a span: Synced(),
	// IndexRef(idx).
	parens = regexp.MustCompile(`\([^)]*\)`)
	// nameChain is an identifier, or two joined by a dot: Run,
	// Indexer.tryCommit. A leading * (a pointer type) is dropped first.
	nameChain = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)
)

// mapRows returns the rows of every table in the Markdown file at path
// whose header has a "file" and a "function" column. A file cell names Go
// files of dir (informer/ for design.md's map) or, with a slash, a package
// directory relative to the repository root.
func mapRows(t *testing.T, path, dir string) []mapRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []mapRow
	fileCol, funcCol := -1, -1
	inTable := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.HasPrefix(line, "|") {
			inTable, fileCol, funcCol = false, -1, -1
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if !inTable {
			inTable = true
			for i, c := range cells {
				switch strings.TrimSpace(c) {
				case "file":
					fileCol = i
				case "function":
					funcCol = i
				}
			}
			continue
		}
		if fileCol < 0 || funcCol < 0 || strings.HasPrefix(line, "|---") || len(cells) <= max(fileCol, funcCol) {
			continue
		}
		row := mapRow{line: n}
		for _, m := range codeSpan.FindAllStringSubmatch(cells[fileCol], -1) {
			if strings.HasSuffix(m[1], ".go") {
				row.files = append(row.files, filepath.Join(dir, m[1]))
			} else {
				row.files = append(row.files, m[1]+"/")
			}
		}
		for _, c := range codeSpans(cells[funcCol]) {
			name := strings.TrimPrefix(parens.ReplaceAllString(c.text, ""), "*")
			if !nameChain.MatchString(name) {
				t.Errorf("%s:%d: %q in the function column is no name or Type.name", path, n, c.text)
				continue
			}
			if c.inParens {
				row.refs = append(row.refs, name)
			} else {
				row.names = append(row.names, name)
			}
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// span is the text of one `code span` of a table cell, and whether it
// stands inside parentheses of the cell's prose.
type span struct {
	text     string
	inParens bool
}

// codeSpans returns the code spans of a Markdown table cell, telling those
// inside parentheses of the prose (not of the code) from the others.
func codeSpans(cell string) []span {
	var spans []span
	depth := 0
	for i := 0; i < len(cell); i++ {
		switch cell[i] {
		case '(':
			depth++
		case ')':
			depth = max(depth-1, 0)
		case '`':
			end := strings.IndexByte(cell[i+1:], '`')
			if end < 0 {
				return spans
			}
			spans = append(spans, span{text: cell[i+1 : i+1+end], inParens: depth > 0})
			i += 1 + end
		}
	}
	return spans
}

// decls is what a set of Go files declares: every top-level func, type,
// var and const, every method, interface method and struct field by its own
// name, the methods and fields of each type as "Type.name", and each type
// as "type Type".
type decls map[string]bool

// parseDecls reads the declarations of the Go files (not tests) that paths
// name: a file, or every file of a directory (ending in "/"), relative to
// root.
func parseDecls(t *testing.T, root string, paths []string) decls {
	t.Helper()
	d := decls{}
	fset := token.NewFileSet()
	for _, p := range paths {
		var files []string
		if strings.HasSuffix(p, "/") {
			m, err := filepath.Glob(filepath.Join(root, p, "*.go"))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range m {
				if !strings.HasSuffix(f, "_test.go") {
					files = append(files, f)
				}
			}
			if len(files) == 0 {
				t.Errorf("%s: no Go files", p)
			}
		} else {
			files = []string{filepath.Join(root, p)}
		}
		for _, f := range files {
			af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			d.add(af)
		}
	}
	return d
}

func (d decls) add(f *ast.File) {
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			d[decl.Name.Name] = true
			if decl.Recv != nil && len(decl.Recv.List) == 1 {
				d[recvName(decl.Recv.List[0].Type)+"."+decl.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, spec := range decl.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					d[spec.Name.Name] = true
					d["type "+spec.Name.Name] = true
					d.addMembers(spec.Name.Name, spec.Type)
				case *ast.ValueSpec:
					for _, n := range spec.Names {
						d[n.Name] = true
					}
				}
			}
		}
	}
}

// addMembers records the fields of a struct type and the methods of an
// interface type.
func (d decls) addMembers(typ string, e ast.Expr) {
	var list *ast.FieldList
	switch e := e.(type) {
	case *ast.StructType:
		list = e.Fields
	case *ast.InterfaceType:
		list = e.Methods
	default:
		return
	}
	for _, f := range list.List {
		for _, n := range f.Names {
			d[n.Name] = true
			d[typ+"."+n.Name] = true
		}
	}
}

// recvName is the type name of a method's receiver: T for T, *T, T[K, V]
// and *T[K, V].
func recvName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return fmt.Sprintf("%T", e)
		}
	}
}

// TestDesignMap checks the maintainer's map of docs/design.md (the table of
// steps, files and functions): every file it names exists; every name in
// its function column is declared in one of the row's files, or, when the
// row mentions it in parentheses, in one of their packages. A Type.name
// (Indexer.tryCommit) must be a method or field of that type there when the
// type is one of the package's, else (a variable: inf.report,
// versions.record) a method or field of some type. A rename, a removal or a move to another
// file that leaves the map behind fails here.
func TestDesignMap(t *testing.T) {
	const root = ".."
	rows := mapRows(t, "design.md", "informer")
	if len(rows) < 20 {
		t.Fatalf("found %d rows in design.md's map; the table's header must have a file and a function column", len(rows))
	}
	pkgs := map[string]decls{} // by package directory
	pkgOf := func(file string) decls {
		dir := file
		if !strings.HasSuffix(file, "/") {
			dir = filepath.Dir(file) + "/"
		}
		if pkgs[dir] == nil {
			pkgs[dir] = parseDecls(t, root, []string{dir})
		}
		return pkgs[dir]
	}
	for _, r := range rows {
		if len(r.files) == 0 {
			t.Errorf("design.md:%d: no file", r.line)
			continue
		}
		for _, f := range r.files {
			if _, err := os.Stat(filepath.Join(root, f)); err != nil {
				t.Errorf("design.md:%d: file %s: %v", r.line, f, err)
			}
		}
		here := parseDecls(t, root, r.files)
		var pkgDecls []decls
		for _, f := range r.files {
			pkgDecls = append(pkgDecls, pkgOf(f))
		}
		isType := func(typ string) bool {
			for _, d := range pkgDecls {
				if d["type "+typ] {
					return true
				}
			}
			return false
		}
		check := func(name string, where []decls, whereName string) {
			want := name // Type.member when Type is a type of the package
			if typ, member, dotted := strings.Cut(name, "."); dotted && !isType(typ) {
				want = member // a variable's method or field
			}
			for _, d := range where {
				if d[want] {
					return
				}
			}
			t.Errorf("design.md:%d: %s is declared in none of %s", r.line, name, whereName)
		}
		for _, name := range r.names {
			check(name, []decls{here}, fmt.Sprint(r.files))
		}
		for _, name := range r.refs {
			check(name, pkgDecls, "the packages of "+fmt.Sprint(r.files))
		}
	}
}

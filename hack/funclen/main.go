// Command funclen fails when a production Go function is longer than a limit: `make lint` runs
// it over every Go file git tracks. It parses each file with go/parser and counts a function
// from the line of its func keyword to the line of its closing brace, both included (the doc
// comment is not counted). Function literals count towards the function that holds them.
//
// Production is every tracked .go file except tests (_test.go), generated code (a "Code
// generated ... DO NOT EDIT." line, as go generate defines) and the two trees that are test
// code by role: internal/testing (the test toolkit: the cloud API fakes, the servers a test
// starts) and e2e (the end-to-end suite and its data generator). hack/ is production: the
// bench, the fault suite and the tools there are programs that are read and changed like the
// operator. A function named in the allow file (one "path name" a line, # comments) is
// reported but does not fail the check; a name there that is no longer over the limit fails it,
// so the file only shrinks.
//
// Usage: go run ./hack/funclen [-max 80] [-allow file] [file.go...]
// With no file arguments it reads `git ls-files '*.go'`.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Func is one function over the limit.
type Func struct {
	Path  string // the file, as given
	Name  string // "name" or "Recv.name"
	Line  int    // the line of its func keyword
	Lines int    // its length in lines
}

func (f Func) key() string { return f.Path + " " + f.Name }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("funclen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	limit := fs.Int("max", 80, "the longest a production function may be, in lines")
	allowPath := fs.String("allow", "", "a file of known functions over the limit (\"path name\" a line)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	files := fs.Args()
	if len(files) == 0 {
		var err error
		if files, err = gitGoFiles(); err != nil {
			fmt.Fprintln(stderr, "funclen:", err)
			return 2
		}
	}
	allow, err := readAllow(*allowPath)
	if err != nil {
		fmt.Fprintln(stderr, "funclen:", err)
		return 2
	}
	long, err := LongFuncs(files, *limit)
	if err != nil {
		fmt.Fprintln(stderr, "funclen:", err)
		return 2
	}
	return report(long, allow, *limit, stdout, stderr)
}

// report prints every long function and returns 1 when one is not allowed or an allowed one is
// no longer long.
func report(long []Func, allow map[string]bool, limit int, stdout, stderr io.Writer) int {
	code := 0
	seen := map[string]bool{}
	for _, f := range long {
		seen[f.key()] = true
		if allow[f.key()] {
			fmt.Fprintf(stdout, "%s:%d: %s is %d lines (over %d; allowed for now)\n", f.Path, f.Line, f.Name, f.Lines, limit)
			continue
		}
		fmt.Fprintf(stderr, "%s:%d: %s is %d lines, over %d: split it\n", f.Path, f.Line, f.Name, f.Lines, limit)
		code = 1
	}
	var stale []string
	for k := range allow {
		if !seen[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	for _, k := range stale {
		fmt.Fprintf(stderr, "%s is in the allow file but not over %d lines: remove it from the file\n", k, limit)
		code = 1
	}
	return code
}

// LongFuncs returns the functions over limit lines in the production files among files, in
// file and line order.
func LongFuncs(files []string, limit int) ([]Func, error) {
	var long []Func
	for _, path := range files {
		if !isProduction(path) {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parse: %w", err)
		}
		if ast.IsGenerated(f) {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start, end := fset.Position(fd.Type.Func).Line, fset.Position(fd.Body.Rbrace).Line
			if n := end - start + 1; n > limit {
				long = append(long, Func{Path: path, Name: funcName(fd), Line: start, Lines: n})
			}
		}
	}
	return long, nil
}

// isProduction reports whether path is production code: a .go file, not a test, and outside
// the directories whose files are test code by role, not only by name.
func isProduction(path string) bool {
	if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
		return false
	}
	slash := filepath.ToSlash(path)
	for _, dir := range []string{"internal/testing/", "e2e/"} {
		if strings.HasPrefix(slash, dir) {
			return false
		}
	}
	return true
}

// funcName is "name" for a function and "Recv.name" for a method (pointer or not, type
// parameters dropped).
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

func gitGoFiles() ([]string, error) {
	out, err := exec.Command("git", "ls-files", "*.go").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	return strings.Fields(string(out)), nil
}

// readAllow reads the allow file: one "path name" a line; blank lines and # comments skipped.
func readAllow(path string) (map[string]bool, error) {
	allow := map[string]bool{}
	if path == "" {
		return allow, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("allow file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"path name\", got %q", path, n, line)
		}
		allow[fields[0]+" "+fields[1]] = true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("allow file: %w", err)
	}
	return allow, nil
}

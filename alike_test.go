package main

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The four reconcilers of dnsplane's kinds are built alike, so that a newcomer who reads one
// reads them all: one lifecycle with at most two ways to write the finalizer, one `For`
// predicate (predicates.SpecOrDeletion), one default TTL for endpoints, and external-dns's
// providerSpecific key names spelled once, as pkg/provider's constants.

// kindControllers are the reconcilers of the four kinds.
var kindControllers = []string{"controllers/dnszone", "controllers/dnsendpoint", "controllers/dnsrecord", "controllers/gslb"}

// notYetAlike names what a branch being merged still changes: "file: what" lines the test
// reports without failing, each removed with the change that makes it alike.
var notYetAlike = map[string]bool{}

// goFile is one parsed production Go file.
type goFile struct {
	path string
	fset *token.FileSet
	file *ast.File
}

// productionFiles parses the non-test Go files of the directories, and of every directory below
// them when tree is set.
func productionFiles(t *testing.T, tree bool, dirs ...string) []goFile {
	t.Helper()
	var out []goFile
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != dir && (!tree || d.Name() == "testdata") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			out = append(out, goFile{path: filepath.ToSlash(path), fset: fset, file: f})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func (g goFile) text(n ast.Node) string {
	var b strings.Builder
	if err := printer.Fprint(&b, g.fset, n); err != nil {
		return err.Error()
	}
	return b.String()
}

// alike reports what in a file makes a controller unalike, unless notYetAlike names it.
func alike(t *testing.T, path, what, detail string) {
	t.Helper()
	if notYetAlike[path+": "+what] {
		t.Logf("%s: %s (%s): left to the branch that changes it", path, what, detail)
		return
	}
	t.Errorf("%s: %s: %s", path, what, detail)
}

func TestControllers_AtMostTwoFinalizerWrites(t *testing.T) {
	modes := map[string][]string{}
	for _, f := range productionFiles(t, false, kindControllers...) {
		ast.Inspect(f.file, func(n ast.Node) bool {
			if kv, ok := n.(*ast.KeyValueExpr); ok {
				if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "FinalizerWrite" {
					modes[f.text(kv.Value)] = append(modes[f.text(kv.Value)], f.path)
				}
			}
			return true
		})
	}
	if len(modes) == 0 || len(modes) > 2 {
		t.Errorf("the kinds' controllers write their finalizer %d ways, want 1 or 2: %v", len(modes), modes)
	}
}

// builderDirs are where the kinds' controllers are built: DNSEndpoint's and DNSRecord's by
// publish.Controller.
var builderDirs = []string{"controllers/dnszone", "controllers/gslb", "controllers/internal/publish"}

func TestControllers_OneForPredicate(t *testing.T) {
	const want = "builder.WithPredicates(predicates.SpecOrDeletion())"
	seen := 0
	for _, f := range productionFiles(t, false, builderDirs...) {
		ast.Inspect(f.file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "For" || len(call.Args) == 0 {
				return true
			}
			if len(call.Args) < 2 || !strings.HasPrefix(f.text(call.Args[1]), "builder.") {
				return true // a zone writer's For(key, provider), not the builder's
			}
			seen++
			if len(call.Args) != 2 || f.text(call.Args[1]) != want {
				alike(t, f.path, "For predicate", "For("+f.text(call.Args[0])+", ...) has options other than "+want)
			}
			return true
		})
	}
	if seen != len(builderDirs) {
		t.Errorf("found %d For calls in %v, want one each", seen, builderDirs)
	}
	for _, dir := range []string{"controllers/dnsendpoint", "controllers/dnsrecord"} {
		built := false
		for _, f := range productionFiles(t, false, dir) {
			built = built || strings.Contains(f.text(f.file), "publish.Controller(")
		}
		if !built {
			t.Errorf("%s does not build its controller with publish.Controller", dir)
		}
	}
}

func TestControllers_OneDefaultTTL(t *testing.T) {
	var defs []string
	for _, f := range productionFiles(t, true, "apis", "controllers", "pkg", "internal") {
		for _, d := range f.file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || (gd.Tok != token.CONST && gd.Tok != token.VAR) {
				continue
			}
			for _, s := range gd.Specs {
				for _, name := range s.(*ast.ValueSpec).Names {
					if name.Name == "DefaultTTL" {
						defs = append(defs, f.path)
					}
				}
			}
		}
	}
	if len(defs) != 1 {
		t.Errorf("DefaultTTL is declared %d times, want once: %v", len(defs), defs)
	}
}

// TestProviderSpecificKeys_SpelledOnce: external-dns's providerSpecific names ("alias",
// "aws/...") are written as literals only in pkg/provider and its providers; everything else
// uses pkg/provider's constants.
func TestProviderSpecificKeys_SpelledOnce(t *testing.T) {
	for _, f := range productionFiles(t, true, "apis", "controllers", "pkg", "internal") {
		if strings.HasPrefix(f.path, "pkg/provider/") || strings.HasPrefix(f.path, "internal/testing/") {
			continue
		}
		ast.Inspect(f.file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && (s == "alias" || strings.HasPrefix(s, "aws/")) {
				alike(t, f.path, "literal "+lit.Value, "use pkg/provider's Key constant")
			}
			return true
		})
	}
}

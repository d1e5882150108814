package main

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/dnsplane/dnsplane"

// TestImports_RunInTheirDirection pins the layering of issue 12 ("Imports in their direction"):
// no package reaches, through its non-test imports (transitively), a package above it.
func TestImports_RunInTheirDirection(t *testing.T) {
	imports := map[string][]string{} // import path -> its non-test imports, read once
	for _, tc := range []struct {
		from      string   // a package directory, relative to the module root
		forbidden []string // import paths it must not reach
	}{
		{"pkg/provider/...", []string{module + "/pkg/registry", module + "/pkg/plan"}},
		{"pkg/zonewriter", []string{module + "/pkg/plan"}},
		{"pkg/zoneview", []string{module + "/pkg/plan", module + "/pkg/zonewriter"}},
		{"pkg/scraper", []string{module + "/apis/v1alpha1", "sigs.k8s.io/controller-runtime/pkg/event"}},
		{"controllers/gslb", []string{module + "/controllers/internal/publish"}},
	} {
		for _, dir := range expand(t, tc.from) {
			reached := deps(t, imports, dir)
			for _, f := range tc.forbidden {
				if via, ok := reached[f]; ok {
					t.Errorf("%s reaches %s (imported by %s)", dir, f, via)
				}
			}
		}
	}
}

// expand returns dir, or for "dir/..." dir and every directory below it that holds a non-test
// Go file.
func expand(t *testing.T, dir string) []string {
	t.Helper()
	root, all := strings.CutSuffix(dir, "/...")
	if !all {
		return []string{dir}
	}
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			if dir := filepath.Dir(p); len(out) == 0 || out[len(out)-1] != dir {
				out = append(out, dir)
			}
		}
		return nil
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("expand %s: %v (%d packages)", dir, err, len(out))
	}
	return out
}

// deps returns every import path reached from dir's non-test files, each with a package that
// imports it; the walk follows only this module's packages, reading each once (imports).
func deps(t *testing.T, imports map[string][]string, dir string) map[string]string {
	t.Helper()
	root := module + "/" + filepath.ToSlash(dir)
	out := map[string]string{}
	todo := []string{root}
	seen := map[string]bool{root: true}
	for len(todo) > 0 {
		path := todo[0]
		todo = todo[1:]
		imps, ok := imports[path]
		if !ok {
			pkg, err := build.Import(path, ".", 0)
			if err != nil {
				t.Fatalf("import %s: %v", path, err)
			}
			imps = pkg.Imports
			imports[path] = imps
		}
		for _, imp := range imps {
			if _, ok := out[imp]; !ok {
				out[imp] = path
			}
			if strings.HasPrefix(imp, module+"/") && !seen[imp] {
				seen[imp] = true
				todo = append(todo, imp)
			}
		}
	}
	return out
}

package main

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/dnsplane/dnsplane"

// TestImports_RunInTheirDirection pins the layering of issue 12 ("Imports in their direction"):
// no package reaches, through its non-test imports (transitively), a package above it.
func TestImports_RunInTheirDirection(t *testing.T) {
	for _, tc := range []struct {
		from      string   // a package directory, relative to the module root
		forbidden []string // import paths it must not reach
	}{
		{"pkg/provider/pdns", []string{module + "/pkg/registry", module + "/pkg/plan"}},
		{"pkg/provider", []string{module + "/pkg/registry"}},
		{"pkg/zonewriter", []string{module + "/pkg/plan"}},
		{"pkg/zoneview", []string{module + "/pkg/plan", module + "/pkg/zonewriter"}},
		{"pkg/scraper", []string{module + "/apis/v1alpha1", "sigs.k8s.io/controller-runtime/pkg/event"}},
		{"controllers/gslb", []string{module + "/controllers/internal/publish"}},
	} {
		reached := deps(t, tc.from)
		for _, f := range tc.forbidden {
			if via, ok := reached[f]; ok {
				t.Errorf("%s reaches %s (imported by %s)", tc.from, f, via)
			}
		}
	}
}

// deps returns every import path reached from dir's non-test files, each with a package that
// imports it; the walk follows only this module's packages.
func deps(t *testing.T, dir string) map[string]string {
	t.Helper()
	root := module + "/" + filepath.ToSlash(dir)
	out := map[string]string{}
	todo := []string{root}
	seen := map[string]bool{root: true}
	for len(todo) > 0 {
		path := todo[0]
		todo = todo[1:]
		pkg, err := build.Import(path, ".", 0)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		for _, imp := range pkg.Imports {
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

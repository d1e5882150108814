package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/dnsplane/dnsplane"

// cloudSDKs are the import-path prefixes of the cloud SDKs (and Azure's identity library) that
// only the provider implementations pkg/provider/{aws,azure,google} may reach.
var cloudSDKs = []string{
	"github.com/aws", "github.com/Azure", "github.com/AzureAD", "cloud.google.com", "google.golang.org/api",
}

// pureCore is what the pure core (pkg/plan, pkg/registry, pkg/zoneview, pkg/gslb) must not
// reach: a Kubernetes client (client-go, controller-runtime), an HTTP client (net/http, which
// every cloud and PowerDNS API client is built on), anything below pkg/provider (the provider
// implementations, the factory, the guard) or a cloud SDK; like all of pkg/, nothing of
// internal/ or controllers/ either. The core computes; its callers do the I/O. A DNS client
// (miekg/dns and net) is allowed: pkg/gslb's Querier is one, and miekg/dns's types are the
// record vocabulary of pkg/provider.
var pureCore = append([]string{
	"k8s.io/client-go", "sigs.k8s.io/controller-runtime", "net/http", module + "/pkg/provider/",
}, cloudSDKs...)

// TestImports_RunInTheirDirection pins the layering (imports run in
// their direction, and controllers stop at pkg/provider): no package reaches, through its non-test imports
// transitively (go list -deps, third-party and standard packages included), a package it must
// not. A forbidden entry names that package and every package below it; one ending in "/"
// names only the packages below it.
//
// Only non-test imports are checked: the envtest suites (package controllers_test,
// controllers/source) compose the real provider factory as internal/app does, and the tests of
// pkg/ use the helpers of internal/testing.
func TestImports_RunInTheirDirection(t *testing.T) {
	g := importGraph(t)
	for _, tc := range []struct {
		from      string   // a package directory, relative to the module root; "dir/..." for a tree
		forbidden []string // import paths it must not reach
	}{
		{"pkg/provider/...", []string{module + "/pkg/registry", module + "/pkg/plan"}},
		{"pkg/zonewriter", []string{module + "/pkg/plan"}},
		{"pkg/zoneview", []string{module + "/pkg/plan", module + "/pkg/zonewriter"}},
		{"pkg/scraper", []string{module + "/apis/v1alpha1", "sigs.k8s.io/controller-runtime/pkg/event"}},
		{"controllers/gslb", []string{module + "/controllers/internal/publish"}},
		// Controllers stop at pkg/provider: only the composition root (internal/app) builds
		// providers (pkg/provider/factory) and so reaches their implementations and SDKs.
		{"controllers/...", append([]string{module + "/pkg/provider/"}, cloudSDKs...)},
		// pkg/ is the library below the operator.
		{"pkg/...", []string{module + "/internal", module + "/controllers"}},
		{"pkg/plan", pureCore},
		{"pkg/registry", pureCore},
		{"pkg/zoneview", pureCore},
		{"pkg/gslb", pureCore},
		// The health verdicts and the quorum decision are pure too; the prober
		// (pkg/gslb/probe) is their I/O and is not.
		{"pkg/gslb/health", pureCore},
		// The geo rules and their database: no client of any API, only a file.
		{"pkg/geo", pureCore},
	} {
		for _, from := range g.expand(t, tc.from) {
			for _, f := range tc.forbidden {
				if chain := g.reach(from, f); chain != nil {
					t.Errorf("%s reaches %s: %s", strings.TrimPrefix(from, module+"/"), f, strings.Join(chain, " -> "))
				}
			}
		}
	}
}

// graph is the module's non-test import graph: an import path -> its imports.
type graph map[string][]string

// importGraph lists every package the module's packages reach (go list -deps ./...), with its
// non-test imports.
func importGraph(t *testing.T) graph {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps ./...: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -deps ./...: %v", err)
	}
	g := graph{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		g[fields[0]] = fields[1:]
	}
	return g
}

// expand returns the import path of dir, or for "dir/..." those of dir and every package below
// it; it fails the test when there is none.
func (g graph) expand(t *testing.T, dir string) []string {
	t.Helper()
	root, all := strings.CutSuffix(dir, "/...")
	root = module + "/" + root
	var out []string
	for p := range g {
		if p == root || all && strings.HasPrefix(p, root+"/") {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no package %s", dir)
	}
	slices.Sort(out)
	return out
}

// reach returns a shortest import chain from the package from to one that forbidden names
// (itself and the packages below it; with a trailing "/", only those below), or nil.
func (g graph) reach(from, forbidden string) []string {
	below := strings.TrimSuffix(forbidden, "/") + "/"
	parent := map[string]string{from: ""}
	for todo := []string{from}; len(todo) > 0; todo = todo[1:] {
		p := todo[0]
		if p != from && (p == forbidden || strings.HasPrefix(p, below)) {
			var chain []string
			for ; p != ""; p = parent[p] {
				chain = append(chain, strings.TrimPrefix(p, module+"/"))
			}
			slices.Reverse(chain)
			return chain
		}
		for _, imp := range g[p] {
			if _, seen := parent[imp]; !seen {
				parent[imp] = p
				todo = append(todo, imp)
			}
		}
	}
	return nil
}

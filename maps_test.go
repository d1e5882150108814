package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The maps a newcomer reads first name every package and every make target, and these tests
// keep them true: a package or target added without its line fails them.
//
// Every package `go list ./...` lists is checked (each has non-test Go files): the operator's,
// the test toolkit under internal/testing, the envtest suites' packages and the tools under
// hack/. Nothing is left out; the tools in their own Go modules (hack/acme-e2e,
// hack/rfc2136-solver, hack/webhook-server, hack/helm) are not packages of this module and are
// named with hack/.

// packageDirs returns the directory of every package of the module relative to its root ("."
// for the root package), sorted.
func packageDirs(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list ./...: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list ./...: %v", err)
	}
	var dirs []string
	for _, p := range strings.Fields(string(out)) {
		if p == module {
			dirs = append(dirs, ".")
			continue
		}
		dirs = append(dirs, strings.TrimPrefix(p, module+"/"))
	}
	slices.Sort(dirs)
	return dirs
}

// section returns the lines of the markdown file at path from the heading title (a "## " line)
// to the next heading of that level.
func section(t *testing.T, path, title string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	in := false
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "## ") {
			if in {
				break
			}
			in = line == "## "+title
			continue
		}
		if in {
			lines = append(lines, line)
		}
	}
	if !in {
		t.Fatalf("%s has no section %q", path, title)
	}
	return lines
}

// tableNames reports which package directories the table rows among lines name. A row names
// the directories written as code in its first cell (a trailing "/" dropped; `main.go` names
// the root package), and below each of them, a directory whose path relative to it is written
// as code anywhere in the row: the `pkg/provider` row names pkg/provider/local by `local`.
func tableNames(lines []string) func(dir string) bool {
	type row struct {
		dirs []string
		text string
	}
	var rows []row
	code := regexp.MustCompile("`([^`]+)`") // a markdown code span
	for _, line := range lines {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 3 {
			continue
		}
		r := row{text: line}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			d := strings.TrimSuffix(m[1], "/")
			if d == "main.go" {
				d = "."
			}
			r.dirs = append(r.dirs, d)
		}
		rows = append(rows, r)
	}
	return func(dir string) bool {
		for _, r := range rows {
			for _, d := range r.dirs {
				if d == dir {
					return true
				}
				rel, ok := strings.CutPrefix(dir, d+"/")
				if ok && (strings.Contains(r.text, "`"+rel+"`") || strings.Contains(r.text, "`"+rel+"/`")) {
					return true
				}
			}
		}
		return false
	}
}

func TestREADMELayout_NamesEveryPackage(t *testing.T) {
	named := tableNames(section(t, "README.md", "Layout"))
	for _, dir := range packageDirs(t) {
		if !named(dir) {
			t.Errorf("README.md's Layout does not name package %s: add it to its area's row", dir)
		}
	}
}

func TestArchitecture_NamesEveryPackage(t *testing.T) {
	named := tableNames(section(t, "docs/architecture.md", "Packages"))
	for _, dir := range packageDirs(t) {
		if !named(dir) {
			t.Errorf("docs/architecture.md's Packages does not name package %s: add it to its layer's row", dir)
		}
	}
}

// makeTargets returns the targets of the Makefile's rules, in order, and the ones whose rule
// line has no "## " help text.
func makeTargets(t *testing.T) (targets, undocumented []string) {
	t.Helper()
	raw, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	rule := regexp.MustCompile(`^([a-zA-Z0-9_-]+):([^=]|$)`)
	for _, line := range strings.Split(string(raw), "\n") {
		m := rule.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		targets = append(targets, m[1])
		if _, help, ok := strings.Cut(line, "## "); !ok || strings.TrimSpace(help) == "" {
			undocumented = append(undocumented, m[1])
		}
	}
	return targets, undocumented
}

func TestMakeHelp_ListsEveryTargetOnOneLine(t *testing.T) {
	targets, undocumented := makeTargets(t)
	if len(targets) < 10 {
		t.Fatalf("found %d targets in the Makefile (%v): the rule pattern is wrong", len(targets), targets)
	}
	for _, target := range undocumented {
		t.Errorf("make target %s has no \"## \" help text on its rule line", target)
	}
	out, err := exec.Command("make", "-s", "--no-print-directory", "help").Output()
	if err != nil {
		t.Fatalf("make help: %v", err)
	}
	listed := map[string]int{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			listed[f[0]]++
		}
	}
	for _, target := range targets {
		if listed[target] != 1 {
			t.Errorf("make help lists target %s on %d lines, want 1 with its help text", target, listed[target])
		}
	}
	for _, target := range targets {
		if !slices.ContainsFunc(section(t, "README.md", "Make targets"), func(l string) bool { return strings.Contains(l, "`"+target+"`") }) {
			t.Errorf("README.md's Make targets does not name target %s", target)
		}
	}
}

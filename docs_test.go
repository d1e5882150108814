package main

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// historyRef matches a reference that only makes sense beside the project's issue tracker or
// the diary of its work: "issue", "issues", "stop" or "pass" followed by a number, an
// ordinal from second to tenth followed by "pass", and the possessive of "the issue". Docs and
// comments name the mechanism or the doc section instead (docs/design.md, "Provider budgets");
// history goes to commit messages and docs/bench.md's history table. "first pass" is not
// matched: it is the name of the warm-up's pass over the cached objects at start (pkg/warmup).
// Citations of other projects' issues ("k8gb#1754", "kubernetes/kubernetes#105610") have no
// "issue" word and stay.
var historyRef = regexp.MustCompile(`(?i)\bissues? #?[0-9]+|\bstop [0-9]+|\bpass [0-9]+|\b(second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth) pass\b|\bthe issue's\b`)

// historyRefsAllowedForNow lists files, directories and docs/design.md sections exempt from
// TestDocs_NoIssueStopOrPassReferences while they are being rewritten elsewhere; it is empty, so
// the test holds for the whole tree. An entry is a path prefix, or "docs/design.md#" followed by
// the start of a section's heading (the section and its subsections).
var historyRefsAllowedForNow = []string{}

// TestDocs_NoIssueStopOrPassReferences: no doc under docs/ and no Go comment (testdata aside)
// names an issue number, a stop or a pass. A reader cannot tell what is true now from what was
// true in a pass, and the numbers mean nothing outside the tracker.
func TestDocs_NoIssueStopOrPassReferences(t *testing.T) {
	var found []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		path = filepath.ToSlash(path)
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if allowedHistoryPath(path) {
			return nil
		}
		switch {
		case strings.HasPrefix(path, "docs/") && strings.HasSuffix(path, ".md"):
			found = append(found, markdownHistoryRefs(t, path)...)
		case strings.HasSuffix(path, ".go"):
			found = append(found, goCommentHistoryRefs(t, path)...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Error(f)
	}
}

func allowedHistoryPath(path string) bool {
	for _, a := range historyRefsAllowedForNow {
		if !strings.Contains(a, "#") && strings.HasPrefix(path, a) {
			return true
		}
	}
	return false
}

// allowedHistorySection reports whether a heading of path opens a section the allow-list names.
func allowedHistorySection(path, heading string) bool {
	for _, a := range historyRefsAllowedForNow {
		file, section, ok := strings.Cut(a, "#")
		if ok && file == path && strings.HasPrefix(heading, section) {
			return true
		}
	}
	return false
}

// markdownHistoryRefs returns path:line: text for each history reference of a Markdown file,
// outside the sections the allow-list names (a section runs to the next heading of its level
// or above; fenced code is not a heading).
func markdownHistoryRefs(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var found []string
	allowedLevel := 0 // the level of the allowed section being read, 0 outside one
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if level := headingLevel(line); level > 0 && !fenced {
			if allowedLevel > 0 && level <= allowedLevel {
				allowedLevel = 0
			}
			if allowedLevel == 0 && allowedHistorySection(path, strings.TrimSpace(line[level:])) {
				allowedLevel = level
			}
		}
		if allowedLevel == 0 && historyRef.MatchString(line) {
			found = append(found, path+":"+strconv.Itoa(n)+": "+historyRef.FindString(line)+": "+strings.TrimSpace(line))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return found
}

func headingLevel(line string) int {
	level := len(line) - len(strings.TrimLeft(line, "#"))
	if level == 0 || level > 6 || !strings.HasPrefix(line[level:], " ") {
		return 0
	}
	return level
}

// goCommentHistoryRefs returns path:line: text for each history reference in a Go file's
// comments; string literals (log messages, test data) are not comments.
func goCommentHistoryRefs(t *testing.T, path string) []string {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, group := range file.Comments {
		for _, c := range group.List {
			for i, line := range strings.Split(c.Text, "\n") {
				if m := historyRef.FindString(line); m != "" {
					n := fset.Position(c.Slash).Line + i
					found = append(found, path+":"+strconv.Itoa(n)+": "+m+": "+strings.TrimSpace(line))
				}
			}
		}
	}
	return found
}

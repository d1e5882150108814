package main

import (
	"fmt"
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
// "issue" word and stay. The words of a reference may be wrapped: historySep stands between
// them.
var historyRef = regexp.MustCompile(`(?i)\bissues?` + historySep + `#?[0-9]+|\bstop` + historySep +
	`[0-9]+|\bpass` + historySep + `[0-9]+|\b(second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)` +
	historySep + `pass\b|\bthe` + historySep + `issue's\b`)

// historySep is what stands between two words of a line or across one line break: blanks, or
// blanks around a single newline followed by a Go line comment's "//". A blank line, or code
// between two comments, ends a reference (the texts searched mark code with NUL bytes).
const historySep = `(?:[ \t]+|[ \t]*\n[ \t]*(?://[ \t]*)?)`

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
// or above; fenced code is not a heading). A reference may run across one line break.
func markdownHistoryRefs(t *testing.T, path string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	allowedLevel := 0 // the level of the allowed section being read, 0 outside one
	fenced := false
	for i, line := range lines {
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
		if allowedLevel > 0 {
			lines[i] = strings.Repeat("\x00", len(line))
		}
	}
	return historyRefsIn(path, string(src), strings.Join(lines, "\n"))
}

// historyRefsIn returns path:line: text for each history reference in searched, a copy of src
// of the same length in which what is not to be searched is NUL bytes (blanks and newlines
// between Go comments stay); a reference is reported
// at the line it starts on, with that line of src.
func historyRefsIn(path, src, searched string) []string {
	var found []string
	srcLines := strings.Split(src, "\n")
	for _, m := range historyRef.FindAllStringIndex(searched, -1) {
		n := strings.Count(searched[:m[0]], "\n")
		ref := strings.Join(strings.Fields(strings.ReplaceAll(searched[m[0]:m[1]], "//", " ")), " ")
		found = append(found, path+":"+strconv.Itoa(n+1)+": "+ref+": "+strings.TrimSpace(srcLines[n]))
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
// comments; string literals (log messages, test data) are not comments. A reference may run
// from one comment into the next line's.
func goCommentHistoryRefs(t *testing.T, path string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	searched := make([]byte, len(src))
	for i, b := range src {
		searched[i] = 0
		if b == '\n' || b == ' ' || b == '\t' {
			searched[i] = b
		}
	}
	for _, group := range file.Comments {
		for _, c := range group.List {
			from, to := fset.Position(c.Pos()).Offset, fset.Position(c.End()).Offset
			copy(searched[from:to], src[from:to])
		}
	}
	return historyRefsIn(path, string(src), string(searched))
}

// TestDocs_HistoryRefsAcrossALineBreak: a history reference wrapped at the end of a line ("issue"
// on one line, its number on the next) is found as if it were on one line, in a Markdown
// paragraph and across a Go comment's "//" continuation, and reported at its first line. A
// blank line or code between the words ends the reference.
func TestDocs_HistoryRefsAcrossALineBreak(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "a.md")
	mdText := "# T\n\nsee issue\n42 for it\n\nthe second\n  pass of it\n\nissue\n\n42 apart\n\nthe first\npass\n"
	goFile := filepath.Join(dir, "a.go")
	goText := "package a\n\n// see issue\n//   #42 here\nvar x = 1 // the\n\t// issue's\n\n/* stop\n 3 */\n\n// issue\nvar y = 42\n"
	for path, text := range map[string]string{md: mdText, goFile: goText} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		got  []string
		want []int // the lines the references start on
	}{
		{markdownHistoryRefs(t, md), []int{3, 6}},
		{goCommentHistoryRefs(t, goFile), []int{3, 5, 8}},
	} {
		var lines []int
		for _, f := range c.got {
			parts := strings.SplitN(f, ":", 3)
			n, err := strconv.Atoi(parts[1])
			if err != nil {
				t.Fatalf("%q: %v", f, err)
			}
			lines = append(lines, n)
		}
		if fmt.Sprint(lines) != fmt.Sprint(c.want) {
			t.Errorf("references start on lines %v, want %v: %q", lines, c.want, c.got)
		}
	}
}

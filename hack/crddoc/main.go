// Command crddoc joins the lines of each paragraph of the descriptions in CRD files that
// controller-gen wrote, in place: `make manifests` runs it on config/crd/bases.
//
// controller-gen keeps a field's Go doc comment as its description line by line (the comments
// are wrapped at 100 columns), and `kubectl explain` keeps those line breaks and wraps each line
// again at its own width (76 columns, less the field's indentation): every line then breaks a
// few words before its end, mid-sentence. A description whose paragraphs are single lines is
// wrapped by kubectl explain alone. Paragraphs stay apart (a blank line), and a line that starts
// a list item ("- ", "* ") or is indented more than the paragraph (code) keeps its line break.
//
// Usage: go run ./hack/crddoc <crd.yaml>...
package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

func main() {
	for _, path := range os.Args[1:] {
		if err := rewrite(path); err != nil {
			fmt.Fprintln(os.Stderr, "crddoc:", err)
			os.Exit(1)
		}
	}
}

// rewrite joins the paragraphs of every block description in the file at path, in place.
func rewrite(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	out := joinDescriptions(string(raw))
	if out == string(raw) {
		return nil
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// blockDescription matches a description written as a literal block scalar ("description: |-").
var blockDescription = regexp.MustCompile(`^( *)description: \|[-+]?$`)

// joinDescriptions returns yamlText with the paragraphs of every block-scalar description
// joined into single lines; everything else is left byte for byte.
func joinDescriptions(yamlText string) string {
	lines := strings.Split(yamlText, "\n")
	var out []string
	for i := 0; i < len(lines); {
		m := blockDescription.FindStringSubmatch(lines[i])
		out = append(out, lines[i])
		i++
		if m == nil {
			continue
		}
		end := i
		for end < len(lines) && (strings.TrimSpace(lines[end]) == "" || indentOf(lines[end]) > len(m[1])) {
			end++
		}
		// Trailing blank lines belong to what follows the block, not to the description.
		for end > i && strings.TrimSpace(lines[end-1]) == "" {
			end--
		}
		out = append(out, joinParagraphs(lines[i:end])...)
		i = end
	}
	return strings.Join(out, "\n")
}

// joinParagraphs joins the block's lines (with their indentation) within each paragraph.
func joinParagraphs(block []string) []string {
	if len(block) == 0 {
		return nil
	}
	indent := indentOf(block[0])
	var out []string
	for _, l := range block {
		text := strings.TrimRight(l, " ")
		if len(out) == 0 || !joins(out[len(out)-1], text, indent) {
			out = append(out, text)
			continue
		}
		out[len(out)-1] += " " + strings.TrimLeft(text, " ")
	}
	return out
}

// joins reports whether line continues prev's paragraph: neither is blank, and line is at the
// paragraph's indentation and does not start a list item.
func joins(prev, line string, indent int) bool {
	if strings.TrimSpace(prev) == "" || strings.TrimSpace(line) == "" || indentOf(line) != indent || indentOf(prev) != indent {
		return false
	}
	rest := line[indent:]
	return !strings.HasPrefix(rest, "- ") && !strings.HasPrefix(rest, "* ")
}

// indentOf is the number of leading spaces of l.
func indentOf(l string) int {
	return len(l) - len(strings.TrimLeft(l, " "))
}

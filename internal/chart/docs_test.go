package chart

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// stepStart matches the first line of a numbered step of a docs list ("6. Try a geo Gslb").
var stepStart = regexp.MustCompile(`^[0-9]+\. `)

// docsBlocks returns the ```sh blocks of step prefix ("6. ") in docs/install.md's section heading
// ("## Try it on kind"), or of the whole section when prefix is "", in order, each with the
// list's indentation removed: the commands a reader copies.
func docsBlocks(t *testing.T, heading, prefix string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []string
	var block []string
	in, step, code, indent := false, prefix == "", false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == heading
		case !in:
		case prefix != "" && !code && stepStart.MatchString(line):
			step = strings.HasPrefix(line, prefix)
		case !step:
		case !code:
			if trimmed := strings.TrimLeft(line, " "); strings.HasPrefix(trimmed, "```sh") {
				code, indent, block = true, line[:len(line)-len(trimmed)], nil
			}
		case strings.TrimSpace(line) == "```":
			code = false
			blocks = append(blocks, strings.Join(block, "\n")+"\n")
		default:
			block = append(block, strings.TrimPrefix(line, indent))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 {
		t.Fatalf("docs/install.md: no ```sh block for step %q in %q", prefix, heading)
	}
	return blocks
}

// docsLine returns the first line of a ```sh block of section heading that contains substr.
func docsLine(t *testing.T, heading, substr string) string {
	t.Helper()
	for _, b := range docsBlocks(t, heading, "") {
		for _, l := range strings.Split(b, "\n") {
			if strings.Contains(l, substr) {
				return l
			}
		}
	}
	t.Fatalf("docs/install.md: no command with %q in a ```sh block of %q", substr, heading)
	return ""
}

// docsShell runs script with bash -euo pipefail in dir, with bin/helm as helm on the PATH,
// helm's homes in a temporary directory and KUBECONFIG=kubeconfig, and returns its output; a
// failure fails t.
func docsShell(t *testing.T, dir, kubeconfig, script string) string {
	t.Helper()
	bin := t.TempDir()
	if err := os.Symlink(helmBin(t), filepath.Join(bin, "helm")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig,
		"HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}

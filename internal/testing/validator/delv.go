package validator

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
)

// DelvAnchors writes a delv trust-anchors file holding the DS records ds (presentation form)
// as static-ds anchors and returns its path. The test is skipped, naming the package, when
// delv is not installed.
func DelvAnchors(t testing.TB, ds []string) string {
	t.Helper()
	hackrun.Need(t, "bind9-dnsutils", "delv")
	var b strings.Builder
	b.WriteString("trust-anchors {\n")
	for _, s := range ds {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		d, ok := rr.(*dns.DS)
		if !ok {
			t.Fatalf("trust anchor %q is not a DS", s)
		}
		fmt.Fprintf(&b, "    %s static-ds %d %d %d \"%s\";\n", d.Hdr.Name, d.KeyTag, d.Algorithm, d.DigestType, d.Digest)
	}
	b.WriteString("};\n")
	path := filepath.Join(t.TempDir(), "anchors.conf")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Delv has delv ask the server at addr the question q (name, then type), validated from the
// anchors file (DelvAnchors) with root as the top of the chain, and returns its output.
func Delv(ctx context.Context, addr, anchors, root string, q ...string) string {
	host, port, _ := net.SplitHostPort(addr)
	args := append([]string{"@" + host, "-p", port, "-a", anchors, "+root=" + root}, q...)
	out, _ := exec.CommandContext(ctx, "delv", args...).CombinedOutput()
	return string(out)
}

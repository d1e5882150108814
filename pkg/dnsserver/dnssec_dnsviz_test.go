package dnsserver

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestDNSSEC_DNSVizFindsTheChainSecure has DNSViz probe, authoritatively, the signed tree: the
// parent "test." (the trust anchor) and a child zone signed with NSEC and one with NSEC3, each on
// its embedded server on loopback; and grok the probe with the DNSKEY of test. as the trusted key.
// The delegations to test. and to the child are SECURE and DNSViz reports no error and no warning
// anywhere; the control, bad.test. (a DS in the parent of keys the child does not have), is BOGUS
// with errors. DNSViz is told every server it asks: test. and the child on 127.0.0.1, and the
// delegation of test. (its NS and DS) from a root that dnsviz serves itself on localhost; the
// servers it asked are checked to be loopback addresses. (dnsviz probe connects a UDP socket to
// a root server's address to learn its own source address; that sends no packet.)
func TestDNSSEC_DNSVizFindsTheChainSecure(t *testing.T) {
	if _, err := exec.LookPath("dnsviz"); err != nil {
		t.Skip("dnsviz is not installed: apt-get install -y dnsviz")
	}
	tree := newSignedTree(t)
	keys := writeDNSVizTrustedKeys(t, tree.parent.Addr(), "test.", tree.anchor)
	for _, zone := range []string{"example.test.", "nsec3.test.", "bad.test."} {
		t.Run(strings.TrimSuffix(zone, "."), func(t *testing.T) {
			grok := dnsvizGrok(t, dnsvizProbe(t, tree, zone), keys, zone)
			want, found := "SECURE", findings(grok, "")
			if zone == "bad.test." {
				want = "BOGUS"
				if len(found) == 0 {
					t.Error("dnsviz grok of bad.test. reports no error")
				}
			} else if len(found) > 0 {
				t.Errorf("dnsviz grok of %s reports:\n%s", zone, strings.Join(found, "\n"))
			}
			for name, want := range map[string]string{"test.": "SECURE", zone: want} {
				if st := delegationStatus(t, grok, name); st != want {
					t.Errorf("dnsviz: the delegation of %s is %q, want %s", name, st, want)
				}
			}
		})
	}
}

// writeDNSVizTrustedKeys writes the DNSKEYs of zone the server at addr answers whose DS is in
// anchor, the trusted keys file dnsviz grok takes, and returns its path.
func writeDNSVizTrustedKeys(t *testing.T, addr, zone string, anchor []dns.RR) string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(zone, dns.TypeDNSKEY)
	var b strings.Builder
	for _, rr := range exchange(t, addr, "tcp", m).Answer {
		k, ok := rr.(*dns.DNSKEY)
		if !ok {
			continue
		}
		for _, a := range anchor {
			ds := a.(*dns.DS)
			if d := k.ToDS(ds.DigestType); d != nil && strings.EqualFold(d.Digest, ds.Digest) {
				b.WriteString(k.String() + "\n")
			}
		}
	}
	if b.Len() == 0 {
		t.Fatalf("no DNSKEY of %s matches the anchor %v", zone, anchor)
	}
	path := filepath.Join(t.TempDir(), "trusted-keys")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// dnsvizProbe runs dnsviz probe, authoritative analysis of zone up to test. (-a): test. is
// delegated (-N, -D: dnsviz serves that root itself on localhost) to the parent server, which
// serves test. (-x), and zone is served by the child server (-x). It checks that every server
// the probe asked is a loopback address and returns the probe's JSON.
func dnsvizProbe(t *testing.T, tree signedTree, zone string) []byte {
	t.Helper()
	dir := t.TempDir()
	ds := filepath.Join(dir, "ds")
	var b strings.Builder
	for _, rr := range tree.anchor {
		b.WriteString(rr.String() + "\n")
	}
	if err := os.WriteFile(ds, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	parent := "ns1.test.=" + tree.parent.Addr()
	out := filepath.Join(dir, "probe.json")
	runDNSViz(t, []string{"probe", "-A", "-a", "test.", "-o", out, "-N", "test.:" + parent, "-D", "test.:" + ds,
		"-x", "test.:" + parent, "-x", zone + ":ns1." + zone + "=" + tree.child.Addr(), zone}, nil)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, server := range probedServers(t, data) {
		if !server.IsLoopback() {
			t.Errorf("dnsviz asked %s, not a loopback address", server)
		}
	}
	return data
}

// dnsvizGrok runs dnsviz grok over the probe, trusting the keys in the file keys, with every
// status, warning and error in the output (-l info), and returns its JSON. -P: the servers have private (loopback)
// addresses on purpose.
func dnsvizGrok(t *testing.T, probe []byte, keys, zone string) map[string]any {
	t.Helper()
	in := filepath.Join(t.TempDir(), "probe.json")
	if err := os.WriteFile(in, probe, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "grok.json")
	runDNSViz(t, []string{"grok", "-P", "-l", "info", "-t", keys, "-r", in, "-o", out, zone}, pygraphvizRelease(t))
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("dnsviz grok output: %v\n%s", err, data)
	}
	return v
}

// pygraphvizShim gives pygraphviz the module "release" that dnsviz grok reads its version from
// when it has trusted keys, and that pygraphviz 1.7 (Debian 12) no longer has
// (github.com/dnsviz/dnsviz/issues/98); with a pygraphviz that has it, the shim does nothing.
const pygraphvizShim = `try:
    import pygraphviz.release
except ImportError:
    import sys, types, pygraphviz
    release = types.ModuleType("pygraphviz.release")
    release.version = pygraphviz.__version__
    pygraphviz.release = release
    sys.modules["pygraphviz.release"] = release
except Exception:
    pass
`

// pygraphvizRelease writes pygraphvizShim as a sitecustomize module and returns the environment
// that has Python load it.
func pygraphvizRelease(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sitecustomize.py"), []byte(pygraphvizShim), 0o600); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "PYTHONPATH="+dir)
}

// runDNSViz runs dnsviz with args in the environment env (nil: this process's) and fails the
// test when it exits non-zero.
func runDNSViz(t *testing.T, args, env []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "dnsviz", args...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dnsviz %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// probedServers returns the addresses of the servers the probe's queries went to: the keys of
// every "responses" object.
func probedServers(t *testing.T, probe []byte) []netip.Addr {
	t.Helper()
	var v any
	if err := json.Unmarshal(probe, &v); err != nil {
		t.Fatalf("dnsviz probe output: %v", err)
	}
	var out []netip.Addr
	walkJSON(v, func(key string, val any) {
		servers, ok := val.(map[string]any)
		if key != "responses" || !ok {
			return
		}
		for s := range servers {
			a, err := netip.ParseAddr(strings.Trim(s, "[]"))
			if err != nil {
				host, _, _ := net.SplitHostPort(s)
				a, err = netip.ParseAddr(host)
			}
			if err != nil {
				t.Errorf("dnsviz probe: a server %q that is no address", s)
				continue
			}
			out = append(out, a)
		}
	})
	if len(out) == 0 {
		t.Fatal("dnsviz probe: no responses from any server")
	}
	return out
}

// delegationStatus returns the status dnsviz grok gives the delegation of name.
func delegationStatus(t *testing.T, grok map[string]any, name string) string {
	t.Helper()
	obj, _ := grok[name].(map[string]any)
	deleg, _ := obj["delegation"].(map[string]any)
	st, _ := deleg["status"].(string)
	if st == "" {
		t.Errorf("dnsviz grok gives no status for the delegation of %s", name)
	}
	return st
}

// findings returns every "errors" and "warnings" entry under v, each with its JSON path.
func findings(v any, path string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if k == "errors" || k == "warnings" {
				b, _ := json.Marshal(val)
				out = append(out, path+"/"+k+": "+string(b))
				continue
			}
			out = append(out, findings(val, path+"/"+k)...)
		}
	case []any:
		for _, val := range x {
			out = append(out, findings(val, path+"[]")...)
		}
	}
	return out
}

// walkJSON calls f with every key and value of every object under v.
func walkJSON(v any, f func(key string, val any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			f(k, val)
			walkJSON(val, f)
		}
	case []any:
		for _, val := range x {
			walkJSON(val, f)
		}
	}
}

//go:build e2e

package e2e

// Day 2 on kind: docs/install.md's kind section and its Upgrade section run
// word by word, then the dns Service re-created and switched between ClusterIP and NodePort as
// docs/install.md's "Changing the dns Service" says, with the zones' glue and both protocols
// checked after each step. The file sorts after kind_test.go, so its test runs after
// TestKindHelmUninstall, which leaves cluster 2 without a release and without objects: a new
// user's cluster.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// docsStep returns the first ```sh block of step prefix ("2. ") in docs/install.md's section
// heading ("## Try it on kind"), or the first block of the section when prefix is "", with the
// list's indentation removed: the commands a reader copies.
func docsStep(t *testing.T, heading, prefix string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var block []string
	in, step, code := false, prefix == "", false
	indent := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == heading
			continue
		case !in:
			continue
		case !step:
			step = strings.HasPrefix(line, prefix)
			continue
		case !code:
			if trimmed := strings.TrimLeft(line, " "); strings.HasPrefix(trimmed, "```sh") {
				code, indent = true, line[:len(line)-len(trimmed)]
			}
			continue
		case strings.TrimSpace(line) == "```":
			return strings.Join(block, "\n") + "\n"
		}
		block = append(block, strings.TrimPrefix(line, indent))
	}
	t.Fatalf("docs/install.md: no ```sh block for step %q in %q", prefix, heading)
	return ""
}

// docsShell runs script with bash -euo pipefail in dir, with env added and cluster c's
// kubeconfig, and returns its output and error.
func docsShell(c *cluster, dir, script string, env ...string) (string, error) {
	cx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+c.kcfg), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// docsWorkdir is a directory that looks like the repository root to the docs' commands (bin/,
// charts/, config/ linked, .dnsplane/ its own), so that what they write stays out of the tree.
func docsWorkdir(t *testing.T) string {
	t.Helper()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range []string{"bin", "charts", "config"} {
		if err := os.Symlink(filepath.Join(repo, d), filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, ".dnsplane"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// bothProtocols checks that addr answers name A with want over UDP and over TCP.
func bothProtocols(addr, name string, want []string) error {
	want = slices.Clone(want)
	slices.Sort(want)
	for _, proto := range []string{"udp", "tcp"} {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), dns.TypeA)
		r, _, err := (&dns.Client{Net: proto, Timeout: 2 * time.Second}).Exchange(m, addr)
		if err != nil {
			return fmt.Errorf("%s over %s: %w", name, proto, err)
		}
		var got []string
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok {
				got = append(got, a.A.String())
			}
		}
		slices.Sort(got)
		if r.Rcode != dns.RcodeSuccess || !slices.Equal(got, want) {
			return fmt.Errorf("%s over %s: %s %v, want %v", name, proto, dns.RcodeToString[r.Rcode], got, want)
		}
	}
	return nil
}

// inPod asks the dns Service from a Pod (dnsq, over UDP and over TCP) for name A and returns
// the answers' addresses, sorted; a failed query is an error.
func inPod(t *testing.T, c *cluster, svc, name string) ([]string, error) {
	t.Helper()
	var all []string
	for i, flags := range [][]string{nil, {"-tcp"}} {
		pod := fmt.Sprintf("dnsq-%d-%d", time.Now().UnixNano()%1000000, i)
		args := append([]string{"run", pod, "--restart=Never", "--image=dnsplane.local/dnsq:dev", "--image-pull-policy=Never", "--"}, flags...)
		args = append(args, svc+"."+os.Getenv("E2E_KIND_NAMESPACE")+".svc.cluster.local", name, "A")
		kubectl(t, c, args...)
		out, err := kindTry(c, os.Getenv("E2E_KIND_KUBECTL"), "-n", os.Getenv("E2E_KIND_NAMESPACE"),
			"wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/"+pod, "--timeout=90s")
		logs, _ := kindTry(c, os.Getenv("E2E_KIND_KUBECTL"), "-n", os.Getenv("E2E_KIND_NAMESPACE"), "logs", pod)
		_, _ = kindTry(c, os.Getenv("E2E_KIND_KUBECTL"), "-n", os.Getenv("E2E_KIND_NAMESPACE"), "delete", "pod", pod, "--wait=false")
		if err != nil {
			return nil, fmt.Errorf("dnsq %v %s: %v: %s %s", flags, name, err, out, logs)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
			if f := strings.Fields(l); len(f) == 5 && f[3] == "A" {
				got = append(got, f[4])
			}
		}
		slices.Sort(got)
		if i > 0 && !slices.Equal(got, all) {
			return nil, fmt.Errorf("dnsq %s: UDP answered %v, TCP %v", name, all, got)
		}
		all = got
	}
	return all, nil
}

// kindTry runs a command against cluster c and returns its output and error.
func kindTry(c *cluster, name string, args ...string) (string, error) {
	cx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cx, name, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kcfg, "E2E_GEO="+c.geo)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestKindDocsKindSectionUpgradeAndServiceSwitches, in cluster 2:
//  1. docs/install.md, "Try it on kind", steps 2 (the values file and the install), 3 (the
//     samples) and 5 (the upgrade with the same file), as a reader runs them: after each, UDP and
//     TCP answer on the node port, and an AXFR through it succeeds (--local-allow-transfer);
//  2. the dns Service deleted and created again by `helm upgrade -f` (another cluster IP): every
//     zone's glue follows, UDP and TCP answer on the node port;
//  3. switched to ClusterIP with the values file (in place): the glue is the same cluster IP, and
//     UDP and TCP answer from a Pod;
//  4. back to NodePort 30053 with the values file: the chart refuses the in-place switch
//     (kubernetes/kubernetes#105610), and after the documented `kubectl delete service` the
//     upgrade gives both protocols node port 30053; the glue follows the new cluster IP;
//  5. ClusterIP again: in place, answered from a Pod.
func TestKindDocsKindSectionUpgradeAndServiceSwitches(t *testing.T) {
	kindOnly(t)
	onFailure(t)
	c := suite.clusters[1]
	ns, rel := os.Getenv("E2E_KIND_NAMESPACE"), os.Getenv("E2E_KIND_RELEASE")
	svcName := rel + "-dns"
	nodeIP, nodePort, err := net.SplitHostPort(c.dnsAddr)
	if err != nil || nodePort != "30053" {
		t.Fatalf("cluster %s's dns address %q: want <node IP>:30053, the docs' node port (%v)", c.geo, c.dnsAddr, err)
	}
	// A new user's cluster: no release (TestKindHelmUninstall uninstalled it; if it did not run,
	// uninstall here as docs/install.md says).
	if _, err := kindTry(c, os.Getenv("E2E_KIND_HELM"), "status", rel, "-n", ns); err == nil {
		kindCmd(t, c, os.Getenv("E2E_KIND_KUBECTL"), "delete", "gslbs,dnsrecords,dnsendpoints", "--all", "--all-namespaces", "--timeout=180s")
		kindCmd(t, c, os.Getenv("E2E_KIND_KUBECTL"), "delete", "dnszones", "--all", "--all-namespaces", "--timeout=180s")
		kindCmd(t, c, os.Getenv("E2E_KIND_HELM"), "uninstall", rel, "-n", ns, "--wait")
	}
	dir := docsWorkdir(t)
	env := []string{"TAG=" + os.Getenv("E2E_KIND_TAG"), "NODE_IP=" + nodeIP}
	run := func(what, script string) string {
		t.Helper()
		start := time.Now()
		out, err := docsShell(c, dir, script, env...)
		if err != nil {
			t.Fatalf("%s:\n%s\nfailed: %v\n%s", what, script, err, out)
		}
		t.Logf("%s: %s", what, time.Since(start).Round(100*time.Millisecond))
		return out
	}
	const kind = "## Try it on kind"
	run("docs kind step 2 (values file, helm install)", docsStep(t, kind, "2. "))
	run("docs kind step 3 (the samples)", docsStep(t, kind, "3. "))
	zones := []string{"example.test", "c1.example.test"}
	www, wwwTargets := "www.c1.example.test", []string{"192.0.2.1", "192.0.2.2"}
	answers := func(step string) {
		t.Helper()
		eventually(t, 90*time.Second, step+": UDP and TCP on the node port", func() error { return bothProtocols(c.dnsAddr, www, wwwTargets) })
	}
	answers("after the install")
	if _, err := axfr(c.dnsAddr, "c1.example.test"); err != nil {
		t.Errorf("AXFR c1.example.test through the node port, with the docs' --local-allow-transfer: %v", err)
	}
	values := filepath.Join(dir, ".dnsplane", "values.yaml")
	raw, err := os.ReadFile(values)
	if err != nil {
		t.Fatalf("the docs' kind section wrote no values file: %v", err)
	}
	run("docs kind step 5 (helm upgrade -f the values file)", docsStep(t, kind, "5. "))
	answers("after the documented upgrade")

	clusterIP := func() string {
		t.Helper()
		return strings.TrimSpace(kubectl(t, c, "get", "service", svcName, "-o", "jsonpath={.spec.clusterIP}"))
	}
	ports := func() string {
		t.Helper()
		return strings.TrimSpace(kubectl(t, c, "get", "service", svcName, "-o", `jsonpath={range .spec.ports[*]}{.port}:{.nodePort}/{.protocol} {end}`))
	}
	glueAt := func(addr, zone string) ([]string, error) { return answerA(addr, "ns1."+zone) }
	glueFollows := func(step, ip string, ask func(zone string) ([]string, error)) {
		t.Helper()
		took := eventually(t, 2*time.Minute, step+": every zone's glue is "+ip, func() error {
			for _, z := range zones {
				got, err := ask(z)
				if err != nil {
					return err
				}
				if !slices.Equal(got, []string{ip}) {
					return fmt.Errorf("ns1.%s A %v", z, got)
				}
			}
			return nil
		})
		t.Logf("%s: every zone's glue is %s, %s after the step", step, ip, took.Round(100*time.Millisecond))
	}
	viaNodePort := func(z string) ([]string, error) { return glueAt(c.dnsAddr, z) }
	viaPod := func(z string) ([]string, error) { return inPod(t, c, svcName, "ns1."+z) }
	upgrade := func() (string, error) {
		return kindTry(c, os.Getenv("E2E_KIND_HELM"), "upgrade", rel, filepath.Join(dir, "charts", "dnsplane"), "-n", ns, "-f", values, "--wait", "--timeout", "300s")
	}
	mustUpgrade := func(step string) {
		t.Helper()
		if out, err := upgrade(); err != nil {
			t.Fatalf("%s: helm upgrade -f %s: %v\n%s", step, values, err, out)
		}
	}
	deleteService := func() {
		t.Helper()
		kubectl(t, c, "delete", "service", svcName, "--wait=true")
	}
	setType := func(typ string) {
		t.Helper()
		text := string(raw)
		if typ == "ClusterIP" {
			text = strings.Replace(text, "service: {type: NodePort, nodePort: 30053}", "service: {type: ClusterIP}", 1)
			if text == string(raw) {
				t.Fatalf("the docs' values file has no line %q to change:\n%s", "service: {type: NodePort, nodePort: 30053}", raw)
			}
		}
		if err := os.WriteFile(values, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ip0 := clusterIP()
	glueFollows("after the install", ip0, viaNodePort)

	// 2. Deleted and created again: another cluster IP.
	deleteService()
	mustUpgrade("re-create the dns Service")
	ip1 := clusterIP()
	if ip1 == ip0 {
		t.Logf("the re-created Service got the same cluster IP %s by chance", ip1)
	}
	answers("the re-created Service")
	glueFollows("the re-created Service", ip1, viaNodePort)

	// 3. To ClusterIP, in place.
	setType("ClusterIP")
	mustUpgrade("NodePort to ClusterIP")
	if got := ports(); got != "53:/UDP 53:/TCP" && got != "53:0/UDP 53:0/TCP" {
		t.Errorf("after NodePort to ClusterIP: ports %q, want no node ports", got)
	}
	if ip := clusterIP(); ip != ip1 {
		t.Errorf("NodePort to ClusterIP changed the cluster IP %s to %s", ip1, ip)
	}
	glueFollows("ClusterIP", ip1, viaPod)
	if got, err := inPod(t, c, svcName, www); err != nil || !slices.Equal(got, wwwTargets) {
		t.Errorf("ClusterIP: %s from a Pod: %v %v, want %v over UDP and TCP", www, got, err, wwwTargets)
	}

	// 4. Back to NodePort 30053: refused in place, done after deleting the Service.
	setType("NodePort")
	out, err := upgrade()
	if err == nil || !strings.Contains(out, "kubernetes/kubernetes#105610") {
		t.Fatalf("ClusterIP to NodePort 30053 in place: %v\n%s\nwant the chart's refusal naming kubernetes#105610", err, out)
	}
	deleteService()
	mustUpgrade("ClusterIP to NodePort after deleting the Service")
	if got := ports(); got != "53:30053/UDP 53:30053/TCP" {
		t.Errorf("after ClusterIP to NodePort: ports %q, want 53:30053/UDP 53:30053/TCP", got)
	}
	ip2 := clusterIP()
	answers("NodePort again")
	glueFollows("NodePort again", ip2, viaNodePort)

	// 5. ClusterIP again.
	setType("ClusterIP")
	mustUpgrade("NodePort to ClusterIP, again")
	glueFollows("ClusterIP again", ip2, viaPod)
	if _, err := query(c.dnsAddr, www, dns.TypeA); err == nil {
		t.Errorf("the node port still answers after the switch to ClusterIP")
	}
	t.Logf("cluster IPs: installed %s, re-created %s, after the switch back to NodePort %s", ip0, ip1, ip2)
}

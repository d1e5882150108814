package testrun

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Envtest starts a real etcd and kube-apiserver from root/bin (hack/envtest-bins.sh puts them
// there) with dnsplane's CRDs from root/config/crd/bases installed, and stops them when the test
// ends; root is the repository's root, relative to the test's package directory. It fails the
// test when they cannot start.
func Envtest(t testing.TB, root string) *rest.Config {
	t.Helper()
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: filepath.Join(root, "bin"),
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest (run hack/envtest-bins.sh first): %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return cfg
}

// Eventually calls check every 100 ms until it returns nil, and fails the test, naming what and
// check's last error, when the deadline passes first: timeout, raised to HangTimeout when it is
// shorter, so that a wait catches hangs and never a slow machine. A check that takes longer than
// timeout is logged (the figure, never a failure).
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(max(timeout, HangTimeout))
	for {
		err := check()
		if err == nil {
			if took := time.Since(start); took > timeout {
				t.Logf("%s: after %s (expected within %s)", what, took.Round(time.Millisecond), timeout)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, max(timeout, HangTimeout), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SourceCRDs returns the CRD files of the kinds the sources (--source) read that dnsplane does
// not define: the Gateway API's standard channel of the module version in go.mod (Gateway,
// HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute; v1.6 serves every route kind at v1 there)
// and external-dns's DNSEndpoint (a copy of its CRD in controllers/source/testdata). root is the
// repository's root, relative to the test's package directory; it fails the test when the
// module's directory cannot be found (go list -m).
func SourceCRDs(t testing.TB, root string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("find the Gateway API module (go list -m): %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard")
	files := []string{filepath.Join(root, "controllers", "source", "testdata", "externaldns.k8s.io_dnsendpoints.yaml")}
	for _, kind := range []string{"gateways", "httproutes", "grpcroutes", "tlsroutes", "tcproutes", "udproutes"} {
		files = append(files, filepath.Join(dir, "gateway.networking.k8s.io_"+kind+".yaml"))
	}
	return files
}

// InstallCRDs installs the CRD files into the API server of cfg and waits until they are
// served; it fails the test when they cannot be.
func InstallCRDs(t testing.TB, cfg *rest.Config, files []string) {
	t.Helper()
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: files, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("install CRDs: %v", err)
	}
}

package testrun

import (
	"path/filepath"
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
// check's last error, when timeout passes first.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

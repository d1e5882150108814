// Package envtest runs a real etcd and kube-apiserver (controller-runtime's envtest) for
// dnsplane's tests, from the binaries hack/envtest-bins.sh puts in the repository's bin/, with
// dnsplane's CRDs installed: one call for a TestMain (Run), one for a single test (Start,
// StartWith), and the CRDs of the kinds the sources read (SourceCRDs). It follows Cluster API's
// internal/test/envtest. It is imported by tests only and owns no production code.
package envtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options say what a control plane starts with; the zero value installs dnsplane's CRDs
// (root/config/crd/bases) and nothing else.
type Options struct {
	// CRDs, when set, are installed in place of dnsplane's CRD files (older or rendered CRDs).
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// NoCRDs starts the control plane with no CRD installed (what helm installs is the test).
	NoCRDs bool
	// SourceCRDs also installs SourceCRDs: the Gateway API's and external-dns's CRDs.
	SourceCRDs bool
}

// Env is a running control plane.
type Env struct {
	// Config is an admin's (system:masters) configuration of the API server.
	Config *rest.Config
	env    *envtest.Environment
}

// Launch starts etcd and kube-apiserver from root/bin with o's CRDs and waits until the CRDs
// are served; root is the repository's root, relative to the test's package directory. The
// caller stops it (Stop). The start has a hang deadline of two minutes (a loaded machine may take
// more than envtest's 20 s). Errors name hack/envtest-bins.sh when the binaries cannot start.
func Launch(root string, o Options) (*Env, error) {
	env := &envtest.Environment{
		BinaryAssetsDirectory:    filepath.Join(root, "bin"),
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	switch {
	case o.CRDs != nil:
		env.CRDs = o.CRDs
	case !o.NoCRDs:
		env.CRDDirectoryPaths = []string{filepath.Join(root, "config", "crd", "bases")}
	}
	if o.SourceCRDs {
		files, err := sourceCRDs(root)
		if err != nil {
			return nil, err
		}
		env.CRDDirectoryPaths = append(env.CRDDirectoryPaths, files...)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest (run hack/envtest-bins.sh first): %w", err)
	}
	return &Env{Config: cfg, env: env}, nil
}

// Stop stops the API server and etcd.
func (e *Env) Stop() error { return e.env.Stop() }

// AddAdmin adds a user named name in group system:masters and returns its configuration and a
// kubeconfig file's content for it (for a process such as helm).
func (e *Env) AddAdmin(name string) (*rest.Config, []byte, error) {
	u, err := e.env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("add user %s: %w", name, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig of %s: %w", name, err)
	}
	return u.Config(), kc, nil
}

// Start is StartWith(t, root, Options{}).Config: a control plane with dnsplane's CRDs for the
// length of the test.
func Start(t testing.TB, root string) *rest.Config {
	t.Helper()
	return StartWith(t, root, Options{}).Config
}

// StartWith launches a control plane with o (Launch) and stops it when the test ends. It fails
// the test when it cannot start.
func StartWith(t testing.TB, root string, o Options) *Env {
	t.Helper()
	e, err := Launch(root, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	return e
}

// Run is the one call of a TestMain whose tests share a control plane: it launches one with o
// (Launch), calls setup with its configuration, runs the tests, then calls setup's teardown (when
// not nil) and stops the control plane. It returns m.Run's code for os.Exit, or 1 after printing
// why to standard error when the control plane or setup fails, or when the tests passed and the
// teardown returns an error (a suite-wide check, such as the secret scan, failed).
func Run(m *testing.M, root string, o Options, setup func(cfg *rest.Config) (teardown func() error, err error)) (code int) {
	e, err := Launch(root, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop envtest:", err)
		}
	}()
	teardown, err := setup(e.Config)
	if teardown != nil {
		defer func() {
			if err := teardown(); err != nil {
				fmt.Fprintln(os.Stderr, "tear down the suite:", err)
				if code == 0 {
					code = 1
				}
			}
		}()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "set up the suite:", err)
		return 1
	}
	return m.Run()
}

// SourceCRDs returns the CRD files of the kinds the sources (--source) read that dnsplane does
// not define: the Gateway API's standard channel of the module version in go.mod (Gateway,
// HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute; v1.6 serves every route kind at v1 there)
// and external-dns's DNSEndpoint (a copy of its CRD in controllers/source/testdata). root is the
// repository's root, relative to the test's package directory; it fails the test when the
// module's directory cannot be found (go list -m).
func SourceCRDs(t testing.TB, root string) []string {
	t.Helper()
	files, err := sourceCRDs(root)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sourceCRDs(root string) ([]string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			err = fmt.Errorf("%w: %s", err, exit.Stderr)
		}
		return nil, fmt.Errorf("find the Gateway API module (go list -m): %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard")
	files := []string{filepath.Join(root, "controllers", "source", "testdata", "externaldns.k8s.io_dnsendpoints.yaml")}
	for _, kind := range []string{"gateways", "httproutes", "grpcroutes", "tlsroutes", "tcproutes", "udproutes"} {
		files = append(files, filepath.Join(dir, "gateway.networking.k8s.io_"+kind+".yaml"))
	}
	return files, nil
}

// InstallCRDs installs the CRD files into the API server of cfg and waits until they are
// served; it fails the test when they cannot be.
func InstallCRDs(t testing.TB, cfg *rest.Config, files []string) {
	t.Helper()
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: files, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("install CRDs: %v", err)
	}
}

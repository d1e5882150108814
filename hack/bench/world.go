package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
)

// world is one run's environment: a control plane, a PowerDNS with the 10 zones, and the
// counting proxy in front of its API. close stops everything it started, by PID, in reverse
// order.
type world struct {
	dir        string
	log        logr.Logger
	env        *envtest.Environment
	rest       *rest.Config
	kubeconfig string
	dyn        dynamic.Interface
	pdns       pdnsServer
	pdnsProc   *hackrun.PDNS
	proxy      *countingProxy
	proxyURL   string
	// secretAPIURL, when set, is the PowerDNS API URL dnsplane's Secret names instead of
	// proxyURL (the fault suite's faultproxy).
	secretAPIURL string
	// webhook, with BENCH_DNSPLANE_PROVIDER=webhook, counts dnsplane's requests to the webhook
	// server (startWebhook); nil otherwise.
	webhook *countingProxy
	// root and provider are config's, for setupDNSPlane.
	root, provider string
	cleanups       []func() error
}

// pdnsServer is a PowerDNS started by hack/pdns.sh in dir.
type pdnsServer struct {
	dir, apiURL, dnsAddr, key string
}

// newWorld starts the environment of one run under dir. On error, what it started is stopped.
func newWorld(ctx context.Context, log logr.Logger, c config, dir string) (_ *world, err error) {
	w := &world{dir: dir, log: log, root: c.root, provider: c.dnsplaneProvider}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	if err := w.startControlPlane(c); err != nil {
		return nil, err
	}
	if err := w.startPDNS(ctx, c); err != nil {
		return nil, err
	}
	if err := w.createZones(ctx); err != nil {
		return nil, err
	}
	if err := w.startProxy(); err != nil {
		return nil, err
	}
	return w, nil
}

// close stops what the world started, last first, and returns their errors joined.
func (w *world) close() error {
	var errs []error
	for i := len(w.cleanups) - 1; i >= 0; i-- {
		errs = append(errs, w.cleanups[i]())
	}
	w.cleanups = nil
	return errors.Join(errs...)
}

// startControlPlane starts etcd and kube-apiserver from c.bin with dnsplane's CRDs and
// external-dns' DNSEndpoint CRD, and writes an admin kubeconfig for the controllers.
func (w *world) startControlPlane(c config) error {
	paths := []string{filepath.Join(c.root, "config", "crd", "bases")}
	if crd := filepath.Join(c.bin, "external-dns-crd.yaml"); fileExists(crd) {
		paths = append(paths, crd)
	}
	w.env = &envtest.Environment{CRDDirectoryPaths: paths, ErrorIfCRDPathMissing: true, BinaryAssetsDirectory: c.bin,
		// Generous: on a loaded 2-core machine kube-apiserver may take more than envtest's 20 s.
		ControlPlaneStartTimeout: 2 * time.Minute, ControlPlaneStopTimeout: time.Minute}
	// Directories of our own, so that etcd's data and kube-apiserver's serving certificate
	// survive a restart (restartAPIServer, restartEtcd); envtest removes only the directories it
	// made itself. Both keep their ports across a restart.
	apiDir, etcdDir := filepath.Join(w.dir, "kube-apiserver"), filepath.Join(w.dir, "etcd")
	for _, d := range []string{apiDir, etcdDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	// A graceful stop of kube-apiserver waits for its watches to end: minutes on a loaded
	// machine, so its bound is generous (a hang deadline, not a figure).
	w.env.ControlPlane.APIServer = &envtest.APIServer{CertDir: apiDir, StartTimeout: 2 * time.Minute, StopTimeout: 3 * time.Minute}
	w.env.ControlPlane.Etcd = &envtest.Etcd{DataDir: etcdDir, StartTimeout: 2 * time.Minute, StopTimeout: time.Minute}
	if _, err := w.env.Start(); err != nil {
		return fmt.Errorf("start control plane (etcd, kube-apiserver from %s): %w", c.bin, err)
	}
	w.cleanups = append(w.cleanups, func() error {
		if err := w.env.Stop(); err != nil {
			return fmt.Errorf("stop control plane: %w", err)
		}
		return nil
	})
	admin, err := w.env.AddUser(envtest.User{Name: "bench-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("control plane admin user: %w", err)
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		return fmt.Errorf("admin kubeconfig: %w", err)
	}
	w.kubeconfig = filepath.Join(w.dir, "kubeconfig")
	if err := os.WriteFile(w.kubeconfig, kc, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	w.rest = admin.Config()
	w.rest.QPS, w.rest.Burst = 5000, 5000 // the driver's own client is never the bottleneck
	if w.dyn, err = dynamic.NewForConfig(w.rest); err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	return nil
}

// restartAPIServer kills kube-apiserver (SIGKILL: a graceful stop waits for the manager's
// watches and outlasted a minute here) and starts it again on its port, with its certificates,
// against the same etcd; it returns once /healthz answers again.
func (w *world) restartAPIServer() error {
	as := w.env.ControlPlane.APIServer
	if err := killByArg("--cert-dir=" + as.CertDir); err != nil {
		return fmt.Errorf("kill kube-apiserver: %w", err)
	}
	if err := as.Stop(); err != nil {
		return fmt.Errorf("stop kube-apiserver: %w", err)
	}
	if err := as.Start(); err != nil {
		return fmt.Errorf("start kube-apiserver again: %w", err)
	}
	return nil
}

// killByArg SIGKILLs the one process of this user whose command line holds arg, as an argument
// of its own. It fails when there is none, or more than one.
func killByArg(arg string) error {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return err
	}
	var pids []int
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !slices.Contains(strings.Split(string(b), "\x00"), arg) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(d))
		if err == nil {
			pids = append(pids, pid)
		}
	}
	if len(pids) != 1 {
		return fmt.Errorf("%d processes hold the argument %s, want 1", len(pids), arg)
	}
	return syscall.Kill(pids[0], syscall.SIGKILL)
}

// restartEtcd stops etcd (SIGTERM) under the running kube-apiserver and starts it again on its
// client port and data directory; it returns once etcd answers again.
func (w *world) restartEtcd() error {
	e := w.env.ControlPlane.Etcd
	if err := e.Stop(); err != nil {
		return fmt.Errorf("stop etcd: %w", err)
	}
	if err := e.Start(); err != nil {
		return fmt.Errorf("start etcd again: %w", err)
	}
	return nil
}

// startPDNS starts PowerDNS with hack/pdns.sh on free loopback ports (caches off, the API on).
func (w *world) startPDNS(ctx context.Context, c config) error {
	key, err := randomKey()
	if err != nil {
		return err
	}
	p, err := hackrun.StartPDNS(ctx, c.root, filepath.Join(w.dir, "pdns"), key)
	if err != nil {
		return err
	}
	w.pdns = pdnsServer{dir: p.Dir, key: key, apiURL: p.APIURL, dnsAddr: p.DNSAddr}
	w.pdnsProc = p
	w.cleanups = append(w.cleanups, p.Stop)
	return nil
}

// zoneName is the name of zone i, without the trailing dot.
func zoneName(i int) string { return fmt.Sprintf("z%d.bench.test", i) }

// createZones creates the 10 zones in PowerDNS straight through its API (not through the
// proxy): they exist before either tool starts, as adopted zones do. soa_edit_api DEFAULT bumps
// the SOA serial on every API change, which the served check watches.
func (w *world) createZones(ctx context.Context) error {
	for i := range zones {
		z := zoneName(i) + "."
		body, _ := json.Marshal(map[string]any{"name": z, "kind": "Native", "nameservers": []string{"ns1." + z}, "soa_edit_api": "DEFAULT"})
		if err := w.pdnsAPI(ctx, http.MethodPost, "/api/v1/servers/localhost/zones", body, http.StatusCreated); err != nil {
			return fmt.Errorf("create zone %s: %w", z, err)
		}
	}
	return nil
}

// pdnsAPI sends one request straight to the PowerDNS API (10 s timeout) and wants status want.
func (w *world) pdnsAPI(ctx context.Context, method, path string, body []byte, want int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	code, _, err := hackrun.PDNSRequest(ctx, w.pdns.apiURL, w.pdns.key, method, path, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if code != want {
		return fmt.Errorf("%s %s: HTTP %d", method, path, code)
	}
	return nil
}

// startProxy starts the counting reverse proxy to the PowerDNS API on a loopback port. It
// traces every request to proxy.log in the run's directory (kept with BENCH_KEEP=1).
func (w *world) startProxy() error {
	target, _ := url.Parse(w.pdns.apiURL)
	trace, err := os.Create(filepath.Join(w.dir, "proxy.log"))
	if err != nil {
		return fmt.Errorf("create the proxy trace: %w", err)
	}
	w.proxy = newCountingProxy(httputil.NewSingleHostReverseProxy(target), trace)
	srv := httptest.NewServer(w.proxy)
	w.proxyURL = srv.URL
	w.cleanups = append(w.cleanups, func() error { srv.Close(); return trace.Close() })
	return nil
}

// randomKey returns a fresh API key for this run's PowerDNS; it is never logged.
func randomKey() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random API key: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

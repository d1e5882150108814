package localcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// DefaultDir is where the control plane keeps its state when Options.Dir is empty.
const DefaultDir = ".dnsplane"

// The layout of the control plane's directory; see the package documentation.
const (
	etcdDataDir    = "etcd"
	runDir         = "run"
	logsDir        = "logs"
	kubeconfigFile = "kubeconfig"
	contextName    = "dnsplane-local"
)

const (
	defaultStartTimeout = 2 * time.Minute
	defaultStopTimeout  = 30 * time.Second
)

// Options configure Start. Only Dir matters to find the state of an earlier run.
type Options struct {
	// Dir holds etcd's data, the kubeconfig, the logs and the PID file. Default DefaultDir.
	Dir string
	// BinDirs are searched in order for etcd, kube-apiserver and kube-controller-manager.
	// Default DefaultBinDirs().
	BinDirs []string
	// CRDPaths are files or directories of CRD manifests (YAML or JSON) to install; a missing
	// path is an error.
	CRDPaths []string
	// CRDs are CRDs to install besides those in CRDPaths. Start does not modify them.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Log receives progress; component output goes to <Dir>/logs instead.
	Log logr.Logger
	// StartTimeout bounds each component's start and the CRDs' establishment. Default 2m.
	StartTimeout time.Duration
	// StopTimeout is how long each component may take to exit after SIGTERM before it is
	// killed. Default 30s.
	StopTimeout time.Duration
}

// ControlPlane is a running local control plane. Stop it with Stop or by cancelling the context
// given to Start.
type ControlPlane struct {
	dir  string
	log  logr.Logger
	bins binaries
	opts Options

	lock  *os.File
	logs  []*os.File
	plane *envtest.ControlPlane
	cm    *controllerManager
	procs []proc // what the PID file records
	cfg   *rest.Config

	stopOnce sync.Once
	stopErr  error
	done     chan struct{}
}

// Start starts etcd, kube-apiserver and kube-controller-manager on free loopback ports with their
// state under opts.Dir, installs the CRDs, writes <Dir>/kubeconfig and returns once the API
// server serves them. Processes that a killed predecessor left running on the same directory are
// stopped first; a live control plane on it makes Start fail with ErrDirInUse.
//
// The control plane stops when ctx is cancelled or Stop is called; a caller about to exit calls
// Stop (or waits on Done) so that the processes are gone before it is. etcd and kube-apiserver
// outlive a caller killed with SIGKILL (envtest gives them no parent-death signal), until the
// next Start on the same directory stops them.
func Start(ctx context.Context, opts Options) (_ *ControlPlane, err error) {
	began := time.Now()
	opts = opts.withDefaults()
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("local control plane dir: %w", err)
	}
	bins, err := findBinaries(opts.BinDirs)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, logsDir), 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{
		dir: dir, log: opts.Log, bins: bins, opts: opts, lock: lock, done: make(chan struct{}),
	}
	defer func() {
		if err != nil {
			if stopErr := cp.Stop(); stopErr != nil {
				cp.log.Error(stopErr, "cleaning up after a failed start")
			}
		}
	}()
	cp.log.Info("starting local control plane", "dir", dir,
		"etcd", bins.etcd, "apiserver", bins.apiServer, "controllerManager", bins.controllerManager)

	if err := reapStale(cp.log, dir, opts.StopTimeout); err != nil {
		return nil, fmt.Errorf("stop stale processes in %s: %w", dir, err)
	}
	if err := cp.startEtcdAndAPIServer(ctx); err != nil {
		return nil, err
	}
	admin, err := cp.plane.AddUser(envtest.User{Name: "dnsplane-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("provision admin user: %w", err)
	}
	cp.cfg = admin.Config()
	if err := waitForDefaultNamespace(ctx, cp.cfg, opts.StartTimeout); err != nil {
		return nil, err
	}
	if err := cp.startControllerManager(ctx); err != nil {
		return nil, err
	}
	if err := installCRDs(ctx, cp.cfg, opts.CRDPaths, opts.CRDs, opts.StartTimeout); err != nil {
		return nil, err
	}
	if err := writeKubeconfig(cp.KubeconfigPath(), cp.cfg); err != nil {
		return nil, fmt.Errorf("write kubeconfig: %w", err)
	}

	go func() {
		select {
		case <-ctx.Done():
			_ = cp.stopOnContextDone()
		case <-cp.done:
		}
	}()
	cp.log.Info("local control plane ready", "server", cp.cfg.Host,
		"kubeconfig", cp.KubeconfigPath(), "took", time.Since(began).Round(time.Millisecond))
	return cp, nil
}

func (o Options) withDefaults() Options {
	if o.Dir == "" {
		o.Dir = DefaultDir
	}
	if len(o.BinDirs) == 0 {
		o.BinDirs = DefaultBinDirs()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = defaultStartTimeout
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = defaultStopTimeout
	}
	return o
}

// Config returns a copy of the admin REST config (group system:masters).
func (cp *ControlPlane) Config() *rest.Config { return rest.CopyConfig(cp.cfg) }

// KubeconfigPath returns <Dir>/kubeconfig, holding the same admin credentials as Config.
func (cp *ControlPlane) KubeconfigPath() string { return filepath.Join(cp.dir, kubeconfigFile) }

// Dir returns the absolute path of the control plane's directory.
func (cp *ControlPlane) Dir() string { return cp.dir }

// Done is closed once the control plane has stopped.
func (cp *ControlPlane) Done() <-chan struct{} { return cp.done }

// Stop stops kube-controller-manager, kube-apiserver and etcd, in that order, and waits for them
// to exit. etcd's data stays. It is safe to call more than once and concurrently; every call
// returns the first call's result once the processes are gone.
func (cp *ControlPlane) Stop() error {
	cp.stopOnce.Do(func() {
		cp.stopErr = cp.stop()
		close(cp.done)
	})
	return cp.stopErr
}

// stopOnContextDone is Stop, logging why and how it went. It logs only inside the once, so no
// log line comes after any Stop call has returned.
func (cp *ControlPlane) stopOnContextDone() error {
	cp.stopOnce.Do(func() {
		cp.log.Info("context done, stopping local control plane")
		cp.stopErr = cp.stop()
		if cp.stopErr != nil {
			cp.log.Error(cp.stopErr, "stopping local control plane")
		}
		close(cp.done)
	})
	return cp.stopErr
}

func (cp *ControlPlane) stop() error {
	var errs []error
	if err := cp.cm.stop(cp.opts.StopTimeout); err != nil {
		errs = append(errs, err)
	}
	if cp.plane != nil {
		if err := cp.plane.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop etcd and kube-apiserver: %w", err))
		}
	}
	// Whatever is still running (a failed start's leftovers, or one that ignored SIGKILL's
	// wait) is stopped by pid.
	for _, p := range slices.Backward(cp.procs) {
		if alive(p.PID) {
			if err := terminate(p.PID, cp.opts.StopTimeout); err != nil {
				errs = append(errs, fmt.Errorf("stop %s: %w", p.Component, err))
			}
		}
	}
	for _, f := range cp.logs {
		_ = f.Close()
	}
	err := errors.Join(errs...)
	if err == nil {
		// The run's certificates and keys are of no use once its processes are gone.
		if rmErr := os.RemoveAll(filepath.Join(cp.dir, runDir)); rmErr != nil {
			err = rmErr
		} else if rmErr := os.Remove(filepath.Join(cp.dir, pidFile)); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = rmErr
		}
	}
	// With err set the PID file stays, so the next start reaps what is left.
	_ = cp.lock.Close()
	if err == nil {
		cp.log.Info("local control plane stopped", "dir", cp.dir)
	}
	return err
}

// startEtcdAndAPIServer starts etcd and kube-apiserver through envtest, recording their PIDs in
// the PID file while they start (so that a kill during the start leaves nothing unreapable) and
// retrying twice, as envtest does, when a picked port was taken meanwhile.
func (cp *ControlPlane) startEtcdAndAPIServer(ctx context.Context) error {
	etcdLog, err := cp.openLog(etcdName)
	if err != nil {
		return err
	}
	apiLog, err := cp.openLog(apiServerName)
	if err != nil {
		return err
	}
	certDir := filepath.Join(cp.dir, runDir, "apiserver")
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		// envtest writes fresh certificates only into a directory without them.
		if err := resetDir(certDir); err != nil {
			return err
		}
		plane := &envtest.ControlPlane{
			Etcd: &envtest.Etcd{
				Path: cp.bins.etcd, DataDir: filepath.Join(cp.dir, etcdDataDir),
				StartTimeout: cp.opts.StartTimeout, StopTimeout: cp.opts.StopTimeout,
				Out: etcdLog, Err: etcdLog,
			},
			APIServer: &envtest.APIServer{
				Path: cp.bins.apiServer, CertDir: certDir,
				StartTimeout: cp.opts.StartTimeout, StopTimeout: cp.opts.StopTimeout,
				Out: apiLog, Err: apiLog,
			},
		}
		// The data outlives the process: keep etcd's fsync, which envtest turns off.
		plane.Etcd.Configure().Set("unsafe-no-fsync", "false")
		// Loopback only, independent of the host's network: advertise 127.0.0.1, which the
		// endpoint reconciler refuses, so keep no endpoints for the kubernetes Service (there
		// are no pods here to use them).
		plane.APIServer.Configure().
			Set("advertise-address", "127.0.0.1").
			Set("endpoint-reconciler-type", "none")

		err := cp.startTracked(ctx, plane)
		if err == nil {
			cp.plane = plane
			return nil
		}
		lastErr = err
		cp.killTracked()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		cp.log.Info("control plane start failed, retrying", "attempt", attempt, "error", err.Error())
	}
	return fmt.Errorf("start etcd and kube-apiserver (logs in %s): %w", filepath.Join(cp.dir, logsDir), lastErr)
}

// startTracked runs plane.Start, meanwhile recording the processes it spawns in the PID file.
// Cancelling ctx kills them, which makes plane.Start return.
func (cp *ControlPlane) startTracked(ctx context.Context, plane *envtest.ControlPlane) error {
	errc := make(chan error, 1)
	go func() { errc <- plane.Start() }()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	cancelled := ctx.Done()
	for {
		select {
		case err := <-errc:
			cp.track()
			if err == nil && ctx.Err() != nil {
				_ = plane.Stop()
				return ctx.Err()
			}
			return err
		case <-tick.C:
		case <-cancelled:
			cancelled = nil
		}
		cp.track()
		if ctx.Err() != nil { // also kills what envtest starts after the cancellation
			cp.killTracked()
		}
	}
}

// track records the running processes of this control plane in the PID file.
func (cp *ControlPlane) track() {
	procs := slices.Concat(
		children(etcdName, cp.bins.etcd, cp.dir),
		children(apiServerName, cp.bins.apiServer, cp.dir),
		children(controllerName, cp.bins.controllerManager, cp.dir),
	)
	if slices.Equal(procs, cp.procs) {
		return
	}
	cp.procs = procs
	if err := writePIDFile(cp.dir, procs); err != nil {
		cp.log.Error(err, "write PID file")
	}
}

// killTracked sends SIGTERM to the process groups of the tracked processes, without waiting.
func (cp *ControlPlane) killTracked() {
	for _, p := range cp.procs {
		if alive(p.PID) {
			_ = syscall.Kill(-p.PID, syscall.SIGTERM)
		}
	}
}

func (cp *ControlPlane) startControllerManager(ctx context.Context) error {
	user, err := cp.plane.AddUser(envtest.User{Name: "dnsplane-controller-manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("provision %s user: %w", controllerName, err)
	}
	kubeconfig := filepath.Join(cp.dir, runDir, controllerName, kubeconfigFile)
	if err := resetDir(filepath.Dir(kubeconfig)); err != nil {
		return err
	}
	if err := writeKubeconfig(kubeconfig, user.Config()); err != nil {
		return fmt.Errorf("write %s kubeconfig: %w", controllerName, err)
	}
	out, err := cp.openLog(controllerName)
	if err != nil {
		return err
	}
	cm, err := startControllerManager(ctx, cp.bins.controllerManager, kubeconfig, out, cp.opts.StartTimeout)
	cp.track()
	if err != nil {
		return fmt.Errorf("%w (log: %s)", err, out.Name())
	}
	cp.cm = cm
	return nil
}

// openLog opens <dir>/logs/<component>.log for this run, keeping the previous run's as .1.
func (cp *ControlPlane) openLog(component string) (*os.File, error) {
	path := filepath.Join(cp.dir, logsDir, component+".log")
	if err := os.Rename(path, path+".1"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("rotate %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", component, err)
	}
	cp.logs = append(cp.logs, f)
	return f, nil
}

func resetDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o700)
}

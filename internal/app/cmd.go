package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dnsplane/dnsplane/config/crd"
	"github.com/dnsplane/dnsplane/internal/version"
	"github.com/dnsplane/dnsplane/pkg/localcp"
)

// Main is the manager command (the repository root's main package): it parses and validates
// args (os.Args[1:]; the flags are listed in docs/api.md, "The manager") and the environment
// (POD_NAMESPACE, POD_IP), and runs the manager until SIGTERM or SIGINT. It returns the process's
// exit code: 0 after --help, after --version (which prints the build, internal/version, before
// any other flag is validated or anything starts), or once told to stop, even during the start;
// 2 for flags it refuses, each error naming its flag, on standard error; 1 when the manager
// cannot start or fails, with the reason on one line of standard error. With --local it first
// starts a local control plane (etcd, kube-apiserver, kube-controller-manager), which stops after
// the manager.
func Main(args []string) int {
	o, zopts, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if o.version {
		fmt.Println(version.Get())
		return 0
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(zopts)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		// The reason to exit, for a person at a terminal as much as for a pod log: one line, no
		// stack trace (zap adds one to every Error).
		fmt.Fprintln(os.Stderr, "manager stopped:", err)
		if ctx.Err() != nil {
			return 0 // told to stop (SIGTERM, SIGINT) during its start: what failed is the stop asked for
		}
		return 1
	}
	return 0
}

// checkAddrs binds and releases every address the manager will listen on — the embedded DNS
// server's (UDP and TCP), /metrics and the probes — before anything starts: a busy port then
// fails at once, naming the flag to change, rather than after a local control plane came up.
// Errors name each flag and address.
func checkAddrs(o options) error {
	var errs []error
	busy := func(flag, addr string, err error) {
		errs = append(errs, fmt.Errorf("%s %s cannot be used (%w): pass %s with a free host:port", flag, addr, err, flag))
	}
	if pc, err := net.ListenPacket("udp", o.localDNSAddr); err != nil {
		busy("--local-dns-addr", o.localDNSAddr, err)
	} else {
		_ = pc.Close()
	}
	if l, err := net.Listen("tcp", o.localDNSAddr); err != nil {
		busy("--local-dns-addr", o.localDNSAddr, err)
	} else {
		_ = l.Close()
	}
	for _, a := range []struct{ flag, addr string }{
		{"--metrics-bind-address", o.metricsAddr}, {"--health-probe-bind-address", o.probeAddr},
		{"--pprof-bind-address", o.pprofAddr},
	} {
		if a.addr == "" || a.addr == "0" {
			continue
		}
		l, err := net.Listen("tcp", a.addr)
		if err != nil {
			busy(a.flag, a.addr, err)
			continue
		}
		_ = l.Close()
	}
	return errors.Join(errs...)
}

// run checks the addresses, starts the local control plane with --local, then builds the
// manager through the composition root (internal/app) and runs it until ctx ends.
func run(ctx context.Context, o options) error {
	log := ctrl.Log.WithName("setup")
	start := time.Now()
	setMemoryLimit(log)
	setGCPercent(log)
	setWatchList(o.kubeWatchList)
	if err := checkAddrs(o); err != nil {
		return err
	}
	var cfg *rest.Config
	if o.local {
		// ctx (the signal) cancels the control plane's start, but once it is up it outlives the
		// manager: the deferred Stop ends it after a.Run returns. Stopped with ctx, its API
		// server went away while a manager told to stop during its start waited for its caches,
		// which then never synced, and controller-runtime's Start (v0.25) waits for them
		// whatever its context: the process never exited. The manager's own stop (the Lease's
		// release, the last writes) needs the API server too.
		cpCtx, stopCP := context.WithCancel(context.WithoutCancel(ctx))
		defer stopCP()
		cancelStart := context.AfterFunc(ctx, stopCP)
		cp, err := localcp.Start(cpCtx, localcp.Options{Dir: o.localDir, CRDs: crd.Definitions(), Log: ctrl.Log.WithName("localcp")})
		if err != nil {
			return fmt.Errorf("start local control plane: %w", err)
		}
		defer func() {
			if err := cp.Stop(); err != nil {
				log.Error(err, "stop local control plane")
			}
		}()
		if !cancelStart() { // the signal came as the start ended: the control plane is stopping
			return fmt.Errorf("start local control plane: %w", context.Cause(ctx))
		}
		cfg = cp.Config()
		log.Info("local control plane ready", "kubeconfig", cp.KubeconfigPath(), "after", time.Since(start).Round(time.Millisecond).String())
	} else {
		var err error
		if cfg, err = ctrl.GetConfig(); err != nil {
			return fmt.Errorf("kubeconfig: %w", err)
		}
	}
	cfg.QPS, cfg.Burst = float32(o.kubeQPS), o.kubeBurst
	cfg.Wrap(limitInFlight(DefaultKubeAPIInFlight))
	appCfg, err := o.config(cfg, environ{podNamespace: os.Getenv("POD_NAMESPACE"), podIP: os.Getenv("POD_IP")})
	if err != nil {
		return err
	}
	a, err := New(ctx, appCfg)
	if err != nil {
		return err
	}
	log.Info("manager built", "local", o.local, "startup", time.Since(start).Round(time.Millisecond).String())
	return a.Run(ctx)
}

// defaultGCPercent is the manager's GOGC unless the environment sets one: the collector runs
// when the heap has grown 30% over what survived the last collection, not Go's default 100%.
// A first sync holds its data once (informer cache, zone writers' views, queued changes), and
// with Go's default the RSS peaked at about 2.3 times the live heap. make bench, dnsplane alone,
// runs alternating: 50 against 100 took the peak RSS from 428 to 333 MiB at 50,000
// endpoints and from 149 to 123 MiB at 10,000 with the same first sync; 30 against 50 took it
// from 343-349 to 296-308 MiB at 50,000 (external-dns v0.22.0: 304) and from 137 to 128-129 MiB
// at 10,000 (external-dns: 125), for a first sync 14% longer at 50,000 (14.0-15.0 s against
// 12.2-13.1; external-dns 19.2) and 0.4 s longer at 10,000 (1.8 against 1.4 s; external-dns 4.1).
// Memory is what a shared cluster's limit is sized by; the sync stays well ahead.
const defaultGCPercent = 30

// setGCPercent sets Go's GOGC to defaultGCPercent unless GOGC is in the environment, which wins
// (GOGC=100 is Go's default; GOGC=off turns the collector off, with GOMEMLIMIT as its bound).
func setGCPercent(log logr.Logger) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	debug.SetGCPercent(defaultGCPercent)
	log.V(1).Info("GOGC set", "percent", defaultGCPercent)
}

// memoryLimitRatio is the share of the container's memory limit (cgroup memory.max) that Go's
// collector keeps the heap under (its soft GOMEMLIMIT): the rest is goroutine stacks, the
// runtime and slack. 0.9 is github.com/KimMachineGun/automemlimit's default.
const memoryLimitRatio = 0.9

// setMemoryLimit sets Go's soft memory limit to memoryLimitRatio of the container's memory limit,
// so that the collector runs harder as the heap nears the limit instead of the container being
// OOM-killed in a big first sync; outside a memory-limited cgroup it sets none. A GOMEMLIMIT in
// the environment wins, and AUTOMEMLIMIT=off turns it off (automemlimit's own rules). A failure
// is logged, and the manager runs without a limit.
func setMemoryLimit(log logr.Logger) {
	limit, err := memlimit.Set(memlimit.WithRatio(memoryLimitRatio), memlimit.WithProvider(memlimit.FromCgroup),
		memlimit.WithLogger(slog.New(logr.ToSlogHandler(log.V(1)))))
	if err != nil {
		log.Error(err, "could not set the Go memory limit from the container's; running without one")
		return
	}
	if limit > 0 && limit < math.MaxInt64 {
		log.Info("Go memory limit set from the container's memory limit", "bytes", limit, "ratio", memoryLimitRatio)
	}
}

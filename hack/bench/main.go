// Command bench runs dnsplane (bin/manager) and external-dns v0.22.0 (bin/external-dns) side by
// side on the same input and writes hack/bench/out/report.json, report.md and bench.png. `make
// bench` builds what it needs and runs it; docs/bench.md says how to read the figures.
//
// Each run starts, on loopback only: a fresh control plane (etcd + kube-apiserver from bin/, via
// envtest), a fresh PowerDNS (hack/pdns.sh: sqlite, caches off) with 10 zones z0..z9.bench.test,
// a counting reverse proxy in front of the PowerDNS API, and one controller as a separate
// process. The input is N DNSEndpoints of 10 A endpoints each, one per zone (the same objects
// for both tools; only the apiVersion differs). Runs alternate between the tools (A B A B).
//
// Environment (all optional):
//
//	SIZES               comma list of endpoint counts (default 1000,10000; each a multiple of 10)
//	BENCH_50K=1         add 50000 to SIZES
//	RUNS                runs per tool, size and scenario (default 2)
//	SCENARIOS           comma list of present/default, present/qps1000, created/default,
//	                    created/qps1000 (default all; at 50k and more only the qps1000 ones)
//	TOOLS               comma list of external-dns, dnsplane (default both)
//	STEADY              steady-state window (default 60s)
//	BENCH_MAX_RSS_MIB   a controller above this RSS is stopped and its run failed (default 8192)
//	BENCH_KEEP=1        keep every run's work directory (logs) under hack/bench/out/work
//	BENCH_BUILD_SECONDS how long `make bench` spent building (recorded in the report)
//	BENCH_DNSPLANE_PROVIDER  pdns (default) or webhook: dnsplane writes through external-dns
//	                    v0.22.0's own webhook server with its PowerDNS provider
//	                    (hack/webhook-server), in front of the same PowerDNS; providerCalls are
//	                    then the webhook's requests to PowerDNS, webhookCalls dnsplane's to it
//	FAULTS=1            run the fault suite instead (`make faults`; faults.go lists its variables)
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func main() {
	log := zap.New(zap.UseDevMode(true))
	ctrllog.SetLogger(log) // envtest logs through controller-runtime's logger
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		stop()
		os.Exit(1)
	}
}

// run parses the configuration, runs the matrix and writes the report after every run, so an
// interrupted bench keeps what it measured.
func run(ctx context.Context, log logr.Logger) error {
	cfg, err := configFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	if os.Getenv("FAULTS") == "1" {
		cfg.tools = []string{toolDNSPlane}
		if err := cfg.check(); err != nil {
			return err
		}
		return runFaults(ctx, log, cfg)
	}
	if err := cfg.check(); err != nil {
		return err
	}
	rep := newReport(cfg)
	plan := cfg.plan()
	for i, p := range plan {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Info("run", "tool", p.Tool, "endpoints", p.Size, "scenario", p.Scenario.Name, "run", p.Run, "extras", p.Extras)
		res := runOne(ctx, log.WithValues("tool", p.Tool, "endpoints", p.Size), cfg, p)
		log.Info("result", "tool", p.Tool, "endpoints", p.Size, "scenario", p.Scenario.Name,
			"firstSyncSeconds", res.FirstSyncSeconds, "providerCalls", res.ProviderCalls.Total,
			"peakRSSMiB", res.PeakRSSMiB, "webhookCalls", res.WebhookCalls, "error", res.Error)
		if p.Extras && res.Error != "" {
			moveExtras(plan[i+1:], p)
		}
		rep.Runs = append(rep.Runs, res)
		if err := rep.write(cfg.out); err != nil {
			return err
		}
	}
	log.Info("report written", "dir", cfg.out)
	return nil
}

// moveExtras gives the extras of failed run p to the next run of the same tool and size with
// the objects present at the start, if any.
func moveExtras(rest []runPlan, p runPlan) {
	for i := range rest {
		if rest[i].Tool == p.Tool && rest[i].Size == p.Size && !rest[i].Scenario.Created {
			rest[i].Extras = true
			return
		}
	}
}

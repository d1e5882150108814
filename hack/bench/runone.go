package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
)

// runResult holds every figure of one run. Times are seconds, memory MiB.
type runResult struct {
	Tool     string `json:"tool"`
	Size     int    `json:"endpoints"`
	Objects  int    `json:"objects"`
	Scenario string `json:"scenario"`
	Run      int    `json:"run"`
	// LoadAvg is /proc/loadavg's 1, 5 and 15 minute load averages before the run.
	LoadAvg string `json:"loadAvgBefore"`
	// WebhookCalls (BENCH_DNSPLANE_PROVIDER=webhook): dnsplane's requests to the webhook server
	// in the first sync; ProviderCalls are then the webhook's requests to PowerDNS.
	WebhookCalls *calls `json:"webhookCalls,omitempty"`
	// FirstSyncSeconds: controller start (created: the first create) to the last record served.
	FirstSyncSeconds float64 `json:"firstSyncSeconds"`
	// AfterLastCreateSeconds (created scenarios): the last create's answer to the last record
	// served.
	AfterLastCreateSeconds float64 `json:"afterLastCreateSeconds,omitempty"`
	// CreateSeconds (created scenarios): how long the driver took to create the objects.
	CreateSeconds float64 `json:"createSeconds,omitempty"`
	// ReadySeconds (dnsplane): the same start to every DNSEndpoint Ready=True, polled every
	// 500 ms after the last record is served.
	ReadySeconds float64 `json:"readySeconds,omitempty"`
	// ProviderCalls: PowerDNS API requests between the controller's start and the last record
	// served.
	ProviderCalls calls `json:"providerCalls"`
	// KubeRequests in the same window.
	KubeRequests kubeRequests `json:"kubeRequests"`
	// PeakRSSMiB is the controller's VmHWM at the end of the run (after the extras, if any).
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	// MissingRecords, in a failed first sync: the records not served when it ended; the
	// provider calls and the peak RSS are then those up to that moment.
	MissingRecords int `json:"missingRecords,omitempty"`
	// Extras, measured once per tool and size.
	Extras *extras `json:"extras,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// extras are the figures measured after the first sync of one run per tool and size.
type extras struct {
	// RegistryPerEndpoint: TXT owner names in the zones over the endpoints, after the first sync.
	RegistryPerEndpoint float64 `json:"registryRecordsPerEndpoint"`
	// SteadyCalls: provider calls in the steady-state window, which starts settle after the
	// first sync.
	SteadyCalls         calls   `json:"steadyCalls"`
	SteadyWindowSeconds float64 `json:"steadyWindowSeconds"`
	// ChangeObjects of the objects (1%, at least 1) got new targets, one patch after another.
	ChangeObjects int `json:"changeObjects"`
	// ChangeSeconds: the first patch sent to the last changed record served.
	ChangeSeconds float64 `json:"changeSeconds"`
	// ChangePatchSeconds: the first patch sent to the last patch answered (the driver's part of
	// ChangeSeconds: the API server's time for ChangeObjects patches in a row).
	ChangePatchSeconds float64 `json:"changePatchSeconds"`
	// ChangeCalls: provider calls in the same window.
	ChangeCalls calls `json:"changeCalls"`
}

// runOne runs p in a fresh world and returns its figures; a failure is recorded in Error.
func runOne(ctx context.Context, log logr.Logger, c config, p runPlan) runResult {
	res := runResult{Tool: p.Tool, Size: p.Size, Objects: p.Size / zones, Scenario: p.Scenario.Name, Run: p.Run, LoadAvg: loadAvg()}
	dir := filepath.Join(c.out, "work", fmt.Sprintf("%s-%d-%s-%d", p.Tool, p.Size, strings.ReplaceAll(p.Scenario.Name, "/", "-"), p.Run))
	if err := withWorld(ctx, log, c, dir, func(w *world) error { return measure(ctx, log, c, p, w, &res) }); err != nil {
		res.Error = err.Error()
	}
	return res
}

// withWorld runs fn in a fresh world under dir (emptied first) and closes the world after it; an
// error of fn comes before one of the close. On an error dir is kept for its logs; otherwise it
// is removed, unless c.keep.
func withWorld(ctx context.Context, log logr.Logger, c config, dir string, fn func(*world) error) error {
	_ = os.RemoveAll(dir)
	err := func() (err error) {
		w, err := newWorld(ctx, log, c, dir)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := w.close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
		return fn(w)
	}()
	if err != nil {
		log.Error(err, "run failed; its work directory is kept", "dir", dir)
	} else if !c.keep {
		_ = os.RemoveAll(dir)
	}
	return err
}

// measure runs the controller in w and fills res.
func measure(ctx context.Context, log logr.Logger, c config, p runPlan, w *world, res *runResult) (err error) {
	if p.Tool == toolDNSPlane {
		if err := w.setupDNSPlane(ctx); err != nil {
			return err
		}
	}
	if !p.Scenario.Created {
		if err := w.createObjects(ctx, p.Tool, res.Objects); err != nil {
			return err
		}
	}
	ctl, err := startController(c, w, p.Tool, p.Scenario.EqualLimits)
	if err != nil {
		return err
	}
	defer func() {
		if serr := ctl.stop(30 * time.Second); serr != nil && err == nil {
			err = serr
		}
	}()
	defer func() {
		// Also after a failure, while the process is there to read (not after the RSS guard).
		var merr error
		if _, res.PeakRSSMiB, merr = ctl.memory(); merr != nil && err == nil && ctl.alive() == nil {
			err = merr
		}
	}()
	if err := firstSync(ctx, log, c, p, w, ctl, res); err != nil {
		return err
	}
	if p.Extras {
		if res.Extras, err = measureExtras(ctx, log, c, p, w, ctl); err != nil {
			return err
		}
	}
	return nil
}

// firstSync measures the first sync: from the controller's start (created: the first create)
// to the last record served.
func firstSync(ctx context.Context, log logr.Logger, c config, p runPlan, w *world, ctl *controller, res *runResult) error {
	kubeBefore, err := w.scrapeRequests(ctx)
	if err != nil {
		return err
	}
	callsBefore := w.proxy.snapshot()
	var hookBefore map[string]int
	if w.webhook != nil {
		hookBefore = w.webhook.snapshot()
	}
	start := time.Now()
	var lastCreate time.Time
	if p.Scenario.Created {
		if start, lastCreate, err = createWhileRunning(ctx, w, p, ctl, res.Objects); err != nil {
			return err
		}
	}
	ck := w.checker(c, ctl, 50*time.Millisecond)
	sctx, cancel := context.WithTimeout(ctx, firstSyncTimeout(p))
	defer cancel()
	served, missing, err := ck.waitServed(sctx, want(0, res.Objects, 0))
	res.ProviderCalls = callsBetween(callsBefore, w.proxy.snapshot())
	if w.webhook != nil {
		hook := callsBetween(hookBefore, w.webhook.snapshot())
		res.WebhookCalls = &hook
	}
	if err != nil {
		res.MissingRecords = missing
		return fmt.Errorf("first sync: %d of %d records not served: %w", missing, p.Size, err)
	}
	res.FirstSyncSeconds = served.Sub(start).Seconds()
	created := 0
	if p.Scenario.Created {
		res.AfterLastCreateSeconds = served.Sub(lastCreate).Seconds()
		res.CreateSeconds = lastCreate.Sub(start).Seconds()
		created = res.Objects
	}
	kubeAfter, err := w.scrapeRequests(ctx)
	if err != nil {
		return err
	}
	res.KubeRequests = requestsBetween(kubeBefore, kubeAfter, created, res.Objects)
	if p.Tool == toolDNSPlane {
		ready, err := w.waitObjectsReady(sctx, res.Objects)
		if err != nil {
			return err
		}
		res.ReadySeconds = ready.Sub(start).Seconds()
	}
	log.V(1).Info("first sync", "seconds", res.FirstSyncSeconds, "readySeconds", res.ReadySeconds)
	return nil
}

// createWhileRunning waits for the controller to be ready (dnsplane: its DNSZones Ready too),
// then creates the objects. It returns when the first create was sent and the last answered.
func createWhileRunning(ctx context.Context, w *world, p runPlan, ctl *controller, objects int) (first, last time.Time, err error) {
	if err := ctl.waitReady(ctx, 2*time.Minute); err != nil {
		return first, last, err
	}
	if p.Tool == toolDNSPlane {
		if err := w.waitZonesReady(ctx, 2*time.Minute); err != nil {
			return first, last, err
		}
	}
	first = time.Now()
	if err := w.createObjects(ctx, p.Tool, objects); err != nil {
		return first, last, err
	}
	return first, time.Now(), nil
}

// firstSyncTimeout bounds a first sync: 3 min plus 60 ms per endpoint (10 min at 10k, 53 min at
// 50k), several times what either tool takes (docs/bench.md, "History").
func firstSyncTimeout(p runPlan) time.Duration {
	return 3*time.Minute + time.Duration(p.Size)*60*time.Millisecond
}

// checker returns the served check of w, guarded by ctl: it fails when ctl exits or its RSS goes
// over the limit (then ctl is stopped).
func (w *world) checker(c config, ctl *controller, interval time.Duration) checker {
	return checker{addr: w.pdns.dnsAddr, interval: interval, queryMax: defaultQueryMax, guard: func() error {
		if err := ctl.alive(); err != nil {
			return err
		}
		if rss, _, err := ctl.memory(); err == nil && rss > c.maxRSSMiB {
			_ = ctl.stop(5 * time.Second)
			return fmt.Errorf("controller RSS %.0f MiB over BENCH_MAX_RSS_MIB=%.0f: stopped", rss, c.maxRSSMiB)
		}
		return nil
	}}
}

// measureExtras measures, after the first sync: the registry records, the steady state (after
// c.settle) and a 1% change.
func measureExtras(ctx context.Context, log logr.Logger, c config, p runPlan, w *world, ctl *controller) (*extras, error) {
	ck := w.checker(c, ctl, 20*time.Millisecond)
	zs := make([]string, zones)
	for j := range zones {
		zs[j] = zoneName(j) + "."
	}
	txt, err := ck.registryRecords(ctx, zs)
	if err != nil {
		return nil, err
	}
	ex := &extras{RegistryPerEndpoint: float64(txt) / float64(p.Size), SteadyWindowSeconds: c.steady.Seconds()}
	if err := sleepCtx(ctx, c.settle); err != nil {
		return nil, err
	}
	before := w.proxy.snapshot()
	if err := sleepCtx(ctx, c.steady); err != nil {
		return nil, err
	}
	if err := ctl.alive(); err != nil {
		return nil, err
	}
	ex.SteadyCalls = callsBetween(before, w.proxy.snapshot())
	ex.ChangeObjects = max(1, p.Size/zones/100)
	before = w.proxy.snapshot()
	start := time.Now()
	if err := w.changeObjects(ctx, p.Tool, ex.ChangeObjects); err != nil {
		return nil, err
	}
	ex.ChangePatchSeconds = time.Since(start).Seconds()
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	served, _, err := ck.waitServed(sctx, want(0, ex.ChangeObjects, 1))
	if err != nil {
		return nil, fmt.Errorf("1%% change: %w", err)
	}
	ex.ChangeSeconds = served.Sub(start).Seconds()
	ex.ChangeCalls = callsBetween(before, w.proxy.snapshot())
	log.V(1).Info("extras", "steadyCalls", ex.SteadyCalls.Total, "changeSeconds", ex.ChangeSeconds, "changePatchSeconds", ex.ChangePatchSeconds)
	return ex, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// loadAvg returns the first three fields of /proc/loadavg, or "" where there is none.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

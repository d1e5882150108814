package app

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dnsplane/dnsplane/controllers/dnsendpoint"
	"github.com/dnsplane/dnsplane/controllers/dnsrecord"
	"github.com/dnsplane/dnsplane/controllers/dnszone"
	dynupdatecontroller "github.com/dnsplane/dnsplane/controllers/dynupdate"
	gslbcontroller "github.com/dnsplane/dnsplane/controllers/gslb"
	"github.com/dnsplane/dnsplane/controllers/signing"
	"github.com/dnsplane/dnsplane/pkg/dnsclient"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
	"github.com/dnsplane/dnsplane/pkg/gslb/probe"
	"github.com/dnsplane/dnsplane/pkg/heartbeat"
	"github.com/dnsplane/dnsplane/pkg/served"
	"github.com/dnsplane/dnsplane/pkg/warmup"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// addControllers builds the zone writers and the four controllers over them.
func (a *App) addControllers(ctx context.Context, cfg Config) error {
	// Writers resolve their account's provider from the current Secret before each call, so that
	// a rotated Secret reaches the heartbeat reporter and the scraper too (they never plan).
	// They live as long as the controllers that submit to them, not as long as ctx: a leader
	// told to stop (SIGTERM) first drains its embedded server (--local-dns-drain) with its
	// controllers still running, and what they reconcile then must still be written. The
	// writers end when the manager stops its leader runnables, so before it gives the Lease up
	// (LeaderElectionReleaseOnCancel): no write follows the release.
	wctx, stopWriters := context.WithCancel(context.WithoutCancel(ctx))
	if err := a.Manager.Add(manager.RunnableFunc(func(leading context.Context) error {
		<-leading.Done()
		stopWriters()
		return nil
	})); err != nil {
		stopWriters()
		return fmt.Errorf("add the zone writers' lifetime: %w", err)
	}
	// The DNSEndpoints' first pass at start: until every object the cache held is planned, the
	// zone writers send only full batches (the first sync in as few writes a zone as
	// its size allows).
	firstPass := warmup.New(nil, 0, 0)
	wopts := zonewriter.Options{Resync: cfg.ZoneResync, Linger: cfg.WriteLinger, Log: cfg.Log.WithName("zonewriter"), Resolve: a.Providers.ResolveAccount,
		Warming: firstPass.Warming}
	if a.fence != nil {
		wopts.Fence = a.fence.Check // a stalled leader that wakes writes nothing (leaseFence)
	}
	writers := zonewriter.NewSet(wctx, wopts)
	if err := a.addDNSZone(cfg, writers); err != nil {
		return fmt.Errorf("set up the DNSZone controller: %w", err)
	}
	mgr := a.Manager
	if err := (&dnsendpoint.Reconciler{
		Client:         mgr.GetClient(),
		APIReader:      mgr.GetAPIReader(),
		Recorder:       mgr.GetEventRecorderFor("dnsendpoint-controller"),
		Providers:      a.Providers,
		Writers:        writers,
		OwnerID:        a.OwnerID,
		ResyncInterval: cfg.ZoneResync,
		LinkEvents:     a.Scraper.LinkEvents,
		Served:         a.Served,
		ServedEvents:   a.Served.Events(dnsendpoint.Kind),
		Policy:         cfg.Policy,
		ExternalDNS:    cfg.ExternalDNS,
		Warmup:         firstPass,

		ConflictRetryInterval: cmp.Or(cfg.ConflictRetry, DefaultConflictRetry),
	}).SetupWithManager(mgr, decorator(cfg, ControllerDNSEndpoint)); err != nil {
		return fmt.Errorf("set up the DNSEndpoint controller: %w", err)
	}
	if err := a.addDNSRecord(ctx, cfg, writers); err != nil {
		return fmt.Errorf("set up the DNSRecord controller: %w", err)
	}
	if err := a.addGslb(cfg); err != nil {
		return fmt.Errorf("set up the Gslb controller: %w", err)
	}
	if err := (&dynupdatecontroller.Keys{
		Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Keyring: a.Keyring,
		Recorder: mgr.GetEventRecorderFor("dynupdate"), Elected: mgr.Elected(),
	}).SetupWithManager(mgr, ControllerDynamicUpdateKeys); err != nil {
		return fmt.Errorf("set up the dynamic-update keys controller: %w", err)
	}
	if err := (&dynupdatecontroller.Expiry{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("dynupdate")}).
		SetupWithManager(mgr, ControllerDynamicUpdateExpiry); err != nil {
		return fmt.Errorf("set up the dynamic-update expiry controller: %w", err)
	}
	if err := (&signing.Signer{
		Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Providers: a.Providers, Server: a.Server,
		Log: cfg.Log.WithName(ControllerDNSSECSigner),
	}).SetupWithManager(mgr, ControllerDNSSECSigner); err != nil {
		return fmt.Errorf("set up the DNSSEC signer: %w", err)
	}
	return nil
}

func (a *App) addDNSZone(cfg Config, writers *zonewriter.Set) error {
	metrics, err := dnszone.NewMetrics(cfg.Registerer)
	if err != nil {
		return err
	}
	mgr := a.Manager
	return (&dnszone.Reconciler{
		Client:          mgr.GetClient(),
		Recorder:        mgr.GetEventRecorderFor("dnszone-controller"),
		Providers:       a.Providers,
		Writers:         writers,
		Scraper:         a.Scraper,
		ZoneEvents:      a.Scraper.ZoneEvents,
		DNS:             dnsclient.Client{},
		OwnerID:         a.OwnerID,
		SOAPollInterval: cfg.SOAPollInterval,
		RolloverTTLs:    cfg.RolloverTTLs,
		ResyncInterval:  cfg.ZoneResync,
		Metrics:         metrics,
		Served:          a.Served,
		ServedEvents:    a.Served.Events(served.KindDNSZone),
		// A DNSZone with secondaries is asked again this often (--served-zone-check-interval).
		ServedCheckInterval: cfg.ServedZoneInterval,
		ControllerName:      cmp.Or(cfg.ZoneControllerName, ControllerDNSZone),
	}).SetupWithManager(mgr, decorator(cfg, ControllerDNSZone))
}

// addDNSRecord builds the DNSRecord controller and the heartbeat reporter that checks its
// contributors.
func (a *App) addDNSRecord(ctx context.Context, cfg Config, writers *zonewriter.Set) error {
	mgr := a.Manager
	records := &dnsrecord.Reconciler{
		Client:         mgr.GetClient(),
		APIReader:      mgr.GetAPIReader(),
		Recorder:       mgr.GetEventRecorderFor("dnsrecord-controller"),
		Providers:      a.Providers,
		Writers:        writers,
		OwnerID:        a.OwnerID,
		Threshold:      cfg.HeartbeatThreshold,
		ResyncInterval: cfg.ZoneResync,
		Served:         a.Served,
		ServedEvents:   a.Served.Events(dnsrecord.Kind),

		ConflictRetryInterval: cmp.Or(cfg.ConflictRetry, DefaultConflictRetry),
	}
	heartbeatMetrics, err := heartbeat.NewMetrics(cfg.Registerer)
	if err != nil {
		return fmt.Errorf("register heartbeat metrics: %w", err)
	}
	reporter := heartbeat.New(heartbeat.Options{
		Interval: cfg.HeartbeatInterval, Threshold: cfg.HeartbeatThreshold, Metrics: heartbeatMetrics,
		Log: cfg.Log.WithName("heartbeat"), OnCheck: records.CheckFunc(ctx, 10*time.Second),
	})
	records.Heartbeats = reporter
	if err := mgr.Add(reporter); err != nil {
		return fmt.Errorf("add the heartbeat reporter: %w", err)
	}
	return records.SetupWithManager(mgr, decorator(cfg, ControllerDNSRecord))
}

func (a *App) addGslb(cfg Config) error {
	gslbMetrics, err := gslbcontroller.NewMetrics(cfg.Registerer)
	if err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}
	probeMetrics, err := probe.NewMetrics(cfg.Registerer)
	if err != nil {
		return fmt.Errorf("register probe metrics: %w", err)
	}
	clk := cfg.GslbClock
	if clk == nil {
		clk = clock.RealClock{}
	}
	// One Scheduler probes every Gslb's targets (spec.healthCheck). It probes only what the
	// controller declares, so only the leader probes; with no healthCheck anywhere it holds
	// no goroutine.
	scheduler := probe.NewScheduler(probe.SchedulerOptions{
		Prober: &probe.Prober{Clock: clk, Source: cfg.GslbSource}, Clock: clk, GeoTag: cfg.GeoTag, Metrics: probeMetrics,
	})
	mgr := a.Manager
	if err := mgr.Add(scheduler); err != nil {
		return fmt.Errorf("add the health probe scheduler: %w", err)
	}
	return (&gslbcontroller.Reconciler{
		Client:       mgr.GetClient(),
		Recorder:     mgr.GetEventRecorderFor("gslb-controller"),
		Providers:    a.Providers,
		GeoTag:       cfg.GeoTag,
		Peers:        cfg.Peers,
		Witnesses:    cfg.GslbWitnesses,
		Witness:      cfg.GslbWitness,
		Querier:      gslb.Querier{Timeout: cfg.GslbPeerTimeout, Source: cfg.GslbSource},
		Interval:     cfg.GslbInterval,
		NSAddress:    cfg.GslbNSAddress,
		PeerPort:     cfg.GslbPeerPort,
		Resolver:     cfg.LBResolver,
		Metrics:      gslbMetrics,
		Scheduler:    scheduler,
		Judge:        health.Judge{Clock: clk, FlapDwell: cfg.GslbFlapDwell},
		ProbeMetrics: probeMetrics,
	}).SetupWithManager(mgr, decorator(cfg, ControllerGslb))
}

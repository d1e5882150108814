package app

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	sourcecontroller "github.com/dnsplane/dnsplane/controllers/source"
)

// addSources adds the controllers of the enabled --source kinds: the built-in kinds (Service,
// Ingress) at once, the others through a sourcecontroller.Starter that waits for their CRDs.
// Every source's dnsplane_source_ready{source} is registered on cfg.Registerer.
func (a *App) addSources(_ context.Context, cfg Config) error {
	metrics, err := sourcecontroller.NewMetrics(cfg.Registerer)
	if err != nil {
		return err
	}
	if len(cfg.Sources.Sources) == 0 {
		return nil
	}
	if err := cfg.Sources.Validate(cfg.WatchNamespaces); err != nil {
		return fmt.Errorf("sources: %w", err)
	}
	kinds := sourcecontroller.Kinds()
	starter := &sourcecontroller.Starter{Interval: cfg.SourcePollInterval, Metrics: metrics, Log: cfg.Log.WithName("source")}
	for _, name := range cfg.Sources.Sources {
		k := kinds[name]
		r := &sourcecontroller.Reconciler{
			Client: a.Manager.GetClient(), Recorder: a.Manager.GetEventRecorderFor("dnsplane-source"),
			Kind: k, Config: cfg.Sources, Nodes: len(cfg.WatchNamespaces) == 0, WatchNamespaces: cfg.WatchNamespaces,
		}
		start := func() error {
			return r.SetupWithManager(a.Manager, decorator(cfg, sourcecontroller.ControllerName(name)))
		}
		if len(k.Requires) == 0 {
			if err := start(); err != nil {
				return fmt.Errorf("set up source %s: %w", name, err)
			}
			metrics.Ready.WithLabelValues(name).Set(1)
			continue
		}
		starter.Pending = append(starter.Pending, sourcecontroller.Pending{Name: name, Requires: k.Requires, Start: start})
	}
	if len(starter.Pending) == 0 {
		return nil
	}
	dc := rest.CopyConfig(cfg.Rest)
	dc.Timeout = 10 * time.Second // each discovery request
	disc, err := discovery.NewDiscoveryClientForConfig(dc)
	if err != nil {
		return fmt.Errorf("sources: discovery client: %w", err)
	}
	starter.Discovery = disc
	return a.Manager.Add(starter)
}

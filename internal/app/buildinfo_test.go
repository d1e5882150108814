package app_test

import (
	"context"
	"maps"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/internal/app"
	"github.com/dnsplane/dnsplane/internal/testing/envtest"
	"github.com/dnsplane/dnsplane/internal/version"
)

// TestNew_RegistersBuildInfoOnTheManagersRegistry: the composition root
// registers dnsplane_build_info{version,revision,goversion} = 1 on the registry /metrics serves
// (Config.Registerer), against a real kube-apiserver.
func TestNew_RegistersBuildInfoOnTheManagersRegistry(t *testing.T) {
	cfg := envtest.Start(t, filepath.Join("..", ".."))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg := prometheus.NewRegistry()
	_, err := app.New(ctx, app.Config{
		Rest: cfg, MetricsAddr: "0", ProbeAddr: "0", DNSAddr: "127.0.0.1:0", ZoneDir: t.TempDir(),
		NameServerAddr: netip.MustParseAddr("127.0.0.1"), OwnerID: "build-info-test",
		HeartbeatInterval: time.Minute, HeartbeatThreshold: 5 * time.Minute, SOAPollInterval: time.Second,
		ZoneResync: time.Hour, ScrapeInterval: time.Hour, GslbInterval: time.Minute, GslbPeerTimeout: time.Second,
		GslbPeerPort: 53, Registerer: reg,
	})
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	i := version.Get()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "dnsplane_build_info" {
			continue
		}
		if len(f.GetMetric()) != 1 {
			t.Fatalf("dnsplane_build_info has %d series, want 1", len(f.GetMetric()))
		}
		got := map[string]string{}
		for _, l := range f.GetMetric()[0].GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		want := map[string]string{"version": i.Version, "revision": i.Revision, "goversion": i.GoVersion}
		if !maps.Equal(got, want) {
			t.Errorf("dnsplane_build_info labels = %v, want %v", got, want)
		}
		if v := f.GetMetric()[0].GetGauge().GetValue(); v != 1 {
			t.Errorf("dnsplane_build_info = %v, want 1", v)
		}
		return
	}
	t.Fatalf("dnsplane_build_info is not on the manager's registry (%d families there)", len(fams))
}

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	clientfeatures "k8s.io/client-go/features"
)

func TestParseFlags_DefaultsMatchTheContract(t *testing.T) {
	o, _, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"--local-dir", o.localDir, ".dnsplane"},
		{"--local-dns-addr", o.localDNSAddr, "127.0.0.1:5353"},
		{"--heartbeat-interval", o.heartbeatInterval, 30 * time.Second},
		{"--heartbeat-threshold", o.heartbeatThreshold, 5 * time.Minute},
		{"--soa-poll-interval", o.soaPollInterval, 30 * time.Second},
		{"--zone-resync-interval", o.zoneResync, 2 * time.Hour},
		{"--scrape-interval", o.scrape, 2 * time.Hour},
		{"--gslb-interval", o.gslbInterval, 30 * time.Second},
		{"--gslb-peer-timeout", o.gslbPeerTimeout, 2 * time.Second},
		{"--gslb-peer-port", o.gslbPeerPort, 53},
		{"--local", o.local, false},
		{"--leader-elect", o.leaderElect, false},
		{"--pprof-bind-address", o.pprofAddr, ""}, // off unless asked
		{"--metrics-bind-address", o.metricsAddr, ":8443"},
		{"--metrics-secure", o.metricsSecure, true},
		{"--watch-namespaces", len(o.watchNamespaces), 0}, // every namespace
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s default = %v, want %v", c.name, c.got, c.want)
		}
	}
	// 1,000 status writes in seconds: at least 200 per second.
	if o.kubeQPS < 200 || o.kubeBurst < 200 {
		t.Errorf("--kube-api-qps %v / --kube-api-burst %d are too low to write 1,000 statuses in seconds", o.kubeQPS, o.kubeBurst)
	}
}

func TestParseFlags_RejectsBadValuesWithClearErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--local-dns-addr=5353"}, "--local-dns-addr"},
		{[]string{"--dns-resolver=nohost"}, "--dns-resolver"},
		{[]string{"--soa-poll-interval=0s"}, "--soa-poll-interval must be positive"},
		{[]string{"--ext-gslb-clusters=us=127.0.0.12:5353,broken"}, `--ext-gslb-clusters: gslb peers: entry 2 "broken"`},
		{[]string{"--gslb-ns-address=not-an-ip"}, "--gslb-ns-address"},
		{[]string{"--kube-api-qps=0"}, "--kube-api-qps"},
		{[]string{"--pprof-bind-address=:6060"}, "--pprof-bind-address"},
		{[]string{"--pprof-bind-address=0.0.0.0:6060"}, "must be a loopback address"},
		{[]string{"--pprof-bind-address=10.0.0.1:6060"}, "must be a loopback address"},
		{[]string{"--watch-namespaces=a,b"}, "--watch-namespaces needs --owner-id"},
		{[]string{"--watch-namespaces=a,B_x", "--owner-id=me"}, `--watch-namespaces: "B_x" is not a namespace name`},
		{[]string{"--local-dns-axfr-from=10.89.0.0/24,10.89.0.1"}, `--local-dns-axfr-from "10.89.0.1"`},
	}
	for _, c := range cases {
		_, _, err := parseFlags(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error mentioning %q", c.args, err, c.want)
		}
	}
	for _, ok := range []string{"127.0.0.1:6060", "[::1]:6060", "localhost:6060", "0"} {
		if _, _, err := parseFlags([]string{"--pprof-bind-address=" + ok}); err != nil {
			t.Errorf("--pprof-bind-address=%s refused: %v", ok, err)
		}
	}
	if o, _, err := parseFlags([]string{"--local-dns-axfr-from=10.89.0.7/24, fd00::/64"}); err != nil {
		t.Errorf("valid --local-dns-axfr-from refused: %v", err)
	} else if cfg, err := o.config(nil, environ{}); err != nil || fmt.Sprint(cfg.DNSTransferFrom) != "[10.89.0.0/24 fd00::/64]" {
		t.Errorf("--local-dns-axfr-from: DNSTransferFrom %v, %v; want [10.89.0.0/24 fd00::/64]", cfg.DNSTransferFrom, err)
	}
	if _, _, err := parseFlags([]string{"--ext-gslb-clusters=us=127.0.0.12:5353,ap=127.0.0.13:5353", "--geo-tag=eu"}); err != nil {
		t.Errorf("valid Gslb flags refused: %v", err)
	}
}

// TestRun_BusyAddressFailsBeforeAnythingStarts (issue 11, item 7): a second `make run` while
// 5353 (or the metrics port) is taken must fail at once, naming the flag to change, and start
// nothing: no local control plane, no lock in --local-dir.
func TestRun_BusyAddressFailsBeforeAnythingStarts(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pc.Close() }()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tcp.Close() }()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"DNS", []string{"--local-dns-addr=" + pc.LocalAddr().String(), "--metrics-bind-address=0"}, "--local-dns-addr " + pc.LocalAddr().String()},
		{"metrics", []string{"--local-dns-addr=127.0.0.1:0", "--metrics-bind-address=" + tcp.Addr().String()}, "--metrics-bind-address " + tcp.Addr().String()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			o, _, err := parseFlags(append([]string{"--local", "--local-dir=" + dir, "--health-probe-bind-address=0"}, c.args...))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			err = run(ctx, o)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "pass "+strings.Fields(c.want)[0]) {
				t.Fatalf("run: %v, want an error naming %q and the flag to change", err, c.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Fatalf("something started before the check: %s holds %d entries", dir, len(entries))
			}
		})
	}
}

// TestOptionsConfig_MapsFlagsAndEnvironment: the flags and POD_* reach the composition root's
// Config; a wildcard --local-dns-addr takes POD_IP (else loopback) as the glue address.
func TestOptionsConfig_MapsFlagsAndEnvironment(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		env      environ
		wantGlue string
	}{
		{"loopback", []string{"--local-dns-addr=127.0.0.9:5353"}, environ{podIP: "10.0.0.7"}, "127.0.0.9"},
		{"wildcard in a pod", []string{"--local-dns-addr=0.0.0.0:53"}, environ{podIP: "10.0.0.7"}, "10.0.0.7"},
		{"wildcard outside a pod", []string{"--local-dns-addr=:53"}, environ{}, "127.0.0.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--local-dir=/tmp/x", "--ext-gslb-clusters=us=127.0.0.12:5353", "--owner-id=me", "--leader-elect"}, c.args...)
			o, _, err := parseFlags(args)
			if err != nil {
				t.Fatal(err)
			}
			c.env.podName, c.env.podNamespace = "pod-a", "dns-system"
			cfg, err := o.config(nil, c.env)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.NameServerAddr.String(); got != c.wantGlue {
				t.Errorf("glue = %s, want %s", got, c.wantGlue)
			}
			if cfg.ZoneDir != "/tmp/x/zones" || cfg.OwnerID != "me" || !cfg.LeaderElect || cfg.PodName != "pod-a" || cfg.PodNamespace != "dns-system" {
				t.Errorf("config = %+v", cfg)
			}
			if len(cfg.Peers) != 1 || cfg.Peers[0].GeoTag != "us" || cfg.ZoneResync != 2*time.Hour || cfg.LBResolver == nil {
				t.Errorf("peers %+v, resync %s, LB resolver %v", cfg.Peers, cfg.ZoneResync, cfg.LBResolver)
			}
		})
	}
}

func TestSetWatchList_DecidesOnlyWatchListClient(t *testing.T) {
	orig := clientfeatures.FeatureGates()
	t.Cleanup(func() { clientfeatures.ReplaceFeatureGates(orig) })
	for _, on := range []bool{false, true} {
		setWatchList(on)
		if got := clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient); got != on {
			t.Errorf("setWatchList(%v): WatchListClient enabled = %v", on, got)
		}
		if got, want := clientfeatures.FeatureGates().Enabled(clientfeatures.AtomicFIFO), orig.Enabled(clientfeatures.AtomicFIFO); got != want {
			t.Errorf("setWatchList(%v): AtomicFIFO = %v, want the base's %v", on, got, want)
		}
		clientfeatures.ReplaceFeatureGates(orig)
	}
}

// TestParseFlags_MetricsAndNamespaces (issue 14, item 5): --local serves /metrics on loopback
// plain HTTP unless the flag says otherwise; --watch-namespaces splits, trims and reaches the
// composition root with --metrics-secure.
func TestParseFlags_MetricsAndNamespaces(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		wantAddr   string
		wantSecure bool
		wantNS     []string
	}{
		{"cluster default", nil, ":8443", true, nil},
		{"--local", []string{"--local"}, "127.0.0.1:8080", true, nil},
		{"--local with an address", []string{"--local", "--metrics-bind-address=127.0.0.1:18080"}, "127.0.0.1:18080", true, nil},
		{"--local with metrics off", []string{"--local", "--metrics-bind-address=0"}, "0", true, nil},
		{"insecure", []string{"--metrics-secure=false"}, ":8443", false, nil},
		{"namespaces", []string{"--watch-namespaces= a, b,,", "--owner-id=me"}, ":8443", true, []string{"a", "b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, _, err := parseFlags(c.args)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := o.config(nil, environ{})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.MetricsAddr != c.wantAddr || cfg.MetricsSecure != c.wantSecure || strings.Join(cfg.WatchNamespaces, ",") != strings.Join(c.wantNS, ",") {
				t.Errorf("metrics %q secure %v namespaces %q, want %q %v %q", cfg.MetricsAddr, cfg.MetricsSecure, cfg.WatchNamespaces, c.wantAddr, c.wantSecure, c.wantNS)
			}
		})
	}
}

package app

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/rest"

	"github.com/dnsplane/dnsplane/pkg/source"
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
		{"--local-dns-udp-sockets", o.localDNSUDP, 0},            // one per core
		{"--local-dns-drain", o.localDNSDrain, time.Duration(0)}, // stop at once; the chart sets 8s
		{"--heartbeat-interval", o.heartbeatInterval, 30 * time.Second},
		{"--heartbeat-threshold", o.heartbeatThreshold, 5 * time.Minute},
		{"--soa-poll-interval", o.soaPollInterval, 30 * time.Second},
		{"--zone-resync-interval", o.zoneResync, 2 * time.Hour},
		{"--scrape-interval", o.scrape, 2 * time.Hour},
		{"--gslb-interval", o.gslbInterval, 30 * time.Second},
		{"--gslb-peer-timeout", o.gslbPeerTimeout, 2 * time.Second},
		{"--gslb-peer-port", o.gslbPeerPort, 53},
		{"--provider-request-timeout", o.providerTimeout, 30 * time.Second}, // pdns.DefaultTimeout's
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
		{[]string{"--local-dns-udp-sockets=-1"}, "--local-dns-udp-sockets -1"},
		{[]string{"--local-dns-drain=-1s"}, "--local-dns-drain -1s"},
		{[]string{"--dns-resolver=nohost"}, "--dns-resolver"},
		{[]string{"--soa-poll-interval=0s"}, "--soa-poll-interval must be positive"},
		{[]string{"--provider-request-timeout=0s"}, "--provider-request-timeout must be positive"},
		{[]string{"--ext-gslb-clusters=us=127.0.0.12:5353,broken"}, `--ext-gslb-clusters: gslb peers: entry 2 "broken"`},
		{[]string{"--gslb-ns-address=not-an-ip"}, "--gslb-ns-address"},
		{[]string{"--gslb-source-address=192.0.2.1,192.0.2.2"}, "--gslb-source-address: source address \"192.0.2.2\": a second address of its family"},
		{[]string{"--kube-api-qps=0"}, "--kube-api-qps"},
		{[]string{"--pprof-bind-address=:6060"}, "--pprof-bind-address"},
		{[]string{"--pprof-bind-address=0.0.0.0:6060"}, "must be a loopback address"},
		{[]string{"--pprof-bind-address=10.0.0.1:6060"}, "must be a loopback address"},
		{[]string{"--watch-namespaces=a,b"}, "--watch-namespaces needs --owner-id"},
		{[]string{"--watch-namespaces=a,B_x", "--owner-id=me"}, `--watch-namespaces: "B_x" is not a namespace name`},
		{[]string{"--local-allow-transfer=10.0.0.0/8,10.1.2.3/33"}, `--local-allow-transfer: "10.1.2.3/33" is neither a CIDR prefix`},
		{[]string{"--local-allow-transfer=secondary.example"}, `--local-allow-transfer: "secondary.example"`},
		{[]string{"--local-notify=192.0.2.7"}, `--local-notify: "192.0.2.7" is not host:port`},
		{[]string{"--local-notify=192.0.2.7:0"}, `--local-notify: "192.0.2.7:0" needs a host and a port in 1..65535`},
		{[]string{"--local-notify=:53"}, `--local-notify: ":53" needs a host`},
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
	if _, _, err := parseFlags([]string{"--ext-gslb-clusters=us=127.0.0.12:5353,ap=127.0.0.13:5353", "--geo-tag=eu"}); err != nil {
		t.Errorf("valid Gslb flags refused: %v", err)
	}
}

// TestParseFlags_SecondariesFlags: --local-allow-transfer takes prefixes and
// bare IPs (one address), --local-notify host:port targets; both reach app.Config.
func TestParseFlags_SecondariesFlags(t *testing.T) {
	o, _, err := parseFlags([]string{"--local-allow-transfer=10.1.2.3/8, 192.0.2.7,2001:db8::/32", "--local-notify=192.0.2.7:53,ns2.example:5300"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.config(nil, environ{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range cfg.AllowTransfer {
		got = append(got, p.String())
	}
	if want := "10.0.0.0/8 192.0.2.7/32 2001:db8::/32"; strings.Join(got, " ") != want {
		t.Errorf("AllowTransfer = %v, want %s", got, want)
	}
	if want := "192.0.2.7:53 ns2.example:5300"; strings.Join(cfg.NotifyTargets, " ") != want {
		t.Errorf("NotifyTargets = %v, want %s", cfg.NotifyTargets, want)
	}
	if cfg.TSIG != nil {
		t.Errorf("TSIG %v without --local-tsig-key", cfg.TSIG)
	}
}

// TestParseFlags_TSIGKey: --local-tsig-key=name:algorithm:secret-file reads a tsig-keygen key
// file into app.Config.TSIG; errors name the flag and never show the secret.
func TestParseFlags_TSIGKey(t *testing.T) {
	const secret = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA=="
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "xfr.key"), filepath.Join(dir, "bad.key")
	if err := os.WriteFile(good, []byte("key \"xfr\" {\n\talgorithm hmac-sha256;\n\tsecret \""+secret+"\";\n};\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("not-base64!"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, _, err := parseFlags([]string{"--local-tsig-key=xfr:hmac-sha256:" + good})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.config(nil, environ{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TSIG == nil || cfg.TSIG.Name != "xfr." || cfg.TSIG.Algorithm != "hmac-sha256." || cfg.TSIG.Secret != secret {
		t.Fatalf("TSIG = %v", cfg.TSIG)
	}
	if s := fmt.Sprintf("%+v", cfg); strings.Contains(s, secret) {
		t.Errorf("the config prints the secret: %s", s)
	}
	for _, c := range []struct{ flag, want string }{
		{"xfr:hmac-sha256", "want name:algorithm:secret-file"},
		{"xfr:hmac-md5:" + good, `--local-tsig-key: TSIG algorithm "hmac-md5"`},
		{"xfr:hmac-sha256:" + filepath.Join(dir, "missing"), "--local-tsig-key: read the secret"},
		{"xfr:hmac-sha256:" + bad, "--local-tsig-key: TSIG secret is not base64"},
	} {
		_, _, err := parseFlags([]string{"--local-tsig-key=" + c.flag})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "not-base64!") {
			t.Errorf("--local-tsig-key=%s: %v, want an error with %q", c.flag, err, c.want)
		}
	}
}

// TestRun_BusyAddressFailsBeforeAnythingStarts: a second `make run` while
// 5353 (or the metrics port) is taken must fail at once, naming the flag to change, and start
// nothing: no local control plane, no lock in --local-dir.
func TestRun_BusyAddressFailsBeforeAnythingStarts(t *testing.T) {
	// run sets client-go's process-wide feature gates (--kube-watch-list); the package's other
	// tests keep client-go's own.
	orig := clientfeatures.FeatureGates()
	t.Cleanup(func() { clientfeatures.ReplaceFeatureGates(orig) })
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
			args := append([]string{"--local-dir=/tmp/x", "--ext-gslb-clusters=us=127.0.0.12:5353", "--owner-id=me", "--leader-elect", "--local-dns-drain=8s", "--provider-request-timeout=5s"}, c.args...)
			o, _, err := parseFlags(args)
			if err != nil {
				t.Fatal(err)
			}
			c.env.podNamespace = "dns-system"
			cfg, err := o.config(nil, c.env)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.NameServerAddr.String(); got != c.wantGlue {
				t.Errorf("glue = %s, want %s", got, c.wantGlue)
			}
			if cfg.ZoneDir != "/tmp/x/zones" || cfg.OwnerID != "me" || !cfg.LeaderElect || cfg.LeaderElectionNamespace != "dns-system" || cfg.ZoneStoreNamespace != "dns-system" {
				t.Errorf("config = %+v", cfg)
			}
			if cfg.DNSDrain != 8*time.Second {
				t.Errorf("DNSDrain = %s, want 8s (--local-dns-drain)", cfg.DNSDrain)
			}
			if cfg.ProviderRequestTimeout != 5*time.Second {
				t.Errorf("ProviderRequestTimeout = %s, want 5s (--provider-request-timeout)", cfg.ProviderRequestTimeout)
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

// TestParseFlags_MetricsAndNamespaces: --local serves /metrics on loopback
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

// TestParseFlags_Sources: the sources' flags take external-dns's forms (repeatable, or
// comma-separated), reach app.Config, are off by default, and bad values are refused naming the
// flag (--namespace outside --watch-namespaces too).
func TestParseFlags_Sources(t *testing.T) {
	o, _, err := parseFlags(nil)
	if err != nil || len(o.sources.Sources) != 0 {
		t.Fatalf("no flag: sources %v, err %v", o.sources.Sources, err)
	}
	o, _, err = parseFlags([]string{"--source=service,ingress", "--source=crd", "--domain-filter=example.com", "--domain-filter=example.org,example.net",
		"--exclude-domains=internal.example.com", "--annotation-filter=team=a", "--label-filter=env!=dev", "--ingress-class=nginx,traefik",
		"--gateway-name=public", "--namespace=apps", "--publish-internal-services"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := o.config(&rest.Config{}, environ{})
	if err != nil {
		t.Fatal(err)
	}
	want := source.Config{Sources: []string{"service", "ingress", "crd"},
		Domains:          source.DomainFilter{Include: []string{"example.com", "example.org", "example.net"}, Exclude: []string{"internal.example.com"}},
		AnnotationFilter: "team=a", LabelFilter: "env!=dev", IngressClasses: []string{"nginx", "traefik"}, GatewayName: "public", Namespace: "apps", PublishInternal: true}
	if !reflect.DeepEqual(c.Sources, want) {
		t.Errorf("app.Config.Sources = %+v, want %+v", c.Sources, want)
	}
	// The flags that change what the sources publish, as external-dns names them.
	for _, row := range []struct {
		args []string
		want func(*source.Config)
	}{
		{nil, func(c *source.Config) {}},
		{[]string{"--exclude-unschedulable"}, func(c *source.Config) {}},
		{[]string{"--exclude-unschedulable=false"}, func(c *source.Config) { c.IncludeUnschedulable = true }},
		{[]string{"--no-exclude-unschedulable"}, func(c *source.Config) { c.IncludeUnschedulable = true }},
		{[]string{"--service-type-filter=LoadBalancer", "--service-type-filter=NodePort,ExternalName"}, func(c *source.Config) { c.ServiceTypes = []string{"LoadBalancer", "NodePort", "ExternalName"} }},
		{[]string{"--ignore-hostname-annotation"}, func(c *source.Config) { c.IgnoreHostnameAnnotation = true }},
		{[]string{"--ignore-ingress-tls-spec", "--ignore-ingress-rules-spec"}, func(c *source.Config) { c.IgnoreIngressTLSSpec, c.IgnoreIngressRulesSpec = true, true }},
		{[]string{"--publish-host-ip"}, func(c *source.Config) { c.PublishHostIP = true }},
		{[]string{"--always-publish-not-ready-addresses"}, func(c *source.Config) { c.AlwaysPublishNotReady = true }},
		{[]string{"--namespace=apps", "--gateway-namespace=infra"}, func(c *source.Config) { c.Namespace, c.GatewayNamespace = "apps", "infra" }},
		{[]string{"--managed-record-types=A", "--managed-record-types=CNAME,SRV"}, func(c *source.Config) { c.ManagedRecordTypes = []string{"A", "CNAME", "SRV"} }},
	} {
		o, _, err := parseFlags(row.args)
		if err != nil {
			t.Fatalf("%v: %v", row.args, err)
		}
		c, err := o.config(&rest.Config{}, environ{})
		if err != nil {
			t.Fatalf("%v: %v", row.args, err)
		}
		want := source.Config{}
		row.want(&want)
		if !reflect.DeepEqual(c.Sources, want) {
			t.Errorf("%v: app.Config.Sources = %+v, want %+v", row.args, c.Sources, want)
		}
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--source=pods"}, `--source "pods"`},
		{[]string{"--domain-filter=bad domain"}, "--domain-filter"},
		{[]string{"--label-filter=a in (b"}, "--label-filter"},
		{[]string{"--service-type-filter=Headless"}, `--service-type-filter "Headless"`},
		{[]string{"--watch-namespaces=a", "--owner-id=me", "--namespace=b"}, "--namespace \"b\" is not one of --watch-namespaces"},
		{[]string{"--watch-namespaces=a", "--owner-id=me", "--gateway-namespace=b"}, "--gateway-namespace \"b\" is not one of --watch-namespaces"},
		{[]string{"--managed-record-types=srv"}, `--managed-record-types "srv"`},
	} {
		if _, _, err := parseFlags(bad.args); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: got %v, want an error mentioning %q", bad.args, err, bad.want)
		}
	}
}

// TestOptionsNamespaces: the Lease's namespace is --leader-election-namespace, else
// POD_NAMESPACE; the zone store is in ConfigMaps there unless --local-zone-store=dir; outside a
// pod, --leader-elect needs the flag unless --local.
func TestOptionsNamespaces(t *testing.T) {
	for _, c := range []struct {
		name                 string
		args                 []string
		env                  environ
		wantLeader, wantZone string
		wantErr              string
	}{
		{"in a pod", []string{"--leader-elect"}, environ{podNamespace: "dns"}, "dns", "dns", ""},
		{"flag over the pod's", []string{"--leader-elect", "--leader-election-namespace=other"}, environ{podNamespace: "dns"}, "other", "other", ""},
		{"dir store in a pod", []string{"--leader-elect", "--local-zone-store=dir"}, environ{podNamespace: "dns"}, "dns", "", ""},
		{"outside a pod with the flag", []string{"--leader-elect", "--leader-election-namespace=ns1"}, environ{}, "ns1", "ns1", ""},
		{"outside a pod without it", []string{"--leader-elect"}, environ{}, "", "", "--leader-election-namespace"},
		{"make run", []string{"--local"}, environ{}, "", "", ""},
		{"make run with leader election", []string{"--local", "--leader-elect"}, environ{}, "", "", ""},
		{"objects without a namespace", []string{"--local", "--local-zone-store=objects"}, environ{}, "", "", "--leader-election-namespace"},
		{"dns service without a namespace", []string{"--local", "--local-dns-service=dns"}, environ{}, "", "", "--leader-election-namespace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, _, err := parseFlags(c.args)
			if err != nil {
				t.Fatal(err)
			}
			leader, zones, err := o.namespaces(c.env)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, c.wantErr)
				}
				return
			}
			if err != nil || leader != c.wantLeader || zones != c.wantZone {
				t.Errorf("namespaces = %q, %q, %v; want %q, %q", leader, zones, err, c.wantLeader, c.wantZone)
			}
		})
	}
	if _, _, err := parseFlags([]string{"--local-zone-store=etcd"}); err == nil || !strings.Contains(err.Error(), "--local-zone-store") {
		t.Errorf("--local-zone-store=etcd: %v", err)
	}
}

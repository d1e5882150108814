// Command manager is dnsplane's operator. It parses and validates flags and environment
// (POD_NAME, POD_NAMESPACE, POD_IP) into one app.Config; internal/app builds, in one
// controller-runtime manager: the DNSZone, DNSEndpoint, DNSRecord and Gslb controllers; the
// provider factory (credentials from Secrets; each provider it builds, the embedded "local" one
// included, is counted and guarded); one zone writer per hosted zone; the nameserver scraper of
// parent zones; the DNSRecord heartbeat reporter; and the embedded authoritative DNS server with
// its persistent store. The scraper and the reporter run in the leader only. In a pod with leader
// election (POD_NAME and POD_NAMESPACE set) the leader labels its own pod for the dns Service
// (pkg/leaderlabel); POD_IP is the embedded server's glue address when --local-dns-addr listens on
// every address. With --local it also starts a local control plane (etcd, kube-apiserver,
// kube-controller-manager) so the whole product runs on one machine with no cluster and no cloud
// account. --version prints the build (internal/version) and exits 0 before anything else is
// validated or started. Flags are listed in docs/api.md, "The manager".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dnsplane/dnsplane/config/crd"
	"github.com/dnsplane/dnsplane/internal/app"
	"github.com/dnsplane/dnsplane/internal/version"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/localcp"
)

// options are the manager's flags; docs/api.md lists them.
type options struct {
	version bool

	metricsAddr, probeAddr string
	metricsSecure          bool
	pprofAddr              string
	leaderElect            bool
	// watchNamespaces is --watch-namespaces split at commas; empty = every namespace.
	watchNamespaces []string

	local        bool
	localDir     string
	localDNSAddr string
	// axfrFrom is --local-dns-axfr-from split at commas: CIDR prefixes.
	axfrFrom []string
	ownerID  string

	heartbeatInterval, heartbeatThreshold time.Duration
	soaPollInterval, zoneResync, scrape   time.Duration
	dnsResolver                           string
	kubeQPS                               float64
	kubeBurst                             int
	kubeWatchList                         bool

	geoTag, extGslbClusters       string
	gslbInterval, gslbPeerTimeout time.Duration
	gslbPeerPort                  int
	gslbNSAddress                 string
}

func parseFlags(args []string) (options, *zap.Options, error) {
	var o options
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.BoolVar(&o.version, "version", false, "Print the version, revision and Go version, then exit 0 (no other flag is validated).")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", defaultMetricsAddr, "Address of the /metrics endpoint; 0 disables it. A loopback host (127.0.0.1, ::1, localhost) serves plain HTTP with no token. Default "+defaultMetricsAddr+", or "+localMetricsAddr+" with --local.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true, "Serve /metrics over HTTPS to callers whose Kubernetes token may get the /metrics non-resource URL (TokenReview and SubjectAccessReview); ignored for a loopback --metrics-bind-address.")
	watch := fs.String("watch-namespaces", "", "Comma-separated namespaces to watch, e.g. a,b (needs --owner-id); empty = every namespace.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints; 0 disables them.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "", "Loopback host:port of Go's /debug/pprof/ endpoints, for profiling; empty or 0 disables them.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader: only the leader reconciles, heartbeats and writes.")
	fs.BoolVar(&o.local, "local", false, "Start a local control plane (etcd, kube-apiserver, kube-controller-manager) from bin/ or the version cache, install the CRDs and write <local-dir>/kubeconfig.")
	fs.StringVar(&o.localDir, "local-dir", localcp.DefaultDir, "Where the local control plane, its kubeconfig and the embedded server's zone data live.")
	fs.StringVar(&o.localDNSAddr, "local-dns-addr", "127.0.0.1:5353", "host:port of the embedded authoritative DNS server (UDP and TCP) for the dnsplane.io/local provider; AXFR is allowed from loopback.")
	axfrFrom := fs.String("local-dns-axfr-from", "", "Comma-separated CIDR prefixes of clients allowed to AXFR from the embedded server over TCP, besides loopback (e.g. 10.89.0.0/24).")
	fs.StringVar(&o.ownerID, "owner-id", "", "This cluster's owner ID in TXT registries (default: the UID of the kube-system namespace).")
	fs.DurationVar(&o.heartbeatInterval, "heartbeat-interval", 30*time.Second, "DNSRecord heartbeat period.")
	fs.DurationVar(&o.heartbeatThreshold, "heartbeat-threshold", 5*time.Minute, "A contributor whose heartbeat is older than this is failing.")
	fs.DurationVar(&o.soaPollInterval, "soa-poll-interval", 30*time.Second, "How often a DNSZone's SOA is queried until it answers.")
	fs.DurationVar(&o.zoneResync, "zone-resync-interval", 2*time.Hour, "How often a DNSZone is synced with its provider, and a zone writer re-reads its zone.")
	fs.DurationVar(&o.scrape, "scrape-interval", 2*time.Hour, "How often parent zones' NS records are scraped.")
	fs.StringVar(&o.dnsResolver, "dns-resolver", "", "host:port for SOA checks and scraper queries when neither the provider nor DNS_ADDRESS says otherwise (default: the system resolver).")
	fs.Float64Var(&o.kubeQPS, "kube-api-qps", 500, "Kubernetes client requests per second.")
	fs.IntVar(&o.kubeBurst, "kube-api-burst", 1000, "Kubernetes client burst.")
	fs.BoolVar(&o.kubeWatchList, "kube-watch-list", false, "Sync informers with a streaming watch list (client-go's WatchListClient) instead of a paged list; off by default because a watch list's first sync waits for the API server's next bookmark, about a second (kubefeatures.go).")
	fs.StringVar(&o.geoTag, "geo-tag", "", "This cluster's Gslb geo tag.")
	fs.StringVar(&o.extGslbClusters, "ext-gslb-clusters", "", "Gslb peers: comma-separated geotag=host:port.")
	fs.DurationVar(&o.gslbInterval, "gslb-interval", 30*time.Second, "How often Gslb peers are queried.")
	fs.DurationVar(&o.gslbPeerTimeout, "gslb-peer-timeout", 2*time.Second, "Timeout of one Gslb peer query.")
	fs.IntVar(&o.gslbPeerPort, "gslb-peer-port", 53, "DNS port of peers discovered from the edge NS set.")
	fs.StringVar(&o.gslbNSAddress, "gslb-ns-address", "", "Glue address of this cluster's Gslb name server in the edge zone.")
	zopts := &zap.Options{Development: false}
	zopts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, nil, err
	}
	if o.version {
		return o, zopts, nil
	}
	if o.local && !flagSet(fs, "metrics-bind-address") {
		o.metricsAddr = localMetricsAddr
	}
	o.watchNamespaces = splitList(*watch)
	o.axfrFrom = splitList(*axfrFrom)
	return o, zopts, o.validate()
}

// The --metrics-bind-address defaults: Kubebuilder's secure port in a cluster, loopback plain
// HTTP with --local (make run), where nothing but this machine can reach it.
const (
	defaultMetricsAddr = ":8443"
	localMetricsAddr   = "127.0.0.1:8080"
)

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// splitList returns the comma-separated items of s, trimmed, without empty ones.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func (o options) validate() error {
	var errs []error
	if len(o.watchNamespaces) > 0 && o.ownerID == "" {
		errs = append(errs, errors.New("--watch-namespaces needs --owner-id: the default owner ID is the UID of the kube-system namespace, which a manager limited to namespaces may not read"))
	}
	for _, ns := range o.watchNamespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--watch-namespaces: %q is not a namespace name: %s", ns, strings.Join(msgs, "; ")))
		}
	}
	if _, _, err := net.SplitHostPort(o.localDNSAddr); err != nil {
		errs = append(errs, fmt.Errorf("--local-dns-addr %q: %w", o.localDNSAddr, err))
	}
	if _, err := parsePrefixes(o.axfrFrom); err != nil {
		errs = append(errs, err)
	}
	if o.dnsResolver != "" {
		if _, _, err := net.SplitHostPort(o.dnsResolver); err != nil {
			errs = append(errs, fmt.Errorf("--dns-resolver %q: %w", o.dnsResolver, err))
		}
	}
	for name, d := range map[string]time.Duration{
		"--heartbeat-interval": o.heartbeatInterval, "--heartbeat-threshold": o.heartbeatThreshold,
		"--soa-poll-interval": o.soaPollInterval, "--zone-resync-interval": o.zoneResync,
		"--scrape-interval": o.scrape, "--gslb-interval": o.gslbInterval, "--gslb-peer-timeout": o.gslbPeerTimeout,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", name, d))
		}
	}
	if _, err := gslb.ParsePeers(o.extGslbClusters); err != nil {
		errs = append(errs, fmt.Errorf("--ext-gslb-clusters: %w", err))
	}
	if o.gslbNSAddress != "" {
		if _, err := netip.ParseAddr(o.gslbNSAddress); err != nil {
			errs = append(errs, fmt.Errorf("--gslb-ns-address: %w", err))
		}
	}
	if err := loopback(o.pprofAddr); err != nil {
		errs = append(errs, fmt.Errorf("--pprof-bind-address: %w", err))
	}
	if o.kubeQPS <= 0 || o.kubeBurst <= 0 {
		errs = append(errs, errors.New("--kube-api-qps and --kube-api-burst must be positive"))
	}
	return errors.Join(errs...)
}

// loopback accepts "", "0" (off) or a host:port whose host is a loopback IP or localhost: the
// profiles show internals (names, targets) and are never served beyond the machine.
func loopback(hostport string) error {
	if hostport == "" || hostport == "0" {
		return nil
	}
	if _, _, err := net.SplitHostPort(hostport); err != nil {
		return fmt.Errorf("%q: %w", hostport, err)
	}
	if !app.IsLoopbackAddr(hostport) {
		return fmt.Errorf("%q: the host must be a loopback address (127.0.0.1, ::1 or localhost)", hostport)
	}
	return nil
}

func main() {
	o, zopts, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if o.version {
		fmt.Println(version.Get())
		os.Exit(0)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(zopts)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		// The reason to exit, for a person at a terminal as much as for a pod log: one line, no
		// stack trace (zap adds one to every Error).
		fmt.Fprintln(os.Stderr, "manager stopped:", err)
		os.Exit(1)
	}
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
	setWatchList(o.kubeWatchList)
	if err := checkAddrs(o); err != nil {
		return err
	}
	var cfg *rest.Config
	if o.local {
		cp, err := localcp.Start(ctx, localcp.Options{Dir: o.localDir, CRDs: crd.Definitions(), Log: ctrl.Log.WithName("localcp")})
		if err != nil {
			return fmt.Errorf("start local control plane: %w", err)
		}
		defer func() {
			if err := cp.Stop(); err != nil {
				log.Error(err, "stop local control plane")
			}
		}()
		cfg = cp.Config()
		log.Info("local control plane ready", "kubeconfig", cp.KubeconfigPath(), "after", time.Since(start).Round(time.Millisecond).String())
	} else {
		var err error
		if cfg, err = ctrl.GetConfig(); err != nil {
			return fmt.Errorf("kubeconfig: %w", err)
		}
	}
	cfg.QPS, cfg.Burst = float32(o.kubeQPS), o.kubeBurst
	appCfg, err := o.config(cfg, environ{podName: os.Getenv("POD_NAME"), podNamespace: os.Getenv("POD_NAMESPACE"), podIP: os.Getenv("POD_IP")})
	if err != nil {
		return err
	}
	a, err := app.New(ctx, appCfg)
	if err != nil {
		return err
	}
	log.Info("manager built", "local", o.local, "startup", time.Since(start).Round(time.Millisecond).String())
	return a.Run(ctx)
}

// environ is the manager's environment: the downward API's POD_NAME, POD_NAMESPACE and POD_IP
// (config/manager); each may be empty outside a pod.
type environ struct {
	podName, podNamespace, podIP string
}

// config returns the composition root's Config of the flags o and the environment env, over the
// API server rest. Errors name the flag.
func (o options) config(rest *rest.Config, env environ) (app.Config, error) {
	glue, err := listenAddr(o.localDNSAddr, env.podIP)
	if err != nil {
		return app.Config{}, err
	}
	peers, err := gslb.ParsePeers(o.extGslbClusters)
	if err != nil {
		return app.Config{}, fmt.Errorf("--ext-gslb-clusters: %w", err)
	}
	axfrFrom, err := parsePrefixes(o.axfrFrom)
	if err != nil {
		return app.Config{}, err
	}
	return app.Config{
		Rest: rest, MetricsAddr: o.metricsAddr, MetricsSecure: o.metricsSecure, ProbeAddr: o.probeAddr, PprofAddr: o.pprofAddr,
		LeaderElect: o.leaderElect, WatchNamespaces: o.watchNamespaces,
		PodName: env.podName, PodNamespace: env.podNamespace,
		ZoneDir: filepath.Join(o.localDir, "zones"), DNSAddr: o.localDNSAddr, DNSTransferFrom: axfrFrom, NameServerAddr: glue,
		OwnerID: o.ownerID, HeartbeatInterval: o.heartbeatInterval, HeartbeatThreshold: o.heartbeatThreshold,
		SOAPollInterval: o.soaPollInterval, ZoneResync: o.zoneResync, ScrapeInterval: o.scrape, DNSResolver: o.dnsResolver,
		GeoTag: o.geoTag, Peers: peers, GslbInterval: o.gslbInterval, GslbPeerTimeout: o.gslbPeerTimeout,
		GslbPeerPort: o.gslbPeerPort, GslbNSAddress: o.gslbNSAddress, LBResolver: net.DefaultResolver,
	}, nil
}

// parsePrefixes parses --local-dns-axfr-from's CIDR prefixes (netip.ParsePrefix syntax, e.g.
// 10.89.0.0/24 or fd00::/64); the error names the flag and the bad entry.
func parsePrefixes(ss []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range ss {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("--local-dns-axfr-from %q: %w", s, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// listenAddr returns the glue address of the embedded server on hostport: its host, or, for a
// wildcard host, podIP (POD_IP), else 127.0.0.1. Errors name --local-dns-addr.
func listenAddr(hostport, podIP string) (netip.Addr, error) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("--local-dns-addr %q: %w", hostport, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		// Glue must be reachable: use the pod's address where we have one.
		if podIP != "" {
			host = podIP
		} else {
			host = "127.0.0.1"
		}
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("--local-dns-addr %q: the host must be an IP address: %w", hostport, err)
	}
	return a, nil
}

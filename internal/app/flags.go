package app

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/localcp"
	"github.com/dnsplane/dnsplane/pkg/source"
)

// options are the manager's flags; docs/api.md lists them.
type options struct {
	version bool

	metricsAddr, probeAddr string
	metricsSecure          bool
	pprofAddr              string
	leaderElect            bool
	leaderElectionNS       string
	zoneStore              string
	dnsService             string
	// watchNamespaces is --watch-namespaces split at commas; empty = every namespace.
	watchNamespaces []string

	local         bool
	localDir      string
	localDNSAddr  string
	localDNSUDP   int
	localDNSDrain time.Duration
	geoIPDatabase string
	ownerID       string
	// localAllowTransfer and localNotify are --local-allow-transfer and --local-notify, parsed
	// by validate.
	localAllowTransfer []netip.Prefix
	localNotify        []string
	// localTSIG is --local-tsig-key, its secret read from the file; nil = none.
	localTSIG *dnswire.TSIGKey

	heartbeatInterval, heartbeatThreshold time.Duration
	soaPollInterval, zoneResync, scrape   time.Duration
	writeLinger                           time.Duration
	dnsResolver                           string
	kubeQPS                               float64
	kubeBurst                             int
	kubeWatchList                         bool

	geoTag, extGslbClusters       string
	gslbInterval, gslbPeerTimeout time.Duration
	providerTimeout               time.Duration
	servedInterval                time.Duration
	servedStale                   time.Duration
	dynUpdateTTL                  time.Duration
	dynUpdateRate                 float64
	dynUpdateBurst                int
	servedZone                    time.Duration
	gslbPeerPort                  int
	gslbNSAddress                 string
	gslbSource                    string
	gslb                          gslbFlags

	extDNS externalDNSFlags
	// sources are --source and its filters (pkg/source), external-dns's flag names.
	sources source.Config
}

// listFlag is a repeatable flag whose values may also be comma-separated, as external-dns's
// list flags are (--source=service --source=ingress or --source=service,ingress).
type listFlag struct{ list *[]string }

func (f listFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f listFlag) Set(v string) error {
	*f.list = append(*f.list, source.SplitList(v)...)
	return nil
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
	fs.StringVar(&o.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader election Lease and of the zone store's ConfigMaps (default: POD_NAMESPACE, the pod's namespace). Outside a pod, --leader-elect needs it unless --local.")
	fs.StringVar(&o.zoneStore, "local-zone-store", zoneStoreAuto, "Where the embedded server's zones live: objects (ConfigMaps in the leader election namespace, served by every replica), dir (<local-dir>/zones, one replica), or auto: objects when that namespace is known, else dir.")
	fs.StringVar(&o.dnsService, "local-dns-service", "", "Name of the dns Service (in the leader election namespace) whose load balancer or cluster IPs are the glue of the zones' ns1, followed as they change; empty = the --local-dns-addr host (or POD_IP).")
	fs.BoolVar(&o.local, "local", false, "Start a local control plane (etcd, kube-apiserver, kube-controller-manager) from bin/ or the version cache, install the CRDs and write <local-dir>/kubeconfig.")
	fs.StringVar(&o.localDir, "local-dir", localcp.DefaultDir, "Where the local control plane, its kubeconfig and the embedded server's zone data live.")
	fs.StringVar(&o.localDNSAddr, "local-dns-addr", "127.0.0.1:5353", "host:port of the embedded authoritative DNS server (UDP and TCP) for the dnsplane.io/local provider; AXFR and IXFR are allowed from loopback and --local-allow-transfer.")
	fs.DurationVar(&o.localDNSDrain, "local-dns-drain", 0, "How long the embedded DNS server goes on answering after the manager is told to stop (SIGTERM), with /readyz failing, so that its endpoint leaves the dns Service and kube-proxy forgets its UDP flows before the sockets close; 0 = stop at once. Keep it below the pod's termination grace period minus the preStop sleep.")
	fs.StringVar(&o.geoIPDatabase, "geoip-database", "", "Path of a MaxMind-format GeoIP database (GeoLite2/GeoIP2 Country or City, DB-IP) that locates the clients of geo Gslbs in the embedded DNS server, mounted from a Secret, ConfigMap or volume; checked every 10s and reloaded when it changes. Empty = none: geo Gslbs then match only their CIDR regions and the default.")
	fs.IntVar(&o.localDNSUDP, "local-dns-udp-sockets", 0, "UDP sockets of the embedded DNS server, bound to --local-dns-addr with SO_REUSEPORT and each read by its own loop; 0 = one per core (GOMAXPROCS), 1 = one socket without SO_REUSEPORT.")
	allowTransfer := fs.String("local-allow-transfer", "", "Comma-separated networks (CIDR, or one IP) whose clients may AXFR and IXFR the embedded server's zones, besides loopback, which always may; e.g. 10.0.0.0/8,192.0.2.7.")
	notify := fs.String("local-notify", "", "Comma-separated host:port of secondaries sent a NOTIFY (RFC 1996) after every change of an embedded zone; e.g. 192.0.2.7:53.")
	tsigKey := fs.String("local-tsig-key", "", "name:algorithm:secret-file of a TSIG key (RFC 8945, e.g. xfr:hmac-sha256:/etc/dnsplane/xfr.key; the file holds the base64 secret or tsig-keygen's output) that transfers from beyond loopback must be signed with, and that signs every NOTIFY.")
	fs.StringVar(&o.ownerID, "owner-id", "", "This cluster's owner ID in TXT registries (default: the UID of the kube-system namespace).")
	fs.DurationVar(&o.heartbeatInterval, "heartbeat-interval", 30*time.Second, "DNSRecord heartbeat period.")
	fs.DurationVar(&o.heartbeatThreshold, "heartbeat-threshold", 5*time.Minute, "A contributor whose heartbeat is older than this is failing.")
	fs.DurationVar(&o.soaPollInterval, "soa-poll-interval", 30*time.Second, "How often a DNSZone's SOA is queried until it answers.")
	fs.DurationVar(&o.writeLinger, "write-linger", 20*time.Millisecond, "How long a zone writer that was idle waits for more changes before it writes: it writes once this passed with no new change or planner, and at most 10 times this after the first change, so that objects changed one after another land in one write per zone. 0 writes each change at once; at most 1s.")
	fs.DurationVar(&o.zoneResync, "zone-resync-interval", 2*time.Hour, "How often a DNSZone is synced with its provider, and a zone writer re-reads its zone.")
	fs.DurationVar(&o.scrape, "scrape-interval", 2*time.Hour, "How often parent zones' NS records are scraped.")
	fs.DurationVar(&o.providerTimeout, "provider-request-timeout", 30*time.Second, "Bound of one HTTP request to PowerDNS, Route 53, Cloud DNS, Azure DNS or an external-dns webhook, reply included; a request that hangs past it fails and is retried with back-off.")
	fs.DurationVar(&o.servedInterval, "served-check-interval", 10*time.Second, "Longest wait between two SOA checks of a zone whose last change some name server does not answer yet (the Served condition; the first check comes 250ms after the write and the wait doubles up to this).")
	fs.DurationVar(&o.servedStale, "served-stale-after", 5*time.Minute, "A change not answered by every name server of its zone this long after its write is Served=False Stale, not Propagating.")
	fs.DurationVar(&o.dynUpdateTTL, "dynamic-update-ttl", time.Hour, "How long records written through RFC 2136 UPDATE (a DNSZone's spec.dynamicUpdates) live after the last UPDATE that added to them, unless an UPDATE deletes them first.")
	fs.Float64Var(&o.dynUpdateRate, "dynamic-update-rate", 5, "RFC 2136 UPDATEs per second each dynamic-update key may send, sustained; more are REFUSED.")
	fs.IntVar(&o.dynUpdateBurst, "dynamic-update-burst", 20, "RFC 2136 UPDATEs each dynamic-update key may send at once, above --dynamic-update-rate.")
	fs.DurationVar(&o.servedZone, "served-zone-check-interval", 5*time.Minute, "How often a DNSZone with secondaries asks each of its name servers for its SOA serial (one query each), so that a secondary that stops answering or following is named in its Served condition even when nothing changes; 0 = at each --zone-resync-interval only. Zones served by their primary alone are not asked again.")
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
	fs.StringVar(&o.gslbSource, "gslb-source-address", "", "Source addresses of Gslb peer queries and health probes: at most one IPv4 and one IPv6, comma-separated (default: the system's choice).")
	o.gslb.bind(fs)
	o.extDNS.bind(fs)
	bindSourceFlags(fs, &o.sources)
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
	o.watchNamespaces = source.SplitList(*watch)
	o.localNotify = source.SplitList(*notify)
	var perr error
	o.localAllowTransfer, perr = parsePrefixes(source.SplitList(*allowTransfer))
	var terr error
	o.localTSIG, terr = parseTSIGKey(*tsigKey)
	return o, zopts, errors.Join(perr, terr, o.validate())
}

// bindSourceFlags binds the sources' flags (docs/api.md, "Sources"); no --source = no source.
func bindSourceFlags(fs *flag.FlagSet, c *source.Config) {
	fs.Var(listFlag{&c.Sources}, "source", "Sources to publish from, repeatable or comma-separated: "+strings.Join(source.Names(), ", ")+" (external-dns's names); none by default.")
	fs.Var(listFlag{&c.Domains.Include}, "domain-filter", "Sources publish only names equal to or below these domains, repeatable or comma-separated; empty = every name.")
	fs.Var(listFlag{&c.Domains.Exclude}, "exclude-domains", "Sources never publish names equal to or below these domains, repeatable or comma-separated.")
	fs.StringVar(&c.AnnotationFilter, "annotation-filter", "", "Sources read only objects whose annotations match this label selector, e.g. team=a; empty = every object.")
	fs.StringVar(&c.LabelFilter, "label-filter", "", "Sources read only objects whose labels match this label selector; empty = every object.")
	fs.Var(listFlag{&c.IngressClasses}, "ingress-class", "The ingress source reads only Ingresses of these classes (spec.ingressClassName or kubernetes.io/ingress.class), repeatable or comma-separated; empty = every class.")
	fs.StringVar(&c.GatewayName, "gateway-name", "", "Gateway route sources count only Gateways of this name; empty = every Gateway.")
	fs.StringVar(&c.Namespace, "namespace", "", "Sources read only this namespace (one of --watch-namespaces when those are set); empty = every watched namespace. A route's Gateways are --gateway-namespace's.")
	fs.StringVar(&c.GatewayNamespace, "gateway-namespace", "", "Gateway route sources count only Gateways of this namespace (one of --watch-namespaces when those are set), whatever --namespace is; empty = every watched namespace.")
	fs.Var(listFlag{&c.ManagedRecordTypes}, "managed-record-types", "Record types the service, ingress and route sources publish, repeatable or comma-separated, as external-dns' flag (default "+strings.Join(source.DefaultManagedRecordTypes(), ",")+"; add SRV for a NodePort Service's SRV records). The crd source publishes every type its objects name.")
	fs.BoolVar(&c.PublishInternal, "publish-internal-services", false, "The service source publishes a ClusterIP Service's cluster IP for its hostname annotation.")
	fs.Var(negatedBool{&c.IncludeUnschedulable}, "exclude-unschedulable", "NodePort Services' targets leave out cordoned nodes (spec.unschedulable), as external-dns' default (true); --exclude-unschedulable=false or --no-exclude-unschedulable keeps them.")
	fs.BoolVar(&c.IncludeUnschedulable, "no-exclude-unschedulable", false, "external-dns' spelling of --exclude-unschedulable=false.")
	fs.Var(listFlag{&c.ServiceTypes}, "service-type-filter", "The service source reads only Services of these types ("+strings.Join(source.ServiceTypes(), ", ")+"), repeatable or comma-separated; empty = every type.")
	fs.BoolVar(&c.IgnoreHostnameAnnotation, "ignore-hostname-annotation", false, "Sources ignore the hostname (and internal-hostname) annotations: Services publish nothing, Ingresses and routes only their spec's names.")
	fs.BoolVar(&c.IgnoreIngressTLSSpec, "ignore-ingress-tls-spec", false, "The ingress source does not read names from an Ingress's spec.tls[].hosts.")
	fs.BoolVar(&c.IgnoreIngressRulesSpec, "ignore-ingress-rules-spec", false, "The ingress source does not read names from an Ingress's spec.rules[].host.")
	fs.BoolVar(&c.PublishHostIP, "publish-host-ip", false, "Headless Services publish each pod's status.hostIP instead of its address (endpoints-type HostIP for every Service).")
	fs.BoolVar(&c.AlwaysPublishNotReady, "always-publish-not-ready-addresses", false, "Headless Services publish their not-ready endpoints too (spec.publishNotReadyAddresses for every Service).")
}

// negatedBool is a boolean flag that sets *b to the opposite of its value: --no-X for --X=false.
type negatedBool struct{ b *bool }

func (f negatedBool) String() string {
	if f.b == nil {
		return "true"
	}
	return strconv.FormatBool(!*f.b)
}

func (f negatedBool) Set(v string) error {
	x, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	*f.b = !x
	return nil
}

func (negatedBool) IsBoolFlag() bool { return true }

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

// parsePrefixes parses --local-allow-transfer's items: a CIDR prefix, or an IP (a prefix of that
// one address). Errors name the flag and each bad item.
func parsePrefixes(items []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var errs []error
	for _, item := range items {
		if a, err := netip.ParseAddr(item); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(item)
		if err != nil {
			errs = append(errs, fmt.Errorf("--local-allow-transfer: %q is neither a CIDR prefix (10.0.0.0/8) nor an IP address", item))
			continue
		}
		out = append(out, p.Masked())
	}
	return out, errors.Join(errs...)
}

// parseTSIGKey parses --local-tsig-key, name:algorithm:secret-file, and reads the secret from
// the file; "" = no key. Errors name the flag and the part that is wrong, never the secret.
func parseTSIGKey(flag string) (*dnswire.TSIGKey, error) {
	if flag == "" {
		return nil, nil
	}
	name, rest, ok1 := strings.Cut(flag, ":")
	alg, file, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || file == "" {
		return nil, fmt.Errorf("--local-tsig-key %q: want name:algorithm:secret-file", flag)
	}
	secret, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--local-tsig-key: read the secret: %w", err)
	}
	k, err := dnswire.NewTSIGKey(name, alg, string(secret))
	if err != nil {
		return nil, fmt.Errorf("--local-tsig-key: %w", err)
	}
	return &k, nil
}

// validateNotify checks --local-notify's items: host:port with a non-empty host and a port in
// 1..65535.
func validateNotify(targets []string) error {
	var errs []error
	for _, t := range targets {
		host, port, err := net.SplitHostPort(t)
		if err != nil {
			errs = append(errs, fmt.Errorf("--local-notify: %q is not host:port: %w", t, err))
			continue
		}
		if p, err := strconv.Atoi(port); host == "" || err != nil || p < 1 || p > 65535 {
			errs = append(errs, fmt.Errorf("--local-notify: %q needs a host and a port in 1..65535", t))
		}
	}
	return errors.Join(errs...)
}

// The --local-zone-store values.
const (
	zoneStoreAuto    = "auto"
	zoneStoreObjects = "objects"
	zoneStoreDir     = "dir"
)

func (o options) validate() error {
	errs := []error{o.extDNS.validate(), validateNotify(o.localNotify)}
	if o.zoneStore != zoneStoreAuto && o.zoneStore != zoneStoreObjects && o.zoneStore != zoneStoreDir {
		errs = append(errs, fmt.Errorf("--local-zone-store %q: want auto, objects or dir", o.zoneStore))
	}
	if o.leaderElectionNS != "" {
		if msgs := validation.IsDNS1123Label(o.leaderElectionNS); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--leader-election-namespace: %q is not a namespace name: %s", o.leaderElectionNS, strings.Join(msgs, "; ")))
		}
	}
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
	if o.localDNSDrain < 0 {
		errs = append(errs, fmt.Errorf("--local-dns-drain %s: must be 0 (stop at once) or more", o.localDNSDrain))
	}
	if o.servedZone < 0 {
		errs = append(errs, fmt.Errorf("--served-zone-check-interval %s: must be 0 (at each resync only) or positive", o.servedZone))
	}
	if o.localDNSUDP < 0 {
		errs = append(errs, fmt.Errorf("--local-dns-udp-sockets %d: must be 0 (one per core) or more", o.localDNSUDP))
	}
	if o.dnsResolver != "" {
		if _, _, err := net.SplitHostPort(o.dnsResolver); err != nil {
			errs = append(errs, fmt.Errorf("--dns-resolver %q: %w", o.dnsResolver, err))
		}
	}
	if o.dynUpdateRate <= 0 || o.dynUpdateBurst < 1 {
		errs = append(errs, fmt.Errorf("--dynamic-update-rate %v and --dynamic-update-burst %d must be positive", o.dynUpdateRate, o.dynUpdateBurst))
	}
	if o.writeLinger < 0 || o.writeLinger > time.Second {
		errs = append(errs, fmt.Errorf("--write-linger %s: must be from 0 to 1s", o.writeLinger))
	}
	for name, d := range map[string]time.Duration{
		"--heartbeat-interval": o.heartbeatInterval, "--heartbeat-threshold": o.heartbeatThreshold,
		"--soa-poll-interval": o.soaPollInterval, "--zone-resync-interval": o.zoneResync,
		"--scrape-interval": o.scrape, "--gslb-interval": o.gslbInterval, "--gslb-peer-timeout": o.gslbPeerTimeout,
		"--provider-request-timeout": o.providerTimeout,
		"--served-check-interval":    o.servedInterval, "--served-stale-after": o.servedStale,
		"--dynamic-update-ttl": o.dynUpdateTTL,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", name, d))
		}
	}
	if _, err := gslb.ParsePeers(o.extGslbClusters); err != nil {
		errs = append(errs, fmt.Errorf("--ext-gslb-clusters: %w", err))
	}
	if err := o.gslb.validate(o.geoTag, o.extGslbClusters); err != nil {
		errs = append(errs, err)
	}
	if o.gslbNSAddress != "" {
		if _, err := netip.ParseAddr(o.gslbNSAddress); err != nil {
			errs = append(errs, fmt.Errorf("--gslb-ns-address: %w", err))
		}
	}
	if _, err := gslb.ParseSourceAddrs(o.gslbSource); err != nil {
		errs = append(errs, fmt.Errorf("--gslb-source-address: %w", err))
	}
	if err := loopback(o.pprofAddr); err != nil {
		errs = append(errs, fmt.Errorf("--pprof-bind-address: %w", err))
	}
	if err := o.sources.Validate(o.watchNamespaces); err != nil {
		errs = append(errs, err)
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
	if !IsLoopbackAddr(hostport) {
		return fmt.Errorf("%q: the host must be a loopback address (127.0.0.1, ::1 or localhost)", hostport)
	}
	return nil
}

// environ is the manager's environment: the downward API's POD_NAMESPACE and POD_IP
// (config/manager); each may be empty outside a pod.
type environ struct {
	podNamespace, podIP string
}

// namespaces returns the leader election namespace (--leader-election-namespace, else
// POD_NAMESPACE) and the zone store's (that namespace with --local-zone-store=objects or auto,
// else none). Errors: --leader-elect outside a pod without the flag (unless --local), and
// --local-zone-store=objects or --local-dns-service without a namespace.
func (o options) namespaces(env environ) (leader, zones string, err error) {
	leader = cmp.Or(o.leaderElectionNS, env.podNamespace)
	switch {
	case leader == "" && o.leaderElect && !o.local:
		return "", "", errors.New("--leader-elect outside a pod needs --leader-election-namespace (in a pod it defaults to POD_NAMESPACE)")
	case leader == "" && (o.zoneStore == zoneStoreObjects || o.dnsService != ""):
		return "", "", errors.New("--local-zone-store=objects and --local-dns-service need --leader-election-namespace (in a pod it defaults to POD_NAMESPACE)")
	case o.zoneStore != zoneStoreDir:
		zones = leader
	}
	return leader, zones, nil
}

// config returns the composition root's Config of the flags o and the environment env, over the
// API server rest. Errors name the flag.
func (o options) config(rest *rest.Config, env environ) (Config, error) {
	glue, err := listenAddr(o.localDNSAddr, env.podIP)
	if err != nil {
		return Config{}, err
	}
	leaderNS, zonesNS, err := o.namespaces(env)
	if err != nil {
		return Config{}, err
	}
	peers, err := gslb.ParsePeers(o.extGslbClusters)
	if err != nil {
		return Config{}, fmt.Errorf("--ext-gslb-clusters: %w", err)
	}
	source, err := gslb.ParseSourceAddrs(o.gslbSource)
	if err != nil {
		return Config{}, fmt.Errorf("--gslb-source-address: %w", err)
	}
	witnesses, err := gslb.ParsePeers(o.gslb.witnesses)
	if err != nil {
		return Config{}, fmt.Errorf("--ext-gslb-witnesses: %w", err)
	}
	policy, extDNS := o.extDNS.plan()
	return Config{
		GslbWitnesses: witnesses, GslbWitness: o.gslb.witness, GslbClock: o.gslb.clock(),
		Policy: policy, ExternalDNS: extDNS,
		Rest: rest, MetricsAddr: o.metricsAddr, MetricsSecure: o.metricsSecure, ProbeAddr: o.probeAddr, PprofAddr: o.pprofAddr,
		LeaderElect: o.leaderElect, WatchNamespaces: o.watchNamespaces,
		LeaderElectionNamespace: leaderNS, ZoneStoreNamespace: zonesNS, DNSService: o.dnsService,
		ZoneDir: filepath.Join(o.localDir, "zones"), DNSAddr: o.localDNSAddr, DNSUDPSockets: o.localDNSUDP, DNSDrain: o.localDNSDrain, NameServerAddr: glue,
		GeoIPDatabase: o.geoIPDatabase,
		AllowTransfer: o.localAllowTransfer, NotifyTargets: o.localNotify, TSIG: o.localTSIG,
		OwnerID: o.ownerID, HeartbeatInterval: o.heartbeatInterval, HeartbeatThreshold: o.heartbeatThreshold,
		SOAPollInterval: o.soaPollInterval, ZoneResync: o.zoneResync, WriteLinger: o.writeLinger, ScrapeInterval: o.scrape, DNSResolver: o.dnsResolver,
		ProviderRequestTimeout: o.providerTimeout, ServedInterval: o.servedInterval, ServedStaleAfter: o.servedStale, ServedZoneInterval: o.servedZone,
		DynamicUpdateTTL: o.dynUpdateTTL, DynamicUpdateRate: o.dynUpdateRate, DynamicUpdateBurst: o.dynUpdateBurst,
		GeoTag: o.geoTag, Peers: peers, GslbInterval: o.gslbInterval, GslbPeerTimeout: o.gslbPeerTimeout,
		GslbPeerPort: o.gslbPeerPort, GslbNSAddress: o.gslbNSAddress, GslbSource: source, LBResolver: net.DefaultResolver,
		Sources: o.sources,
	}, nil
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

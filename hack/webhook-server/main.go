// Command webhook-server serves the external-dns webhook provider protocol with external-dns's
// own server code (sigs.k8s.io/external-dns/provider/webhook/api, v0.22.0) around one of
// external-dns's own providers: its in-memory provider (provider/inmemory, the default) or its
// in-tree PowerDNS provider (provider/pdns) against a real PowerDNS. dnsplane's webhook provider
// tests (pkg/provider/webhook) run their conformance suite against it; build.sh builds it.
//
// It adds only what a webhook sidecar adds around a provider: a listener, a domain filter for the
// in-memory provider (whose own GetDomainFilter answers an empty filter), and a lock, since the
// in-memory provider's maps are not safe for the concurrent requests an HTTP server makes.
//
// --regex-include and --regex-exclude give the in-memory provider's domain filter as regular
// expressions (endpoint.NewRegexDomainFilter) instead of name lists. One route outside the
// protocol serves the tests' oracle of external-dns's filtering: POST /domain-filter/match with
// {"filter": <a domain filter as GET / answers it>, "names": [...]} answers, for each name,
// whether external-dns's own endpoint.DomainFilter.Match matches it.
//
// Two flags make it normalise endpoints in /adjustendpoints the way many third-party webhooks
// do, so that tests can check that dnsplane compares like with like: --min-ttl raises a TTL below
// it (a provider's lowest TTL), and --set-property adds a provider-specific property to every
// endpoint that lacks it (a provider's default option).
//
// Usage:
//
//	webhook-server --listen 127.0.0.1:0 --zone a.example.test,b.example.test
//	PDNS_API_KEY=... webhook-server --backend pdns --pdns-server http://127.0.0.1:8081
//
// Once listening it prints one line, "listening on <host:port>", to stdout; logs go to stderr.
// It stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	log "github.com/sirupsen/logrus"

	"sigs.k8s.io/external-dns/endpoint"
	"sigs.k8s.io/external-dns/pkg/apis/externaldns"
	"sigs.k8s.io/external-dns/plan"
	"sigs.k8s.io/external-dns/provider"
	"sigs.k8s.io/external-dns/provider/inmemory"
	"sigs.k8s.io/external-dns/provider/pdns"
	"sigs.k8s.io/external-dns/provider/webhook/api"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "webhook-server:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:8888", "host:port to serve the webhook protocol on (port 0: a free port)")
	backend := flag.String("backend", "inmemory", "the external-dns provider behind the webhook: inmemory or pdns")
	zones := flag.String("zone", "", "inmemory: comma list of zones to create at start")
	filter := flag.String("domain-filter", "", "inmemory: comma list of the domain filter's include names (default: the zones)")
	exclude := flag.String("exclude-domains", "", "inmemory: comma list of the domain filter's exclude names")
	regexInclude := flag.String("regex-include", "", "inmemory: the domain filter's include regular expression (replaces the name lists)")
	regexExclude := flag.String("regex-exclude", "", "inmemory: the domain filter's exclude regular expression (replaces the name lists)")
	pdnsServer := flag.String("pdns-server", "http://127.0.0.1:8081", "pdns: the PowerDNS webserver root")
	pdnsServerID := flag.String("pdns-server-id", "localhost", "pdns: the PowerDNS server id")
	timeout := flag.Duration("timeout", 30*time.Second, "the HTTP server's read and write timeouts")
	minTTL := flag.Int64("min-ttl", 0, "adjustendpoints: raise a TTL below this many seconds to it (0: leave TTLs alone)")
	setProperty := flag.String("set-property", "", "adjustendpoints: name=value, a provider-specific property added to every endpoint without it")
	flag.Parse()
	log.SetOutput(os.Stderr)

	var p provider.Provider
	switch *backend {
	case "inmemory":
		df, err := domainFilter(*zones, *filter, *exclude, *regexInclude, *regexExclude)
		if err != nil {
			return err
		}
		mem := inmemory.NewInMemoryProvider(inmemory.InMemoryInitZones(list(*zones)), inmemory.InMemoryWithDomain(df), inmemory.InMemoryWithLogging())
		p = &locked{inner: mem, filter: df}
	case "pdns":
		// The API key comes from the environment, never from a flag (a process list shows flags).
		key := os.Getenv("PDNS_API_KEY")
		if key == "" {
			return errors.New("--backend pdns needs PDNS_API_KEY in the environment")
		}
		cfg := &externaldns.Config{PDNSServer: *pdnsServer, PDNSServerID: *pdnsServerID, PDNSAPIKey: key}
		pp, err := pdns.New(context.Background(), cfg, endpoint.NewDomainFilter(nil))
		if err != nil {
			return fmt.Errorf("PowerDNS provider: %w", err)
		}
		p = &locked{inner: pp}
	default:
		return fmt.Errorf("--backend %q: want inmemory or pdns", *backend)
	}
	if *minTTL > 0 || *setProperty != "" {
		a := &adjusting{Provider: p, minTTL: endpoint.TTL(*minTTL)}
		if *setProperty != "" {
			name, value, ok := strings.Cut(*setProperty, "=")
			if !ok || name == "" {
				return fmt.Errorf("--set-property %q: want name=value", *setProperty)
			}
			a.property = endpoint.ProviderSpecificProperty{Name: name, Value: value}
		}
		p = a
	}

	srv := api.WebhookServer{Provider: p}
	mux := http.NewServeMux()
	// The routes of external-dns's api.StartHTTPApi, which listens on a fixed port only.
	mux.HandleFunc("/", srv.NegotiateHandler)
	mux.HandleFunc(api.UrlRecords, srv.RecordsHandler)
	mux.HandleFunc(api.UrlAdjustEndpoints, srv.AdjustEndpointsHandler)
	mux.HandleFunc("POST /domain-filter/match", matchHandler)
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadTimeout: *timeout, WriteTimeout: *timeout}
	fmt.Printf("listening on %s\n", l.Addr())

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-stop:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return hs.Shutdown(ctx)
	}
}

// domainFilter is the in-memory provider's filter: of the regular expressions when either is
// set, else of the comma lists include (default: the zones) and exclude.
func domainFilter(zones, include, exclude, regexInclude, regexExclude string) (*endpoint.DomainFilter, error) {
	if regexInclude == "" && regexExclude == "" {
		if include == "" {
			include = zones
		}
		return endpoint.NewDomainFilterWithExclusions(list(include), list(exclude)), nil
	}
	var in, ex *regexp.Regexp
	var err error
	if regexInclude != "" {
		if in, err = regexp.Compile(regexInclude); err != nil {
			return nil, fmt.Errorf("--regex-include: %w", err)
		}
	}
	if regexExclude != "" {
		if ex, err = regexp.Compile(regexExclude); err != nil {
			return nil, fmt.Errorf("--regex-exclude: %w", err)
		}
	}
	return endpoint.NewRegexDomainFilter(in, ex), nil
}

// matchHandler answers POST /domain-filter/match: the filter of the request, decoded as
// external-dns's client decodes a negotiation, and endpoint.DomainFilter.Match of each name.
func matchHandler(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Filter json.RawMessage `json:"filter"`
		Names  []string        `json:"names"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	df := &endpoint.DomainFilter{}
	if err := json.Unmarshal(req.Filter, df); err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	out := make([]bool, len(req.Names))
	for i, n := range req.Names {
		out[i] = df.Match(n)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// list splits a comma list, dropping empty items.
func list(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// locked serialises every call into inner, and answers filter as the domain filter when set.
type locked struct {
	mu     sync.Mutex
	inner  provider.Provider
	filter *endpoint.DomainFilter
}

func (l *locked) Records(ctx context.Context) ([]*endpoint.Endpoint, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inner.Records(ctx)
}

func (l *locked) ApplyChanges(ctx context.Context, changes *plan.Changes) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inner.ApplyChanges(ctx, changes)
}

func (l *locked) AdjustEndpoints(eps []*endpoint.Endpoint) ([]*endpoint.Endpoint, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inner.AdjustEndpoints(eps)
}

func (l *locked) GetDomainFilter() endpoint.DomainFilterInterface {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.filter != nil {
		return l.filter
	}
	return l.inner.GetDomainFilter()
}

// adjusting normalises endpoints in AdjustEndpoints after the provider's own adjustment: a TTL
// below minTTL becomes minTTL, and property is added where an endpoint lacks it.
type adjusting struct {
	provider.Provider
	minTTL   endpoint.TTL
	property endpoint.ProviderSpecificProperty
}

func (a *adjusting) AdjustEndpoints(eps []*endpoint.Endpoint) ([]*endpoint.Endpoint, error) {
	out, err := a.Provider.AdjustEndpoints(eps)
	if err != nil {
		return nil, err
	}
	for _, ep := range out {
		if a.minTTL > 0 && ep.RecordTTL < a.minTTL {
			ep.RecordTTL = a.minTTL
		}
		if a.property.Name != "" {
			if _, ok := ep.GetProviderSpecificProperty(a.property.Name); !ok {
				ep.ProviderSpecific = append(ep.ProviderSpecific, a.property)
			}
		}
	}
	return out, nil
}

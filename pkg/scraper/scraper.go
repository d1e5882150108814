package scraper

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/promreg"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Notice asks a controller to reconcile one object again: a child DNSZone whose link state
// changed (Scraper.ZoneEvents), or a parent-link DNSEndpoint to re-publish (Scraper.LinkEvents).
// It is the scraper's own type, so that the scraper knows neither the API types nor
// controller-runtime's events; controllers adapt it to their work queues.
type Notice struct {
	// Key names the object (namespace/name): a DNSZone on ZoneEvents, a DNSEndpoint on
	// LinkEvents.
	Key types.NamespacedName
}

// Lister reads a zone's record sets; *zonewriter.Writer's Reload satisfies it, so a scrape also
// refreshes the writer's view.
type Lister interface {
	Reload(ctx context.Context) ([]provider.RecordSet, error)
}

// Parent is a parent zone to scrape.
type Parent struct {
	// Key names the parent DNSZone (namespace/name).
	Key types.NamespacedName
	// Zone is the parent's zone name.
	Zone string
	// Lister reads the parent zone.
	Lister Lister
}

// Child is a registered child zone.
type Child struct {
	// Key names the child DNSZone.
	Key types.NamespacedName
	// Zone is the child's zone name.
	Zone string
	// Want is the NS set the parent must serve for Zone, canonical names.
	Want []string
	// Glue are the address sets (A/AAAA, canonical) the parent must serve below the cut for the
	// in-bailiwick names of Want (RFC 1034 §4.2.1); only their names, types and targets are
	// compared.
	Glue []provider.RecordSet
	// Link names the parent-link DNSEndpoint to notify for repair.
	Link types.NamespacedName
}

// Metrics are the scraper's Prometheus metrics.
type Metrics struct {
	// Subdomains: dnsplane_scraper_subdomains{parent}, NS sets seen below the parent.
	Subdomains *prometheus.GaugeVec
	// Duration: dnsplane_scraper_scrape_duration_seconds{result}, seconds, result "ok" or "error".
	Duration *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them with reg (the manager's registry; nil =
// unregistered). A registration error (a second registration with the same registry, say) is
// returned wrapped (pkg/promreg).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Subdomains: promreg.GaugeVec("dnsplane_scraper_subdomains",
			"Subdomain NS sets seen in a parent zone by the last scrape.", "parent"),
		Duration: promreg.HistogramVec("dnsplane_scraper_scrape_duration_seconds",
			"Duration of parent-zone scrapes, by result (ok or error).",
			prometheus.ExponentialBuckets(0.005, 2, 14), "result"),
	}
	return promreg.Registered(reg, "scraper", m, m.Subdomains, m.Duration)
}

// Options configure a Scraper.
type Options struct {
	// Interval between scrapes of a parent, a time.Duration (--scrape-interval).
	Interval time.Duration
	// Timeout bounds one scrape, a time.Duration; default 1m.
	Timeout time.Duration
	// RateLimiter spaces retries of failed scrapes; default exponential 1s..5m.
	RateLimiter workqueue.TypedRateLimiter[types.NamespacedName]
	// Metrics, when set, records scrapes (NewMetrics).
	Metrics *Metrics
	Log     logr.Logger
}

type parentState struct {
	parent   Parent
	children map[types.NamespacedName]Child
	ns       map[string][]string                // subdomain -> sorted NS targets
	glue     map[provider.RecordSetKey][]string // A/AAAA below a cut -> sorted targets
	scraped  time.Time
	linked   map[types.NamespacedName]bool // last reported state per child
}

// Scraper caches parents' subdomain NS sets. It is safe for concurrent use; Start runs it.
type Scraper struct {
	opts  Options
	queue workqueue.TypedRateLimitingInterface[types.NamespacedName]
	// ZoneEvents notifies the DNSZone controller (child DNSZones); LinkEvents the DNSEndpoint
	// controller (parent-link DNSEndpoints). Buffered (1024 each); a send blocks the scrape
	// loop while full, until the scraper's context ends.
	ZoneEvents chan Notice
	LinkEvents chan Notice

	mu      sync.Mutex
	parents map[types.NamespacedName]*parentState
	childOf map[types.NamespacedName]types.NamespacedName // child -> parent
}

// New returns a Scraper; call Start to run it.
func New(opts Options) *Scraper {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Minute
	}
	if opts.RateLimiter == nil {
		opts.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](time.Second, 5*time.Minute)
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	return &Scraper{
		opts:       opts,
		queue:      workqueue.NewTypedRateLimitingQueueWithConfig(opts.RateLimiter, workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "scraper"}),
		ZoneEvents: make(chan Notice, 1024),
		LinkEvents: make(chan Notice, 1024),
		parents:    map[types.NamespacedName]*parentState{},
		childOf:    map[types.NamespacedName]types.NamespacedName{},
	}
}

// Register seeds the scraper with a child of parent. A new child, a new parent or a changed
// wanted set triggers an immediate scrape of the parent; re-registering the same child is
// cheap.
func (s *Scraper) Register(parent Parent, child Child) {
	child.Want = sortedCopy(child.Want)
	child.Glue = sortedGlue(child.Glue)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.childOf[child.Key]; ok && old != parent.Key {
		s.removeLocked(child.Key)
	}
	ps, ok := s.parents[parent.Key]
	if !ok {
		ps = &parentState{children: map[types.NamespacedName]Child{}, linked: map[types.NamespacedName]bool{}}
		s.parents[parent.Key] = ps
	}
	ps.parent = parent
	prev, had := ps.children[child.Key]
	ps.children[child.Key] = child
	s.childOf[child.Key] = parent.Key
	if !ok || !had || !slices.Equal(prev.Want, child.Want) || prev.Zone != child.Zone || !slices.EqualFunc(prev.Glue, child.Glue, sameSet) {
		s.queue.Add(parent.Key)
	}
}

// Unregister forgets a child; a parent without children is no longer scraped.
func (s *Scraper) Unregister(child types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeLocked(child)
}

func (s *Scraper) removeLocked(child types.NamespacedName) {
	pk, ok := s.childOf[child]
	if !ok {
		return
	}
	delete(s.childOf, child)
	if ps := s.parents[pk]; ps != nil {
		delete(ps.children, child)
		delete(ps.linked, child)
		if len(ps.children) == 0 {
			delete(s.parents, pk)
		}
	}
}

// Rescrape has the child's parent scraped now (deduplicated with a pending scrape).
func (s *Scraper) Rescrape(child types.NamespacedName) {
	s.mu.Lock()
	pk, ok := s.childOf[child]
	s.mu.Unlock()
	if ok {
		s.queue.Add(pk)
	}
}

// Linked reports whether the last scrape saw the child's parent serve exactly its wanted NS set
// and its wanted glue, and when that scrape ran; ok is false before the first scrape after registration.
func (s *Scraper) Linked(child types.NamespacedName) (linked bool, scraped time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pk, found := s.childOf[child]
	if !found {
		return false, time.Time{}, false
	}
	ps := s.parents[pk]
	if ps.scraped.IsZero() {
		return false, time.Time{}, false
	}
	return ps.serves(ps.children[child]), ps.scraped, true
}

// NeedLeaderElection: only the leader scrapes.
func (s *Scraper) NeedLeaderElection() bool { return true }

// Start runs the scrape loop until ctx ends.
func (s *Scraper) Start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	for {
		key, shutdown := s.queue.Get()
		if shutdown {
			return nil
		}
		s.scrape(ctx, key)
		s.queue.Done(key)
	}
}

func (s *Scraper) scrape(ctx context.Context, key types.NamespacedName) {
	s.mu.Lock()
	ps, ok := s.parents[key]
	var parent Parent
	if ok {
		parent = ps.parent
	}
	s.mu.Unlock()
	if !ok {
		s.queue.Forget(key)
		return
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	sets, err := parent.Lister.Reload(cctx)
	cancel()
	if s.opts.Metrics != nil {
		result := "ok"
		if err != nil {
			result = "error"
		}
		s.opts.Metrics.Duration.WithLabelValues(result).Observe(time.Since(start).Seconds())
	}
	if err != nil {
		s.opts.Log.Error(err, "scrape failed; backing off", "parent", key.String(), "zone", parent.Zone)
		s.queue.AddRateLimited(key)
		return
	}
	s.queue.Forget(key)
	ns, glue := delegations(sets, parent.Zone)
	if s.opts.Metrics != nil {
		s.opts.Metrics.Subdomains.WithLabelValues(parent.Zone).Set(float64(len(ns)))
	}
	var zoneEvents, linkEvents []types.NamespacedName
	s.mu.Lock()
	if ps, ok = s.parents[key]; ok {
		ps.ns, ps.glue, ps.scraped = ns, glue, time.Now()
		for ck, c := range ps.children {
			linked := ps.serves(c)
			if prev, seen := ps.linked[ck]; !seen || prev != linked {
				zoneEvents = append(zoneEvents, ck)
			}
			ps.linked[ck] = linked
			if !linked {
				linkEvents = append(linkEvents, c.Link)
			}
		}
	}
	s.mu.Unlock()
	for _, k := range zoneEvents {
		s.send(ctx, s.ZoneEvents, k)
	}
	for _, k := range linkEvents {
		s.send(ctx, s.LinkEvents, k)
	}
	if s.opts.Interval > 0 {
		s.queue.AddAfter(key, s.opts.Interval)
	}
}

func (s *Scraper) send(ctx context.Context, ch chan Notice, key types.NamespacedName) {
	select {
	case ch <- Notice{Key: key}:
	case <-ctx.Done():
	}
}

func sortedCopy(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

// serves reports whether the scraped parent serves exactly c's NS set and each of its glue sets.
func (ps *parentState) serves(c Child) bool {
	if !slices.Equal(ps.ns[c.Zone], c.Want) {
		return false
	}
	for _, g := range c.Glue {
		if !slices.Equal(ps.glue[g.Key()], g.Targets) {
			return false
		}
	}
	return true
}

// delegations returns the parent zone's subdomain NS sets (name -> sorted targets) and the
// address sets at or below those cuts, the glue (key -> sorted targets).
func delegations(sets []provider.RecordSet, zone string) (map[string][]string, map[provider.RecordSetKey][]string) {
	ns := map[string][]string{}
	for _, rs := range sets {
		if rs.Type == "NS" && dnswire.IsStrictSubdomain(rs.Name, zone) {
			ns[rs.Name] = sortedCopy(rs.Targets)
		}
	}
	glue := map[provider.RecordSetKey][]string{}
	for _, rs := range sets {
		if (rs.Type == "A" || rs.Type == "AAAA") && belowCut(rs.Name, zone, ns) {
			glue[rs.Key()] = sortedCopy(rs.Targets)
		}
	}
	return ns, glue
}

// belowCut reports whether name is at or below one of the cuts, walking up to zone.
func belowCut(name, zone string, cuts map[string][]string) bool {
	for n := name; dnswire.IsStrictSubdomain(n, zone); {
		if _, ok := cuts[n]; ok {
			return true
		}
		_, parent, found := strings.Cut(n, ".")
		if !found {
			return false
		}
		n = parent
	}
	return false
}

// sortedGlue returns the glue sets with sorted targets, sorted by key.
func sortedGlue(in []provider.RecordSet) []provider.RecordSet {
	out := make([]provider.RecordSet, 0, len(in))
	for _, g := range in {
		out = append(out, provider.RecordSet{Name: g.Name, Type: g.Type, TTL: g.TTL, Targets: sortedCopy(g.Targets)})
	}
	slices.SortFunc(out, func(a, b provider.RecordSet) int { return strings.Compare(a.Name+"/"+a.Type, b.Name+"/"+b.Type) })
	return out
}

func sameSet(a, b provider.RecordSet) bool {
	return a.Name == b.Name && a.Type == b.Type && slices.Equal(a.Targets, b.Targets)
}

package guard

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Options tunes a guarded Provider. The zero value means: no rate limit, the default back-off,
// no zone-list cache.
type Options struct {
	// Limiter is the credential set's request budget, shared by every Provider over the same
	// credentials; nil = unlimited. Build it with NewLimiter.
	Limiter *rate.Limiter
	// MaxRetries is how many times one throttled request is retried; 0 = DefaultMaxRetries,
	// negative = never retried.
	MaxRetries int
	// MaxFailureRetries is how many times one request that did not reach the provider, or that
	// it failed to answer (provider.Unreachable: a per-request timeout, a reset, a reply cut
	// short, a 5xx mapped to provider.ErrUnavailable), is retried on the same back-off, while
	// the caller's context lasts; 0 = DefaultMaxFailureRetries, negative = never retried.
	MaxFailureRetries int
	// BaseDelay is the first back-off step, a time.Duration doubled at each retry;
	// 0 = DefaultBaseDelay.
	BaseDelay time.Duration
	// MaxDelay caps one back-off step before its jitter (up to +50%); a longer Retry-After is
	// still honoured. 0 = DefaultMaxDelay.
	MaxDelay time.Duration
	// ZoneListTTL is how long a ListZones answer is reused, a time.Duration; 0 disables the cache.
	ZoneListTTL time.Duration
	// Clock reads time and sleeps; nil = the real clock.
	Clock clock.WithTicker
}

// Defaults of Options.
const (
	// DefaultMaxRetries: eight retries at 0.2 s doubling to a 30 s cap wait about a minute in all
	// (jitter aside), longer than Route 53's documented one-second throttling window.
	DefaultMaxRetries = 8
	// DefaultMaxFailureRetries: a request that hung or was cut off is tried 3 times in all, inside
	// the caller's call, so that a zone writer's batch is retried whole rather than failed back
	// to each of its submitters, who would retry alone on their own back-offs (with 30%
	// of requests hanging, 1,000 endpoints did not converge within 20 minutes). A write retried
	// this way may have landed the first time: providers answer a repeated Create with
	// provider.ErrConflict (the set exists) and the writer re-reads; REPLACE and DELETE by key
	// are idempotent.
	DefaultMaxFailureRetries = 2
	DefaultBaseDelay         = 200 * time.Millisecond
	DefaultMaxDelay          = 30 * time.Second
)

// NewLimiter returns a token bucket of qps requests per second and the given burst (at least 1;
// 0 = ceil(qps)), or nil (unlimited) when qps <= 0.
func NewLimiter(qps float64, burst int) *rate.Limiter {
	if qps <= 0 {
		return nil
	}
	if burst <= 0 {
		burst = int(math.Ceil(qps))
	}
	return rate.NewLimiter(rate.Limit(qps), burst)
}

// PageSizer is implemented by providers whose ListRecordSets reads in pages: RecordsPerPage is
// the page size in record sets, so that the guard charges the limiter one token per page.
type PageSizer interface {
	RecordsPerPage() int
}

// Provider is a guarded provider.Provider, safe for concurrent use.
type Provider struct {
	inner provider.Provider
	opts  Options

	mu        sync.Mutex
	zones     []provider.Zone
	zonesRead time.Time
	zonesOK   bool
	names     map[string]string // zone ID -> name, for validate
}

var _ provider.Provider = (*Provider)(nil)

// New wraps inner. Its Capabilities are inner's, unchanged.
func New(inner provider.Provider, opts Options) *Provider {
	if opts.MaxRetries == 0 {
		opts.MaxRetries = DefaultMaxRetries
	}
	if opts.MaxFailureRetries == 0 {
		opts.MaxFailureRetries = DefaultMaxFailureRetries
	}
	if opts.BaseDelay <= 0 {
		opts.BaseDelay = DefaultBaseDelay
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = DefaultMaxDelay
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Provider{inner: inner, opts: opts}
}

// Unwrap returns the wrapped provider.
func (p *Provider) Unwrap() provider.Provider { return p.inner }

// do runs one request: it takes a token, calls fn, and retries it while it is throttled (up to
// MaxRetries times) or did not reach the provider (provider.Unreachable, up to MaxFailureRetries
// times, while ctx lasts), on one back-off. The error is fn's last, or ctx's wrapped when waiting
// was cut short.
func (p *Provider) do(ctx context.Context, fn func(context.Context) error) error {
	b := wait.Backoff{Duration: p.opts.BaseDelay, Factor: 2, Jitter: 0.5, Steps: math.MaxInt32, Cap: p.opts.MaxDelay}
	throttles, failures := 0, 0
	for {
		if err := p.take(ctx, 1); err != nil {
			return err
		}
		err := fn(ctx)
		retryAfter, throttled := provider.RetryAfter(err)
		switch {
		case err == nil:
			return nil
		case throttled && p.opts.MaxRetries >= 0 && throttles < p.opts.MaxRetries:
			throttles++
		case !throttled && ctx.Err() == nil && provider.Unreachable(err) &&
			p.opts.MaxFailureRetries >= 0 && failures < p.opts.MaxFailureRetries:
			failures++
		default:
			return err
		}
		d := max(b.Step(), retryAfter)
		if dl, ok := ctx.Deadline(); ok && p.opts.Clock.Now().Add(d).After(dl) {
			return fmt.Errorf("%w (not retried: the back-off of %s passes the deadline)", err, d.Round(time.Millisecond))
		}
		t := p.opts.Clock.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (retry abandoned: %w)", err, ctx.Err())
		case <-t.C():
		}
	}
}

// take waits for n tokens of the credential set's limiter.
func (p *Provider) take(ctx context.Context, n int) error {
	l := p.opts.Limiter
	if l == nil || n <= 0 {
		return nil
	}
	for n > 0 {
		k := min(n, l.Burst())
		if err := l.WaitN(ctx, k); err != nil {
			return fmt.Errorf("client-side rate limit: %w", err)
		}
		n -= k
	}
	return nil
}

// Capabilities implements provider.Provider.
func (p *Provider) Capabilities() provider.Capabilities { return p.inner.Capabilities() }

// EnsureZone implements provider.Provider; it drops the zone-list cache.
func (p *Provider) EnsureZone(ctx context.Context, spec provider.ZoneSpec) (provider.Zone, error) {
	var z provider.Zone
	err := p.do(ctx, func(ctx context.Context) (err error) {
		z, err = p.inner.EnsureZone(ctx, spec)
		return err
	})
	p.dropZones()
	return z, err
}

// GetZone implements provider.Provider.
func (p *Provider) GetZone(ctx context.Context, id string) (provider.Zone, error) {
	var z provider.Zone
	err := p.do(ctx, func(ctx context.Context) (err error) {
		z, err = p.inner.GetZone(ctx, id)
		return err
	})
	return z, err
}

// ReadZone implements provider.ZoneReader: the wrapped provider's ReadZone (its GetZone, with
// nil sets, when it is no ZoneReader), one token, with the protections of every call. A reader
// that reads in pages (PageSizer) is charged as ListRecordSets is.
func (p *Provider) ReadZone(ctx context.Context, id string) (provider.Zone, []provider.RecordSet, error) {
	var z provider.Zone
	var sets []provider.RecordSet
	err := p.do(ctx, func(ctx context.Context) (err error) {
		z, sets, err = provider.ReadZone(ctx, p.inner, id)
		return err
	})
	if err == nil && sets != nil {
		if err := p.chargePages(ctx, len(sets)); err != nil {
			return provider.Zone{}, nil, err
		}
	}
	return z, sets, err
}

// ListZones implements provider.Provider. Within ZoneListTTL of a successful call it returns a
// copy of that call's answer without a request.
func (p *Provider) ListZones(ctx context.Context) ([]provider.Zone, error) {
	if ttl := p.opts.ZoneListTTL; ttl > 0 {
		p.mu.Lock()
		if p.zonesOK && p.opts.Clock.Since(p.zonesRead) < ttl {
			out := cloneZones(p.zones)
			p.mu.Unlock()
			return out, nil
		}
		p.mu.Unlock()
	}
	var zs []provider.Zone
	err := p.do(ctx, func(ctx context.Context) (err error) {
		zs, err = p.inner.ListZones(ctx)
		return err
	})
	if err == nil && p.opts.ZoneListTTL > 0 {
		p.mu.Lock()
		p.zones, p.zonesRead, p.zonesOK = cloneZones(zs), p.opts.Clock.Now(), true
		p.mu.Unlock()
	}
	return zs, err
}

// DeleteZone implements provider.Provider; it drops the zone-list cache. When the wrapped
// provider is a provider.ZoneDrainer, the zone's record sets are first deleted in Batches of
// their own (drain), each one request and one token, so that deleting a zone is split by the same
// one splitter as ApplyChanges; the provider's DeleteZone then finds the zone empty.
func (p *Provider) DeleteZone(ctx context.Context, id string) error {
	defer p.dropZones()
	if err := p.drain(ctx, id); err != nil {
		return err
	}
	return p.do(ctx, func(ctx context.Context) error { return p.inner.DeleteZone(ctx, id) })
}

// drain deletes the record sets of zone id that the wrapped provider's DeleteZone would have to
// delete first (provider.ZoneDrainer), in batches split under its Capabilities by
// provider.DeletionCost. It stops at the first failed batch; earlier batches stay applied, and
// a later DeleteZone lists again what is left.
func (p *Provider) drain(ctx context.Context, id string) error {
	d, ok := p.inner.(provider.ZoneDrainer)
	if !ok {
		return nil
	}
	var dels []provider.Deletion
	err := p.do(ctx, func(ctx context.Context) (err error) {
		dels, err = d.ZoneDeletions(ctx, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("list the record sets of zone %s to delete: %w", id, err)
	}
	if err := p.chargePages(ctx, len(dels)); err != nil {
		return err
	}
	batches := split(p, dels, provider.DeletionCost)
	for i, b := range batches {
		if err := p.do(ctx, func(ctx context.Context) error { return d.DeleteRecordSets(ctx, id, b) }); err != nil {
			return fmt.Errorf("delete the record sets of zone %s, batch %d of %d: %w", id, i+1, len(batches), err)
		}
	}
	return nil
}

// chargePages charges the limiter one token per page of a listing of n record sets beyond the
// first, when the wrapped provider reads in pages (PageSizer).
func (p *Provider) chargePages(ctx context.Context, n int) error {
	ps, ok := p.inner.(PageSizer)
	if !ok {
		return nil
	}
	if per := ps.RecordsPerPage(); per > 0 {
		if extra := (n - 1) / per; extra > 0 {
			return p.take(ctx, extra)
		}
	}
	return nil
}

// ListRecordSets implements provider.Provider. A provider that reads in pages (PageSizer) is
// charged one more token per page beyond the first, after the call, so that the limiter's
// average rate holds.
func (p *Provider) ListRecordSets(ctx context.Context, zoneID string) ([]provider.RecordSet, error) {
	var sets []provider.RecordSet
	err := p.do(ctx, func(ctx context.Context) (err error) {
		sets, err = p.inner.ListRecordSets(ctx, zoneID)
		return err
	})
	if err == nil {
		if err := p.chargePages(ctx, len(sets)); err != nil {
			return nil, err
		}
	}
	return sets, err
}

// Batches returns the write requests ApplyChanges sends for changes, in order: provider.SplitBatches
// under the wrapped provider's Capabilities, each change counted by provider.RequestCost (the
// provider's own RequestSizer where it has one, else provider.ChangeCost). With the deletions of
// DeleteZone (drain) these are the only writes dnsplane splits, both through split.
func (p *Provider) Batches(changes []provider.Change) [][]provider.Change {
	return split(p, changes, func(ch provider.Change) (int, int) { return provider.RequestCost(p.inner, ch) })
}

// split is the one call of provider.SplitBatches in dnsplane: items (changes, or a zone's
// deletions) split into requests under the wrapped provider's Capabilities, each counted by cost.
func split[T any](p *Provider, items []T, cost func(T) (elements, valueBytes int)) [][]T {
	return provider.SplitBatches(items, p.inner.Capabilities(), cost)
}

// ApplyChanges implements provider.Provider. It splits changes into Batches and sends each batch
// as its own request (one inner ApplyChanges, one token), in order, retrying a throttled batch
// alone. It stops at the first failed batch: earlier batches stay applied, as the interface says.
// Before sending the first of several batches it checks every change with
// provider.ValidateChanges, so that invalid input still fails before anything is written (the
// zone's name comes from one GetZone per zone ID, then from memory).
func (p *Provider) ApplyChanges(ctx context.Context, zoneID string, changes []provider.Change) error {
	if len(changes) == 0 {
		return nil
	}
	batches := p.Batches(changes)
	if len(batches) > 1 {
		if err := p.validate(ctx, zoneID, changes, p.inner.Capabilities()); err != nil {
			return err
		}
	}
	for i, b := range batches {
		err := p.do(ctx, func(ctx context.Context) error { return p.inner.ApplyChanges(ctx, zoneID, b) })
		if err != nil {
			if len(batches) > 1 {
				return fmt.Errorf("batch %d of %d: %w", i+1, len(batches), err)
			}
			return err
		}
	}
	return nil
}

// validate checks each change's sides as every provider does before writing
// (provider.ValidateChanges with provider.ValidateChangeSet); errors wrap
// provider.ErrInvalidChange or provider.ErrNotCapable.
func (p *Provider) validate(ctx context.Context, zoneID string, changes []provider.Change, caps provider.Capabilities) error {
	zone, err := p.zoneName(ctx, zoneID)
	if err != nil {
		return err
	}
	_, err = provider.ValidateChanges(changes, func(action provider.Action, which string, rs provider.RecordSet) (provider.RecordSet, error) {
		return provider.ValidateChangeSet(action, which, &rs, zone, caps)
	})
	return err
}

// zoneName returns the name of zone ID id: a GetZone the first time, then from memory (a zone's
// name never changes under its ID).
func (p *Provider) zoneName(ctx context.Context, id string) (string, error) {
	p.mu.Lock()
	name, ok := p.names[id]
	p.mu.Unlock()
	if ok {
		return name, nil
	}
	z, err := p.GetZone(ctx, id)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	if p.names == nil {
		p.names = map[string]string{}
	}
	p.names[id] = z.Name
	p.mu.Unlock()
	return z.Name, nil
}

func (p *Provider) dropZones() {
	p.mu.Lock()
	p.zones, p.zonesOK = nil, false
	p.mu.Unlock()
}

func cloneZones(in []provider.Zone) []provider.Zone {
	if in == nil {
		return nil
	}
	out := make([]provider.Zone, len(in))
	for i, z := range in {
		out[i] = z
		out[i].NameServers = append([]string(nil), z.NameServers...)
		if z.Tags != nil {
			out[i].Tags = make(map[string]string, len(z.Tags))
			for k, v := range z.Tags {
				out[i].Tags[k] = v
			}
		}
	}
	return out
}

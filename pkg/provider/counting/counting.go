// Package counting wraps a provider.Provider and counts its calls by operation, for the provider
// budget tests and the dnsplane_provider_requests_total metric. Under pkg/provider/guard (which
// wraps it) each counted call is one API request: one batch, one attempt. It owns no DNS logic and must not
// change what the wrapped provider does.
package counting

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/pkg/promreg"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Operations counted, one per Provider method.
const (
	OpEnsureZone     = "EnsureZone"
	OpGetZone        = "GetZone"
	OpListZones      = "ListZones"
	OpDeleteZone     = "DeleteZone"
	OpListRecordSets = "ListRecordSets"
	OpApplyChanges   = "ApplyChanges"
	// OpZoneDeletions and OpDeleteRecordSets are provider.ZoneDrainer's methods, counted only
	// when the wrapped provider is one.
	OpZoneDeletions    = "ZoneDeletions"
	OpDeleteRecordSets = "DeleteRecordSets"
)

// Provider counts the calls made to the wrapped provider. It is safe for concurrent use.
type Provider struct {
	inner provider.Provider
	name  string
	m     *Metrics

	mu     sync.Mutex
	counts map[string]int
	byZone map[string]map[string]int // zone ID -> operation -> calls
}

// Metrics are the provider request metrics.
type Metrics struct {
	// Requests is dnsplane_provider_requests_total{provider,operation,code}; code is Code of the
	// call's error.
	Requests *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (the manager's registry; nil =
// unregistered). A registration error (a second registration with the same registry, say) is
// returned wrapped (pkg/promreg).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{Requests: promreg.CounterVec("dnsplane_provider_requests_total",
		"Requests to DNS providers, by provider, operation and outcome code (ok, throttled, conflict, ...).", "provider", "operation", "code")}
	return promreg.Registered(reg, "provider request", m, m.Requests)
}

// Outcome codes of the code label, one per typed provider error (pkg/provider/errors.go).
const (
	CodeOK                 = "ok"
	CodeThrottled          = "throttled"
	CodeConflict           = "conflict"
	CodeZoneNotFound       = "zone_not_found"
	CodeZoneConflict       = "zone_conflict"
	CodeInvalidCredentials = "invalid_credentials"
	CodeInvalidChange      = "invalid_change"
	CodeNotCapable         = "not_capable"
	CodeTimeout            = "timeout"
	CodeCanceled           = "canceled"
	CodeError              = "error"
)

// Code classifies a provider call's error into a bounded label value: CodeOK for nil, the typed
// error's code, else CodeError.
func Code(err error) string {
	if err == nil {
		return CodeOK
	}
	for _, c := range []struct {
		target error
		code   string
	}{
		{provider.ErrThrottled, CodeThrottled}, {provider.ErrConflict, CodeConflict},
		{provider.ErrZoneNotFound, CodeZoneNotFound}, {provider.ErrZoneConflict, CodeZoneConflict},
		{provider.ErrInvalidCredentials, CodeInvalidCredentials}, {provider.ErrInvalidChange, CodeInvalidChange},
		{provider.ErrNotCapable, CodeNotCapable}, {context.DeadlineExceeded, CodeTimeout}, {context.Canceled, CodeCanceled},
	} {
		if errors.Is(err, c.target) {
			return c.code
		}
	}
	return CodeError
}

// Wrap returns p counted under name, in m's Requests too unless m is nil.
func Wrap(p provider.Provider, name string, m *Metrics) *Provider {
	return &Provider{inner: p, name: name, m: m, counts: map[string]int{}, byZone: map[string]map[string]int{}}
}

// Counts returns a copy of the calls made so far, by operation.
func (p *Provider) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

// ZoneCounts returns a copy of the calls made so far for one zone ID, by operation (only the
// operations that take a zone ID).
func (p *Provider) ZoneCounts(zoneID string) map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.byZone[zoneID] {
		out[k] = v
	}
	return out
}

// Reset sets every count to zero.
func (p *Provider) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts = map[string]int{}
	p.byZone = map[string]map[string]int{}
}

func (p *Provider) count(op string, err error) { p.countZone(op, "", err) }

func (p *Provider) countZone(op, zoneID string, err error) {
	p.mu.Lock()
	p.counts[op]++
	if zoneID != "" {
		if p.byZone[zoneID] == nil {
			p.byZone[zoneID] = map[string]int{}
		}
		p.byZone[zoneID][op]++
	}
	p.mu.Unlock()
	if p.m != nil {
		p.m.Requests.WithLabelValues(p.name, op, Code(err)).Inc()
	}
}

// Capabilities implements provider.Provider; it is not counted (no I/O).
func (p *Provider) Capabilities() provider.Capabilities { return p.inner.Capabilities() }

// RequestCost implements provider.RequestSizer for the guard's splitter: the wrapped provider's
// provider.RequestCost. It is not counted (no I/O).
func (p *Provider) RequestCost(ch provider.Change) (elements, valueBytes int) {
	return provider.RequestCost(p.inner, ch)
}

// EnsureZone implements provider.Provider.
func (p *Provider) EnsureZone(ctx context.Context, spec provider.ZoneSpec) (provider.Zone, error) {
	z, err := p.inner.EnsureZone(ctx, spec)
	p.count(OpEnsureZone, err)
	return z, err
}

// GetZone implements provider.Provider.
func (p *Provider) GetZone(ctx context.Context, id string) (provider.Zone, error) {
	z, err := p.inner.GetZone(ctx, id)
	p.countZone(OpGetZone, id, err)
	return z, err
}

// ReadZone implements provider.ZoneReader, counted as one GetZone (one request): the wrapped
// provider's ReadZone, or its GetZone with nil sets when it is no ZoneReader.
func (p *Provider) ReadZone(ctx context.Context, id string) (provider.Zone, []provider.RecordSet, error) {
	z, sets, err := provider.ReadZone(ctx, p.inner, id)
	p.countZone(OpGetZone, id, err)
	return z, sets, err
}

// ListZones implements provider.Provider.
func (p *Provider) ListZones(ctx context.Context) ([]provider.Zone, error) {
	z, err := p.inner.ListZones(ctx)
	p.count(OpListZones, err)
	return z, err
}

// DeleteZone implements provider.Provider.
func (p *Provider) DeleteZone(ctx context.Context, id string) error {
	err := p.inner.DeleteZone(ctx, id)
	p.countZone(OpDeleteZone, id, err)
	return err
}

// ListRecordSets implements provider.Provider.
func (p *Provider) ListRecordSets(ctx context.Context, zoneID string) ([]provider.RecordSet, error) {
	s, err := p.inner.ListRecordSets(ctx, zoneID)
	p.countZone(OpListRecordSets, zoneID, err)
	return s, err
}

// ApplyChanges implements provider.Provider; one call is one write request (provider.Provider).
func (p *Provider) ApplyChanges(ctx context.Context, zoneID string, changes []provider.Change) error {
	err := p.inner.ApplyChanges(ctx, zoneID, changes)
	p.countZone(OpApplyChanges, zoneID, err)
	return err
}

// ZoneDeletions implements provider.ZoneDrainer for the guard: the wrapped provider's, or none
// (not counted) when it is no ZoneDrainer, whose DeleteZone then needs no deletions first.
func (p *Provider) ZoneDeletions(ctx context.Context, zoneID string) ([]provider.Deletion, error) {
	d, ok := p.inner.(provider.ZoneDrainer)
	if !ok {
		return nil, nil
	}
	dels, err := d.ZoneDeletions(ctx, zoneID)
	p.countZone(OpZoneDeletions, zoneID, err)
	return dels, err
}

// DeleteRecordSets implements provider.ZoneDrainer; one call is one write request. A provider
// that is no ZoneDrainer listed no deletions, so dels of it are ErrInvalidChange.
func (p *Provider) DeleteRecordSets(ctx context.Context, zoneID string, dels []provider.Deletion) error {
	d, ok := p.inner.(provider.ZoneDrainer)
	if !ok {
		if len(dels) == 0 {
			return nil
		}
		return fmt.Errorf("%w: %T lists no deletions before DeleteZone", provider.ErrInvalidChange, p.inner)
	}
	err := d.DeleteRecordSets(ctx, zoneID, dels)
	p.countZone(OpDeleteRecordSets, zoneID, err)
	return err
}

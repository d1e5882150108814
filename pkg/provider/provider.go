package provider

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Provider is one DNS hosting API (a cloud, PowerDNS, an RFC 2136 server or
// the embedded server). Implementations are safe for concurrent use.
//
// Names and targets cross this interface in canonical form only (names in
// dnswire's dotless form, dnswire.Dotless; targets as CanonicalTarget gives
// them); implementations convert to and from
// their API's own form. Every method honours ctx: network calls carry its
// deadline, and a cancelled ctx returns an error wrapping ctx.Err().
type Provider interface {
	// Capabilities reports what the provider can do and its per-request
	// limits. It is constant for the life of the provider and never does I/O.
	Capabilities() Capabilities

	// EnsureZone returns the hosted zone for spec, creating it if needed.
	// It is idempotent by spec.CallerReference: calling it again (from this or
	// a new instance over the same backend, for example after a crash between
	// creation and status update) returns the same zone and never creates a
	// second one. A zone of the same name with another caller reference gives
	// ErrZoneConflict, even where the backend allows duplicate names (Route 53
	// does). Without Capabilities().CreateZones it returns ErrNotCapable.
	EnsureZone(ctx context.Context, spec ZoneSpec) (Zone, error)

	// GetZone returns the zone with the given provider ID, or ErrZoneNotFound.
	GetZone(ctx context.Context, id string) (Zone, error)

	// ListZones returns every zone the credentials can see, in no particular
	// order.
	ListZones(ctx context.Context) ([]Zone, error)

	// DeleteZone deletes the zone's remaining record sets (all but those the
	// backend manages itself, such as the apex SOA and NS), then the zone.
	// It returns ErrZoneNotFound for an unknown id. Where those deletions
	// are write requests of their own (ZoneDrainer) it sends them as one,
	// unsplit: the guard deletes them first, in batches of SplitBatches.
	DeleteZone(ctx context.Context, id string) error

	// ListRecordSets returns every record set of the zone, including the
	// apex SOA and NS the backend created, in canonical form. Unknown zone:
	// ErrZoneNotFound.
	ListRecordSets(ctx context.Context, zoneID string) ([]RecordSet, error)

	// ApplyChanges applies changes in order as one API request (with
	// BatchWrites false, as one request per record set, as Azure DNS's API
	// has no batch), atomic where the backend's requests are. It never
	// splits: a write over Capabilities' per-request limits is sent as is and
	// rejected by the backend. The guard (pkg/provider/guard) is the one
	// splitter: it sends batches of SplitBatches, each one ApplyChanges, and
	// earlier batches stay applied when a later one fails. With
	// Capabilities().ConditionalWrites, a Create whose set already exists, or
	// an Update/Delete whose Before no longer equals the current set, gives
	// ErrConflict and nothing of that request is applied. Invalid input
	// (ValidateChanges) gives ErrInvalidChange before anything is written;
	// weighted sets on a provider without WeightedRouting give ErrNotCapable.
	// Unknown zone: ErrZoneNotFound.
	ApplyChanges(ctx context.Context, zoneID string, changes []Change) error
}

// Zone is one hosted zone as the provider reports it.
type Zone struct {
	// ID is the provider's opaque zone identifier (Route 53 "Z123...", the
	// embedded provider's zone name, ...).
	ID string
	// Name is the canonical zone name: lower-case, no trailing dot.
	Name string
	// NameServers are the zone's authoritative servers, canonical names.
	NameServers []string
	// CallerReference is the idempotency key the zone was created with; empty
	// for zones created outside dnsplane.
	CallerReference string
	// Tags are provider tags, where the provider has them.
	Tags map[string]string
}

// ZoneSpec is what EnsureZone creates.
type ZoneSpec struct {
	// Name is the zone name; it is canonicalised by EnsureZone.
	Name string
	// CallerReference makes creation idempotent; dnsplane derives it from the
	// DNSZone's UID. It must not be empty.
	CallerReference string
	// Tags are applied at creation where the provider has tags.
	Tags map[string]string
}

// RecordSet is every record of one (name, type, set identifier).
type RecordSet struct {
	// Name is the owner, canonical (lower-case FQDN without trailing dot).
	Name string
	// Type is the record type mnemonic, upper-case: "A", "TXT", ...
	Type string
	// TTL is the time to live in seconds, 0..2147483647 (RFC 2181 §8).
	TTL int64
	// Targets are the rdata values in canonical presentation form (see
	// CanonicalTarget). Order is not significant (RFC 2181 §5: an RRset is a
	// set); providers preserve it where they can.
	Targets []string
	// SetIdentifier distinguishes several sets of the same name and type
	// (weighted routing); empty for a plain set.
	SetIdentifier string
	// Weight selects weighted routing: a set is answered with probability
	// weight/sum(weights) among the weighted sets of its name and type.
	// nil means not weighted. Requires SetIdentifier.
	Weight *int64
	// ProviderSpecific carries provider options (external-dns'
	// providerSpecific). Providers store what they understand and round-trip
	// it; nil and empty are equal.
	ProviderSpecific map[string]string
}

// RecordSetKey identifies a record set within a zone.
type RecordSetKey struct {
	Name          string
	Type          string
	SetIdentifier string
}

// String formats the key as "name/TYPE" or "name/TYPE/setIdentifier".
func (k RecordSetKey) String() string {
	if k.SetIdentifier == "" {
		return k.Name + "/" + k.Type
	}
	return k.Name + "/" + k.Type + "/" + k.SetIdentifier
}

// Key returns the set's identity: (name, type, set identifier).
func (r RecordSet) Key() RecordSetKey {
	return RecordSetKey{Name: r.Name, Type: r.Type, SetIdentifier: r.SetIdentifier}
}

// Equal reports whether r and o are the same record set: same key, TTL,
// weight, provider-specific options and the same targets as a multiset
// (order ignored, RFC 2181 §5). Both sides are compared as given: compare
// canonical forms (CanonicalRecordSet) when they may differ in spelling.
func (r RecordSet) Equal(o RecordSet) bool {
	if r.Key() != o.Key() || r.TTL != o.TTL {
		return false
	}
	if (r.Weight == nil) != (o.Weight == nil) || (r.Weight != nil && *r.Weight != *o.Weight) {
		return false
	}
	if len(r.ProviderSpecific) != len(o.ProviderSpecific) || !maps.Equal(r.ProviderSpecific, o.ProviderSpecific) {
		return false
	}
	if len(r.Targets) != len(o.Targets) {
		return false
	}
	a, b := slices.Clone(r.Targets), slices.Clone(o.Targets)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// Clone returns a deep copy of r.
func (r RecordSet) Clone() RecordSet {
	c := r
	c.Targets = slices.Clone(r.Targets)
	if r.Weight != nil {
		w := *r.Weight
		c.Weight = &w
	}
	c.ProviderSpecific = maps.Clone(r.ProviderSpecific)
	return c
}

// String is a compact human form for logs and error messages.
func (r RecordSet) String() string {
	s := r.Key().String() + " ttl=" + strconv.FormatInt(r.TTL, 10)
	if r.Weight != nil {
		s += " weight=" + strconv.FormatInt(*r.Weight, 10)
	}
	return s + " " + strconv.Quote(strings.Join(r.Targets, ","))
}

// Action is what a Change does.
type Action string

const (
	// ActionCreate adds After; with conditional writes it fails with
	// ErrConflict if a set with After's key exists. PowerDNS, which has
	// none, reads the key's name just before its write and fails the same
	// way (pdns.Provider.ApplyChanges).
	ActionCreate Action = "Create"
	// ActionUpdate replaces Before with After (same key).
	ActionUpdate Action = "Update"
	// ActionDelete removes Before.
	ActionDelete Action = "Delete"
)

// Change is one record-set write.
type Change struct {
	Action Action
	// Before is the exact current set, for Update and Delete. Providers with
	// ConditionalWrites apply the change only if the current set still equals
	// it; the others use it to address the set.
	Before *RecordSet
	// After is the desired set, for Create and Update.
	After *RecordSet
	// Shared: other writers may add or remove targets of this set at any time, so a provider
	// without ConditionalWrites must apply the change as a delta onto the set as it is just
	// before the write (read-merge-write), never replace it whole. The planner (pkg/plan)
	// sets it on every record-set change of a Shared-mode plan: a DNSRecord set, which
	// DNSRecords of this and of other clusters (other owner IDs) merge into, and which one may
	// join between our read and our write. False: the set has one writer, the change's
	// contributor (a DNSEndpoint's set, every registry record), and may be written as is.
	// Providers with ConditionalWrites ignore it: a concurrent writer makes their Before
	// stale, the change fails with ErrConflict, and the caller re-plans from a fresh read.
	Shared bool
}

// Key is the key of the set the change touches (After's for Create, else
// Before's). The zero key when the change is malformed.
func (c Change) Key() RecordSetKey {
	switch {
	case c.Action == ActionCreate && c.After != nil:
		return c.After.Key()
	case c.Before != nil:
		return c.Before.Key()
	case c.After != nil:
		return c.After.Key()
	}
	return RecordSetKey{}
}

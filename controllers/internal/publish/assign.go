package publish

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Assignment is the outcome of choosing zones for an object's endpoints.
type Assignment struct {
	// ByZone maps a zone (namespace/name) to its endpoints' record sets.
	ByZone map[client.ObjectKey][]provider.RecordSet
	// Zones are the zones to plan: those the endpoints go to, and those the object's status
	// says hold its records (where an earlier spec may have left some).
	Zones map[client.ObjectKey]*dnsv1.DNSZone
	// Invalid lists endpoints in no usable zone, with why.
	Invalid []string
	// Denied lists endpoints refused by a cross-namespace zone, with why.
	Denied []string
	// Missing says why spec.zoneRef names no DNSZone, if it does not.
	Missing string
	// Awaiting lists zones that hold some endpoints' names but that the cache did not show yet
	// (see Confirm), as "DNSZone <namespace>/<name> (<zone>) to be available".
	Awaiting []string

	// namespace is the object's, where Confirm looks for zones.
	namespace string
	// unheld maps an Invalid message to its record-set name, for the endpoints no cached
	// DNSZone holds.
	unheld map[string]string
}

// Assign chooses a zone for every endpoint (docs/api.md, "Choosing the zone"): zoneRef, or the
// longest-suffix DNSZone of the object's namespace ns. held are the zones (namespace/name) that
// hold the object's records now (status.zones). defaultTTL, in seconds, replaces a zero TTL.
// It is ListCandidates, then the pure AssignZones. Errors are API read errors.
func Assign(ctx context.Context, c client.Reader, ns string, zoneRef *dnsv1.ZoneReference, endpoints []dnsv1.Endpoint, held []string, defaultTTL int64) (*Assignment, error) {
	cands, err := ListCandidates(ctx, c, ns, zoneRef, held)
	if err != nil {
		return nil, err
	}
	return AssignZones(cands, endpoints, defaultTTL), nil
}

// Candidates are the DNSZones an object's endpoints may go to, as ListCandidates read them.
type Candidates struct {
	// Namespace is the object's.
	Namespace string
	// Local are the DNSZones of Namespace, those being deleted included (the cache's objects:
	// read only).
	Local []dnsv1.DNSZone
	// Held are the zones of status.zones that exist and are not being deleted.
	Held []*dnsv1.DNSZone
	// RefKey is spec.zoneRef's zone (namespace defaulted), nil without a zoneRef; Ref is that
	// zone, nil when it does not exist or is being deleted.
	RefKey *client.ObjectKey
	Ref    *dnsv1.DNSZone
}

// ListCandidates reads the zones Assign chooses from: every DNSZone of ns (one List), and the
// held and zoneRef zones (a Get each when in another namespace). Malformed held entries are
// skipped. Errors are API read errors other than NotFound.
func ListCandidates(ctx context.Context, c client.Reader, ns string, zoneRef *dnsv1.ZoneReference, held []string) (*Candidates, error) {
	cands := &Candidates{Namespace: ns}
	var local dnsv1.DNSZoneList
	// Read-only use: no deep copy of every zone on every reconcile.
	if err := c.List(ctx, &local, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list DNSZones: %w", err)
	}
	cands.Local = local.Items
	for _, h := range held {
		nsName, name, ok := strings.Cut(h, "/")
		if !ok {
			continue
		}
		z, err := cands.get(ctx, c, client.ObjectKey{Namespace: nsName, Name: name})
		if err != nil {
			return nil, err
		}
		if z != nil {
			cands.Held = append(cands.Held, z)
		}
	}
	if zoneRef != nil {
		key := zoneRef.NamespacedName(ns)
		z, err := cands.get(ctx, c, key)
		if err != nil {
			return nil, err
		}
		cands.RefKey, cands.Ref = &key, z
	}
	return cands, nil
}

// get returns the live (not being deleted) DNSZone key names: from Local in the object's
// namespace, else read with c; nil when there is none.
func (cands *Candidates) get(ctx context.Context, c client.Reader, key client.ObjectKey) (*dnsv1.DNSZone, error) {
	if key.Namespace == cands.Namespace {
		for i := range cands.Local {
			if z := &cands.Local[i]; z.Name == key.Name {
				if !z.DeletionTimestamp.IsZero() {
					return nil, nil
				}
				return z, nil
			}
		}
		return nil, nil
	}
	z := &dnsv1.DNSZone{}
	err := c.Get(ctx, key, z)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get DNSZone %s: %w", key, err)
	case !z.DeletionTimestamp.IsZero():
		return nil, nil
	}
	return z, nil
}

// AssignZones chooses each endpoint's zone among cands: the zoneRef's (Missing when it is gone;
// every endpoint Denied when it is another namespace's that does not list this one in
// delegation.allowedNamespaces), else the longest-suffix zone of the namespace. An endpoint that
// does not convert or that no zone holds is Invalid; one another namespace's zone refuses
// (crossNamespaceRule) is Denied. Zones holds cands.Held and every zone chosen. Pure.
func AssignZones(cands *Candidates, endpoints []dnsv1.Endpoint, defaultTTL int64) *Assignment {
	ns := cands.Namespace
	a := &Assignment{ByZone: map[client.ObjectKey][]provider.RecordSet{}, Zones: map[client.ObjectKey]*dnsv1.DNSZone{}, namespace: ns}
	for _, z := range cands.Held {
		a.Zones[client.ObjectKeyFromObject(z)] = z
	}
	ref := cands.Ref
	if cands.RefKey != nil {
		if ref == nil {
			a.Missing = fmt.Sprintf("zoneRef names DNSZone %s, which does not exist or is being deleted", *cands.RefKey)
			return a
		}
		if ref.Namespace != ns && (ref.Spec.Delegation == nil || !slices.Contains(ref.Spec.Delegation.AllowedNamespaces, ns)) {
			for _, e := range endpoints {
				a.Denied = append(a.Denied, fmt.Sprintf("%s %s: DNSZone %s/%s does not list namespace %s in delegation.allowedNamespaces", e.DNSName, e.RecordType, ref.Namespace, ref.Name, ns))
			}
			return a
		}
	}
	nsNames := delegatedNames(endpoints)
	for _, e := range endpoints {
		a.place(cands.Local, ref, e, nsNames, defaultTTL)
	}
	return a
}

// delegatedNames returns the canonical names of endpoints' NS records, for the glue rule.
func delegatedNames(endpoints []dnsv1.Endpoint) []string {
	var out []string
	for _, e := range endpoints {
		if e.RecordType == "NS" {
			out = append(out, dnswire.Dotless(e.DNSName))
		}
	}
	return out
}

// place puts e into ref, else the longest-suffix zone of local, or records why it cannot.
func (a *Assignment) place(local []dnsv1.DNSZone, ref *dnsv1.DNSZone, e dnsv1.Endpoint, nsNames []string, defaultTTL int64) {
	rs, err := toRecordSet(e, defaultTTL)
	if err != nil {
		a.Invalid = append(a.Invalid, fmt.Sprintf("%s %s: %v", e.DNSName, e.RecordType, err))
		return
	}
	z := ref
	if z == nil {
		z = longestSuffix(local, rs.Name)
	}
	if z == nil || !dnswire.IsSubdomain(rs.Name, z.Spec.Zone) {
		msg := fmt.Sprintf("%s %s: no DNSZone in namespace %s holds this name", e.DNSName, e.RecordType, a.namespace)
		a.Invalid = append(a.Invalid, msg)
		if ref == nil {
			if a.unheld == nil {
				a.unheld = map[string]string{}
			}
			a.unheld[msg] = rs.Name
		}
		return
	}
	if z.Namespace != a.namespace {
		if why := crossNamespaceRule(rs, z.Spec.Zone, nsNames); why != "" {
			a.Denied = append(a.Denied, fmt.Sprintf("%s %s: %s", e.DNSName, e.RecordType, why))
			return
		}
	}
	k := client.ObjectKeyFromObject(z)
	a.Zones[k] = z
	a.ByZone[k] = append(a.ByZone[k], rs)
}

// Confirm re-reads the DNSZones of the object's namespace from live (an uncached reader) when some
// endpoints fell in no cached zone: a zone created a moment ago may not be in the cache yet, and
// its endpoints are then waiting for it, not invalid. Those endpoints move from Invalid to
// Awaiting; the rest stay Invalid. The zone's availability event reconciles them. live nil, or
// nothing unheld, reads nothing. Errors are API read errors.
func (a *Assignment) Confirm(ctx context.Context, live client.Reader) error {
	if live == nil || len(a.unheld) == 0 {
		return nil
	}
	var zones dnsv1.DNSZoneList
	if err := live.List(ctx, &zones, client.InNamespace(a.namespace)); err != nil {
		return fmt.Errorf("list DNSZones of %s: %w", a.namespace, err)
	}
	invalid := a.Invalid[:0:0]
	for _, msg := range a.Invalid {
		name, ok := a.unheld[msg]
		z := longestSuffix(zones.Items, name)
		if !ok || z == nil {
			invalid = append(invalid, msg)
			continue
		}
		a.Awaiting = append(a.Awaiting, fmt.Sprintf("DNSZone %s/%s (%s) to be available", z.Namespace, z.Name, z.Spec.Zone))
	}
	a.Invalid = invalid
	slices.Sort(a.Awaiting)
	a.Awaiting = slices.Compact(a.Awaiting)
	a.unheld = nil
	return nil
}

// DesiredZones returns the zones endpoints go to, as status.zones stores them.
func (a *Assignment) DesiredZones() []string {
	out := make([]string, 0, len(a.ByZone))
	for k := range a.ByZone {
		out = append(out, k.String())
	}
	slices.Sort(out)
	return out
}

// crossNamespaceRule returns why rs may not go into another namespace's zone, or "": only NS and
// DS strictly below the zone, and glue A/AAAA at or below this object's NS names.
func crossNamespaceRule(rs provider.RecordSet, zone string, nsNames []string) string {
	switch rs.Type {
	case "NS", "DS":
		if dnswire.IsStrictSubdomain(rs.Name, zone) {
			return ""
		}
		return fmt.Sprintf("another namespace's zone %s accepts %s only strictly below its apex", zone, rs.Type)
	case "A", "AAAA":
		for _, n := range nsNames {
			if dnswire.IsSubdomain(rs.Name, n) && dnswire.IsStrictSubdomain(n, zone) {
				return ""
			}
		}
		return fmt.Sprintf("another namespace's zone %s accepts A/AAAA only as glue below this object's NS names", zone)
	}
	return fmt.Sprintf("another namespace's zone %s accepts only NS, DS and glue", zone)
}

func longestSuffix(zones []dnsv1.DNSZone, name string) *dnsv1.DNSZone {
	var best *dnsv1.DNSZone
	for i := range zones {
		z := &zones[i]
		if z.DeletionTimestamp.IsZero() && dnswire.IsSubdomain(name, z.Spec.Zone) && (best == nil || len(z.Spec.Zone) > len(best.Spec.Zone)) {
			best = z
		}
	}
	return best
}

// toRecordSet converts an endpoint to the canonical record set, with duplicate targets dropped
// and targets sorted.
func toRecordSet(e dnsv1.Endpoint, defaultTTL int64) (provider.RecordSet, error) {
	rs := provider.RecordSet{
		Name:          dnswire.Dotless(e.DNSName),
		Type:          strings.ToUpper(e.RecordType),
		TTL:           int64(e.RecordTTL),
		SetIdentifier: e.SetIdentifier,
		Targets:       slices.Compact(slices.Sorted(slices.Values(e.Targets))),
	}
	if len(e.ProviderSpecific) > 0 {
		rs.ProviderSpecific = map[string]string{}
		for _, p := range e.ProviderSpecific {
			rs.ProviderSpecific[p.Name] = p.Value
		}
		// external-dns' names with a meaning outside one provider: an alias has no TTL of its own
		// (it answers with its target's), and provider.KeyWeight is the set's weight, which
		// dnsplane carries in RecordSet.Weight for every provider with weighted routing.
		if w, ok := rs.ProviderSpecific[provider.KeyWeight]; ok && rs.SetIdentifier != "" {
			if n, err := strconv.ParseInt(w, 10, 64); err == nil && n >= 0 {
				rs.Weight = &n
				delete(rs.ProviderSpecific, provider.KeyWeight)
			}
		}
	}
	if rs.TTL == 0 && rs.ProviderSpecific[provider.KeyAlias] != "true" {
		rs.TTL = defaultTTL
	}
	out, err := provider.CanonicalRecordSet(rs)
	if err != nil {
		return provider.RecordSet{}, err
	}
	slices.Sort(out.Targets)
	return out, nil
}

package dnszone

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/publish"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/served"
)

// ZoneServed is what the controller needs of the Served check (*served.Tracker): a zone's view,
// asked anew at each reconcile, and forgetting a deleted zone.
type ZoneServed interface {
	CheckZone(ctx context.Context, zone served.Zone) served.ZoneView
	ForgetZone(key types.NamespacedName)
}

var _ ZoneServed = (*served.Tracker)(nil)

// maxServersNamed is how many name servers the DNSZone's Served message names.
const maxServersNamed = 5

// setServed asks each of the zone's name servers (the provider's ServedBy, primary first, or its
// change status: served.ZoneOf) for its serial, once, and records status.servers and the DNSZone's Served
// condition (docs/served.md). It returns when the zone should be checked again: a zone with
// secondaries every ServedCheckInterval, one served by its primary alone never (0).
func (r *Reconciler) setServed(ctx context.Context, z *dnsv1.DNSZone, resolved provider.Resolved) time.Duration {
	if r.Served == nil {
		return 0
	}
	zone, checked := served.ZoneOf(client.ObjectKeyFromObject(z), z.Spec.Zone, z.Status.ZoneID, resolved.ServedBy, resolved.ChangeSync)
	if !checked {
		z.Status.Servers = nil
		status.SetUnknown(&z.Status.Conditions, z.Generation, dnsv1.ConditionServed, dnsv1.ReasonNotChecked,
			"the zone's provider has no name servers whose SOA serial says what they serve (a cloud provider, or a Secret without DNS_ADDRESS)")
		return 0
	}
	zone.Keys = publish.ServedKeys(z)
	v := r.Served.CheckZone(ctx, zone)
	z.Status.Servers = zoneServers(v)
	ok, reason, msg := zoneServedCondition(v)
	status.Set(&z.Status.Conditions, z.Generation, dnsv1.ConditionServed, ok, reason, msg)
	if len(zone.Servers) > 1 {
		return r.ServedCheckInterval
	}
	return 0
}

// zoneServedCondition is the DNSZone's Served condition from its view: True while every name
// server answers and follows its primary (one behind within the stale deadline follows: a change
// on its way, shown in status.servers); False Stale naming the servers behind past the
// deadline; False Unreachable naming the servers, the primary included, that answered no SOA.
func zoneServedCondition(v served.ZoneView) (bool, string, string) {
	switch v.Status {
	case served.StatusServed, served.StatusPropagating:
		return true, dnsv1.ReasonServed, fmt.Sprintf("every name server follows its primary (%d asked)", len(v.Servers))
	case served.StatusStale:
		return false, dnsv1.ReasonStale, "behind the primary past --served-stale-after: " + describeServers(v, func(s served.ServerState) string {
			since := s.BehindSince.UTC().Format(time.RFC3339)
			if p := v.Servers[0].Reading; p.Err == "" && s.Reading.Serial != p.Serial && served.Reached(s.Reading.Serial, p.Serial) {
				return fmt.Sprintf("%s answers serial %d, ahead of the primary's %d: it serves the zone from elsewhere, since %s", s.Server, s.Reading.Serial, p.Serial, since)
			}
			return fmt.Sprintf("%s answers serial %d, behind since %s", s.Server, s.Reading.Serial, since)
		})
	case served.StatusUnreachable:
		return false, dnsv1.ReasonUnreachable, "no SOA answer: " + describeServers(v, func(s served.ServerState) string {
			if strings.Contains(s.Reading.Err, s.Server) {
				return s.Reading.Err
			}
			return s.Server + ": " + s.Reading.Err
		})
	}
	return false, dnsv1.ReasonNotChecked, "the name servers were not asked yet"
}

// describeServers joins each named server's text, at most maxServersNamed, then "and N more".
func describeServers(v served.ZoneView, text func(served.ServerState) string) string {
	parts := make([]string, 0, maxServersNamed+1)
	for i, s := range v.Named {
		if i == maxServersNamed {
			parts = append(parts, fmt.Sprintf("and %d more", len(v.Named)-maxServersNamed))
			break
		}
		parts = append(parts, text(s))
	}
	return strings.Join(parts, "; ")
}

// zoneServers is v as status.servers shows it: a server that follows by its name alone (its
// serial moves with every change, and a status written at every change would cost an API write
// per change), one behind with the serial it answers and since when, one failing with why.
func zoneServers(v served.ZoneView) []dnsv1.ZoneServer {
	out := make([]dnsv1.ZoneServer, 0, len(v.Servers))
	for _, s := range v.Servers {
		zs := dnsv1.ZoneServer{Server: s.Server, Error: s.Reading.Err}
		if !s.BehindSince.IsZero() && s.Reading.Err == "" {
			serial := int64(s.Reading.Serial)
			t := metav1.NewTime(s.BehindSince)
			zs.Serial, zs.BehindSince = &serial, &t
		}
		out = append(out, zs)
	}
	return out
}

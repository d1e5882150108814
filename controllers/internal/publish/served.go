package publish

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
	"github.com/dnsplane/dnsplane/pkg/served"
)

// Served is what Run needs of the Served check (*served.Tracker): record a written change, keep
// one from status, judge it, and forget an object's zones.
type Served interface {
	Written(ctx context.Context, zone served.Zone, ref served.Ref, at time.Time) (served.Want, error)
	Track(zone served.Zone, ref served.Ref, w served.Want)
	Verdict(zone types.NamespacedName, ref served.Ref) (served.Want, served.Verdict, bool)
	Forget(ref served.Ref, keep ...types.NamespacedName)
}

var _ Served = (*served.Tracker)(nil)

// maxBehindNamed is how many lagging name servers one zone's part of the Served message names.
const maxBehindNamed = 3

// zoneVerdict is one zone's verdict, or why it has none (err: the primary gave no serial).
type zoneVerdict struct {
	zone string
	want served.Want
	v    served.Verdict
	err  error
}

// setServed keeps status.served and the Served condition of o (docs/served.md): for each zone
// of plans that o holds records in and whose name servers report serials, the change written
// for this reconcile (wrote: when each zone's writer answered, by "namespace/name"), or the one
// status.served keeps, is judged by the Served check. It does nothing without a check
// (opts.Served nil).
func setServed(ctx context.Context, o Object, opts Options, plans []ZonePlan, wrote map[string]time.Time, now time.Time) {
	if opts.Served == nil {
		return
	}
	ref := served.Ref{Kind: opts.Kind, Key: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}
	st := o.PublishingStatus()
	prev := map[string]dnsv1.ServedZone{}
	for _, e := range st.Served {
		prev[e.DNSZone] = e
	}
	held := o.HeldZones()
	var (
		entries   []dnsv1.ServedZone
		verdicts  []zoneVerdict
		keep      []types.NamespacedName
		unchecked []string
	)
	for _, zp := range plans {
		key := types.NamespacedName{Namespace: zp.Zone.Namespace, Name: zp.Zone.Name}
		if !slices.Contains(held, key.String()) {
			continue
		}
		zone, checked := served.ZoneOf(key, zp.Zone.Spec.Zone, zp.Zone.Status.ZoneID, zp.ServedBy, zp.ChangeSync)
		if !checked {
			unchecked = append(unchecked, zp.Zone.Spec.Zone)
			continue
		}
		keep = append(keep, key)
		old, had := prev[key.String()]
		at, written := wrote[key.String()]
		if !written {
			at = now
		}
		if written || !had || old.Zone != zone.Name {
			if _, err := opts.Served.Written(ctx, zone, ref, at); err != nil {
				verdicts = append(verdicts, zoneVerdict{zone: zone.Name, err: err})
				continue
			}
		} else {
			opts.Served.Track(zone, ref, wantOf(old))
		}
		w, v, ok := opts.Served.Verdict(key, ref)
		if !ok {
			continue
		}
		verdicts = append(verdicts, zoneVerdict{zone: zone.Name, want: w, v: v})
		entries = append(entries, entryOf(key.String(), zone.Name, w))
	}
	opts.Served.Forget(ref, keep...)
	st.Served = entries
	conds := o.GetConditions()
	ok, reason, msg := servedCondition(verdicts, unchecked)
	if reason == dnsv1.ReasonNotChecked {
		status.SetUnknown(&conds, o.GetGeneration(), dnsv1.ConditionServed, reason, msg)
	} else {
		status.Set(&conds, o.GetGeneration(), dnsv1.ConditionServed, ok, reason, msg)
	}
	o.SetConditions(conds)
}

// servedCondition sums the zones' verdicts into the Served condition: the worst status wins
// (Unreachable, then Stale, then Propagating), and its message names each zone not served with
// its lagging servers and the time of the write; Served's names the slowest server. Without a
// verdict the condition is Unknown, NotChecked.
func servedCondition(vs []zoneVerdict, unchecked []string) (bool, string, string) {
	if len(vs) == 0 {
		if len(unchecked) > 0 {
			return false, dnsv1.ReasonNotChecked, "the name servers of " + strings.Join(unchecked, ", ") +
				" report no SOA serial to check (a cloud provider; or a PowerDNS, RFC 2136 or webhook Secret without DNS_ADDRESS, the host:port of a server that serves the zone)"
		}
		return false, dnsv1.ReasonNotChecked, "no records written yet"
	}
	rank := map[served.Status]int{served.StatusServed: 0, served.StatusPropagating: 1, served.StatusStale: 2, served.StatusUnreachable: 3}
	worst := served.StatusServed
	var parts []string
	var slowest zoneVerdict
	for _, zv := range vs {
		st := zv.v.Status
		if zv.err != nil {
			st = served.StatusUnreachable
		}
		if rank[st] > rank[worst] {
			worst = st
		}
		switch {
		case zv.err != nil:
			parts = append(parts, fmt.Sprintf("zone %s: the primary gave no SOA serial after the write: %v", zv.zone, zv.err))
		case st != served.StatusServed:
			parts = append(parts, fmt.Sprintf("zone %s (serial %d, written %s): %s", zv.zone, zv.want.Serial,
				zv.want.Since.UTC().Format(time.RFC3339), served.Describe(zv.want, zv.v.Behind, maxBehindNamed)))
		case slowest.zone == "" || zv.v.Lag > slowest.v.Lag:
			slowest = zv
		}
	}
	if worst == served.StatusServed {
		msg := fmt.Sprintf("every name server answers the last change in %d zones", len(vs))
		if len(vs) == 1 {
			msg = "every name server answers the last change in zone " + vs[0].zone
		}
		if slowest.want.Slowest != "" {
			msg += fmt.Sprintf("; slowest %s after %s", slowest.want.Slowest, slowest.v.Lag.Round(time.Millisecond))
		}
		return true, dnsv1.ReasonServed, msg
	}
	return false, string(worst), strings.Join(parts, "; ")
}

// wantOf is the want status.served keeps.
func wantOf(e dnsv1.ServedZone) served.Want {
	w := served.Want{Serial: uint32(e.Serial), Since: e.WrittenAt.Time, Slowest: e.Slowest}
	if e.ServedAt != nil {
		w.ServedAt = e.ServedAt.Time
	}
	return w
}

// entryOf is w as status.served keeps it.
func entryOf(dnsZone, zone string, w served.Want) dnsv1.ServedZone {
	e := dnsv1.ServedZone{DNSZone: dnsZone, Zone: zone, Serial: int64(w.Serial), WrittenAt: metav1.NewMicroTime(w.Since), Slowest: w.Slowest}
	if !w.ServedAt.IsZero() {
		t := metav1.NewMicroTime(w.ServedAt)
		e.ServedAt = &t
	}
	return e
}

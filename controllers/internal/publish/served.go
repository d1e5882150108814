package publish

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
	"github.com/dnsplane/dnsplane/pkg/served"
)

// Served is what Run needs of the Served check (*served.Tracker): read a primary before a write,
// record a written change or a deleted object's removal, keep one from status, judge it, and
// forget an object's zones.
type Served interface {
	Baseline(ctx context.Context, zone served.Zone)
	Removed(ctx context.Context, zone served.Zone, ref served.Ref, submitted, at time.Time)
	Written(ctx context.Context, zone served.Zone, ref served.Ref, submitted, at time.Time) (served.Want, error)
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
	// note, when set, says why the zone is not judged, in place of the servers behind.
	note string
}

// zoneWrite is when one zone's changes were submitted to its writer and when the writer
// answered that the provider holds them.
type zoneWrite struct {
	submitted, at time.Time
}

// baseline reads the primary of each checked zone of zones before their changes are submitted
// (served.Tracker.Baseline: a write that does not move the serial is told apart), every zone at
// once. It does nothing without a check (opts.Served nil).
func baseline(ctx context.Context, opts Options, zones []zoneChanges) {
	if opts.Served == nil {
		return
	}
	var wg sync.WaitGroup
	for _, z := range zones {
		if zone, ok := servedZone(z.plan); ok {
			wg.Go(func() { opts.Served.Baseline(ctx, zone) })
		}
	}
	wg.Wait()
}

// servedZone is the zone the Served check asks for zp (served.ZoneOf), and whether it has one.
func servedZone(zp ZonePlan) (served.Zone, bool) {
	key := types.NamespacedName{Namespace: zp.Zone.Namespace, Name: zp.Zone.Name}
	zone, ok := served.ZoneOf(key, zp.Zone.Spec.Zone, zp.Zone.Status.ZoneID, zp.ServedBy, zp.ChangeSync)
	zone.SerialMayStay = zp.SerialMayStay
	zone.Keys = ServedKeys(zp.Zone)
	return zone, ok
}

// servedZones are the DNSZones ("namespace/name") whose Served check an object's reconcile
// judges: the zones it holds records in, those this reconcile wrote to (a zone it left, or all
// of an emptied object's: its removals), and those whose last change status.served shows not
// served yet (a zone it left before).
func servedZones(o Object, wrote map[string]zoneWrite) []string {
	zones := append([]string(nil), o.HeldZones()...)
	for k := range wrote {
		zones = append(zones, k)
	}
	return Union(zones, openServed(o))
}

// openServed are the DNSZones of status.served whose change is not served yet.
func openServed(o Object) []string {
	var out []string
	for _, e := range o.PublishingStatus().Served {
		if e.ServedAt == nil {
			out = append(out, e.DNSZone)
		}
	}
	return out
}

// setServed keeps status.served and the Served condition of o (docs/served.md): for each zone
// of plans among servedZones whose name servers report serials, the change written for this
// reconcile (wrote: when each zone's write was submitted and answered, by "namespace/name"),
// or the one status.served keeps, is judged by the Served check. notWritten, when not "", says
// why the object's last change is not all written (Ready is not True): then Served is False,
// NotWritten, whatever the zones' verdicts. A zone the object no longer holds records in is
// judged until its removal is served, and then dropped from status.served. It does nothing
// without a check (opts.Served nil).
func setServed(ctx context.Context, o Object, opts Options, plans []ZonePlan, known map[types.NamespacedName]*dnsv1.DNSZone, wrote map[string]zoneWrite, notWritten string, now time.Time) {
	if opts.Served == nil {
		return
	}
	ref := served.Ref{Kind: opts.Kind, Key: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}
	st := o.PublishingStatus()
	prev := map[string]dnsv1.ServedZone{}
	for _, e := range st.Served {
		prev[e.DNSZone] = e
	}
	zones, held := servedZones(o, wrote), o.HeldZones()
	if !servedCurrent(o) {
		// status.served may predate a change written since (its status write lost): its
		// entries do not carry the last change.
		prev = map[string]dnsv1.ServedZone{}
	}
	var (
		entries   []dnsv1.ServedZone
		verdicts  []zoneVerdict
		keep      []types.NamespacedName
		unchecked []string
	)
	for _, zp := range plans {
		key := types.NamespacedName{Namespace: zp.Zone.Namespace, Name: zp.Zone.Name}
		if !slices.Contains(zones, key.String()) {
			continue
		}
		zone, checked := servedZone(zp)
		if !checked {
			unchecked = append(unchecked, zp.Zone.Spec.Zone)
			continue
		}
		zv, ok := judgeZone(ctx, opts.Served, zone, ref, prev, wrote, now)
		if !ok {
			continue
		}
		verdicts = append(verdicts, zv)
		if zv.err != nil {
			// The change is not judged, and stays to judge: a removal's zone is not held.
			keep = append(keep, key)
			entries = append(entries, unknownEntry(key.String(), zone.Name, wrote[key.String()], now))
			continue
		}
		keep = append(keep, key)
		if slices.Contains(held, key.String()) || zv.v.Status != served.StatusServed {
			entries = append(entries, entryOf(key.String(), zone.Name, zv.want))
		}
	}
	kept, kv, kk := unplanned(st.Served, plans, known, zones, servedCurrent(o))
	entries, verdicts, keep = append(entries, kept...), append(verdicts, kv...), append(keep, kk...)
	opts.Served.Forget(ref, keep...)
	st.Served = entries
	conds := o.GetConditions()
	ok, reason, msg := servedCondition(verdicts, unchecked)
	switch {
	case notWritten != "":
		status.Set(&conds, o.GetGeneration(), dnsv1.ConditionServed, false, dnsv1.ReasonNotWritten, notWritten)
	case reason == dnsv1.ReasonNotChecked:
		status.SetUnknown(&conds, o.GetGeneration(), dnsv1.ConditionServed, reason, msg)
	default:
		status.Set(&conds, o.GetGeneration(), dnsv1.ConditionServed, ok, reason, msg)
	}
	o.SetConditions(conds)
}

// unplanned keeps the entries of status.served (old) whose DNSZone is among zones, exists
// (known: the assignment's DNSZones) and has no plan in this reconcile (it is not available):
// the change there stays to judge once it is. A DNSZone that no longer exists drops its entry. An entry not served, or one that may not carry the last change (!current), is a
// verdict not served, naming the zone; a served one is Served.
func unplanned(old []dnsv1.ServedZone, plans []ZonePlan, known map[types.NamespacedName]*dnsv1.DNSZone, zones []string, current bool) ([]dnsv1.ServedZone, []zoneVerdict, []types.NamespacedName) {
	var (
		entries  []dnsv1.ServedZone
		verdicts []zoneVerdict
		keep     []types.NamespacedName
	)
	for _, e := range old {
		if !slices.Contains(zones, e.DNSZone) || slices.ContainsFunc(plans, func(zp ZonePlan) bool {
			return zp.Zone.Namespace+"/"+zp.Zone.Name == e.DNSZone
		}) {
			continue
		}
		ns, name, _ := strings.Cut(e.DNSZone, "/")
		key := types.NamespacedName{Namespace: ns, Name: name}
		if known[key] == nil {
			continue
		}
		entries, keep = append(entries, e), append(keep, key)
		zv := zoneVerdict{zone: e.Zone, want: wantOf(e), v: served.Verdict{Status: served.StatusServed}}
		if e.ServedAt == nil || !current {
			zv.v.Status, zv.note = served.StatusPropagating, "its DNSZone is not available: the change is checked once it is"
		}
		verdicts = append(verdicts, zv)
	}
	return entries, verdicts, keep
}

// unsure marks the status.served entries of zones ("namespace/name") among plans whose write
// failed, or that a reconcile that failed wrote to: the provider may hold the change (a write
// applied and answered with an error, or one not yet judged), and no entry carries it. Each is
// an entry whose serial is read at the next reconcile (unknownEntry). It does nothing without
// a check (opts.Served nil).
func unsure(o Object, opts Options, plans []ZonePlan, zones []string, now time.Time) {
	if opts.Served == nil {
		return
	}
	st := o.PublishingStatus()
	for _, zp := range plans {
		key := zoneKey(zp)
		if _, checked := servedZone(zp); !checked || !slices.Contains(zones, key) {
			continue
		}
		e := unknownEntry(key, zp.Zone.Spec.Zone, zoneWrite{}, now)
		if i := slices.IndexFunc(st.Served, func(x dnsv1.ServedZone) bool { return x.DNSZone == key }); i >= 0 {
			st.Served[i] = e
		} else {
			st.Served = append(st.Served, e)
		}
	}
}

// attempted are the zones of plans a synchronous write wrote to (wrote) or failed in (errs).
func attempted(plans []ZonePlan, wrote map[string]zoneWrite, errs []error) []string {
	var out []string
	for i, zp := range plans {
		if _, ok := wrote[zoneKey(zp)]; ok || errs[i] != nil {
			out = append(out, zoneKey(zp))
		}
	}
	return out
}

// servedCurrent reports whether status.served was written for the object's generation: its
// Served condition observed it. A reconcile that wrote a change and whose status write was lost
// (a conflict, an API error, the manager stopped in between) leaves status.served of an earlier
// generation, whose entries do not carry that change; a restarted manager finds the same.
func servedCurrent(o Object) bool {
	c := meta.FindStatusCondition(o.GetConditions(), dnsv1.ConditionServed)
	return c != nil && c.ObservedGeneration == o.GetGeneration()
}

// judgeZone records or keeps ref's change in zone and judges it: a change written by this
// reconcile (wrote), or one the object holds without a status entry for it, is Written; the one
// status.served keeps (prev) is tracked. ok is false when the check keeps no want.
func judgeZone(ctx context.Context, s Served, zone served.Zone, ref served.Ref, prev map[string]dnsv1.ServedZone, wrote map[string]zoneWrite, now time.Time) (zoneVerdict, bool) {
	key := zone.Key
	old, had := prev[key.String()]
	w, written := wrote[key.String()]
	if !written {
		// Nothing written now: the serial read now carries what the object wrote before.
		w = zoneWrite{at: now}
	}
	if written || !had || old.Zone != zone.Name || old.SerialUnknown {
		if _, err := s.Written(ctx, zone, ref, w.submitted, w.at); err != nil {
			return zoneVerdict{zone: zone.Name, err: err}, true
		}
	} else {
		s.Track(zone, ref, wantOf(old))
	}
	want, v, ok := s.Verdict(key, ref)
	return zoneVerdict{zone: zone.Name, want: want, v: v}, ok
}

// servedCondition sums the zones' verdicts into the Served condition: the worst status wins
// (Unreachable, then Stale, then Propagating), and its message names each zone not served with
// its lagging servers and the time of the write, and the zones not checked. True (Served, naming
// the slowest server) only when every zone is checked and served; every checked zone served and
// some not checked is Unknown, NotChecked, naming those. Without a verdict the condition is
// Unknown, NotChecked.
func servedCondition(vs []zoneVerdict, unchecked []string) (bool, string, string) {
	if len(vs) == 0 {
		if len(unchecked) > 0 {
			return false, dnsv1.ReasonNotChecked, notChecked(unchecked)
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
				zv.want.Since.UTC().Format(time.RFC3339), cmp.Or(zv.note, served.Describe(zv.want, zv.v.Behind, maxBehindNamed))))
		case slowest.zone == "" || zv.v.Lag > slowest.v.Lag:
			slowest = zv
		}
	}
	if worst != served.StatusServed {
		if len(unchecked) > 0 {
			parts = append(parts, notChecked(unchecked))
		}
		return false, string(worst), strings.Join(parts, "; ")
	}
	msg := fmt.Sprintf("every name server answers the last change in %d zones", len(vs))
	if len(vs) == 1 {
		msg = "every name server answers the last change in zone " + vs[0].zone
	}
	if slowest.want.Slowest != "" {
		msg += fmt.Sprintf("; slowest %s after %s", slowest.want.Slowest, slowest.v.Lag.Round(time.Millisecond))
	}
	if len(unchecked) > 0 {
		return false, dnsv1.ReasonNotChecked, msg + "; " + notChecked(unchecked)
	}
	return true, dnsv1.ReasonServed, msg
}

// notChecked says which zones' name servers are not checked, and why.
func notChecked(zones []string) string {
	return "not checked: the name servers of " + strings.Join(zones, ", ") +
		" report no SOA serial to check (a cloud provider; or a PowerDNS, RFC 2136 or webhook Secret without DNS_ADDRESS, the host:port of a server that serves the zone)"
}

// wantOf is the want status.served keeps.
func wantOf(e dnsv1.ServedZone) served.Want {
	w := served.Want{Serial: uint32(e.Serial), Since: e.WrittenAt.Time, Slowest: e.Slowest}
	if e.ServedAt != nil {
		w.ServedAt = e.ServedAt.Time
	}
	return w
}

// unknownEntry is the status.served entry of a change whose serial the primary did not give
// after the write (w, or now when this reconcile wrote nothing there): the zone stays among the
// object's zones, and its serial is read at the next reconcile.
func unknownEntry(dnsZone, zone string, w zoneWrite, now time.Time) dnsv1.ServedZone {
	return dnsv1.ServedZone{DNSZone: dnsZone, Zone: zone, WrittenAt: metav1.NewMicroTime(cmp.Or(w.at, now)), SerialUnknown: true}
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

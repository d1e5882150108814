package dnszone

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// turnOff turns a zone's DNSSEC off child last (docs/dnssec.md, "Turning it off"): the DS set
// leaves the parent link first (status.dnssec holds no DS), and the zone stays signed until the
// link's write without it has landed, every name server of each parent DNSZone the zone was
// linked to answers no DS for it and the DS and DNSKEY TTLs have passed since (unsignWait);
// then the key Secret's key set records that the signer may serve the zone unsigned
// (dnssec.Unsigning.Done). Each step is persisted in the key Secret before it is reported, so a
// restarted manager resumes it. The key Secret is read whenever spec.dnssec is there or the
// status shows a signing state; a zone without key Secret, or whose provider does not sign, is
// Unsigned (or, without spec.dnssec, has no Secure condition) at once. It returns how soon to
// look again (0: at the usual polls).
func (r *Reconciler) turnOff(ctx context.Context, z *dnsv1.DNSZone, resolved provider.Resolved) (time.Duration, error) {
	if (z.Spec.DNSSEC == nil && !mayBeSigned(z)) || !resolved.Provider.Capabilities().SignsOnline {
		r.unsignedNow(z)
		return 0, nil
	}
	sec, ks, err := r.readKeySet(ctx, z)
	if err != nil {
		return r.keysFailed(z, err)
	}
	if sec == nil {
		r.unsignedNow(z)
		return 0, nil
	}
	return r.unsignStep(ctx, z, sec, ks)
}

// unsignStep runs one step of the turn-off of a zone with keys ks in Secret sec: it observes the
// parent link and the parents, persists the step when it changed, emits its Event and reports
// it. Once the turn-off is done the key Secret's finalizer is removed with the write.
func (r *Reconciler) unsignStep(ctx context.Context, z *dnsv1.DNSZone, sec *corev1.Secret, ks dnssec.KeySet) (time.Duration, error) {
	now := r.now().Truncate(time.Second)
	ttl := r.unsignWait()
	u, started := dnssec.Unsigning{Since: now}, ks.Unsigning == nil
	if !started {
		u = *ks.Unsigning
	}
	gone, why, seen, learnt := true, error(nil), u, false
	if !u.Done && u.ParentGoneAt.IsZero() {
		gone, seen, why = r.parentDropped(ctx, z, u)
		learnt = !slices.Equal(seen.Parents, u.Parents) || !slices.Equal(seen.ParentServers, u.ParentServers)
	}
	next, changed := seen.Next(now, gone, ttl)
	if started || changed || learnt || (next.Done && holdsKeys(sec)) {
		ks.Unsigning = &next
		if err := r.writeKeySet(ctx, z, sec, ks); err != nil {
			return 0, err
		}
		r.unsignEvent(z, u, next, started, ttl)
	}
	if next.Done {
		r.unsignedNow(z)
		return 0, nil
	}
	z.Status.DNSSEC = keyStatus(ks, nil, dnsv1.DNSSECKeys{})
	z.Status.DNSSEC.NextRollover = nil
	r.setSecure(z, dnsv1.ReasonUnsigning, unsigningMessage(ks, next, why, ttl))
	if next.ParentGoneAt.IsZero() {
		return cmp.Or(r.SOAPollInterval, maxRolloverWake), nil
	}
	return min(max(next.Until(ttl).Sub(now), time.Second), maxRolloverWake), nil
}

// unsignEvent emits a Normal Event for each step of the turn-off reached from u to next (the
// turn-off started, the parent answering no DS, the zone served unsigned).
func (r *Reconciler) unsignEvent(z *dnsv1.DNSZone, u, next dnssec.Unsigning, started bool, ttl time.Duration) {
	if started {
		r.Recorder.Event(z, corev1.EventTypeNormal, dnsv1.ReasonUnsigning, fmt.Sprintf(
			"DNSSEC is turned off: the DS set of %s leaves the parent link first; the zone stays signed until every parent "+
				"name server answers no DS and the DS and DNSKEY TTLs (%s) have passed", z.Spec.Zone, ttl))
	}
	if (started || u.ParentGoneAt.IsZero()) && !next.ParentGoneAt.IsZero() {
		r.Recorder.Event(z, corev1.EventTypeNormal, dnsv1.ReasonUnsigning, fmt.Sprintf(
			"every parent name server answers no DS for %s (or the parent is not a DNSZone dnsplane links); the zone stays "+
				"signed until %s (the DS and DNSKEY TTLs, %s)", z.Spec.Zone, next.Until(ttl).UTC().Format(time.RFC3339), ttl))
	}
	if next.Done {
		r.Recorder.Event(z, corev1.EventTypeNormal, dnsv1.ReasonUnsigning, fmt.Sprintf(
			"the DS and DNSKEY TTLs (%s) have passed since no parent name server answered a DS for %s (%s): the zone is served unsigned",
			ttl, z.Spec.Zone, next.ParentGoneAt.UTC().Format(time.RFC3339)))
	}
}

// unsigningMessage is the Unsigning message: what the turn-off waits for. Pure.
func unsigningMessage(ks dnssec.KeySet, u dnssec.Unsigning, why error, ttl time.Duration) string {
	msg := fmt.Sprintf("DNSSEC is turned off; the zone stays signed with keys %s", keyList(ks))
	if u.ParentGoneAt.IsZero() {
		return fmt.Sprintf("%s until every parent name server answers no DS, then the DS and DNSKEY TTLs (%s); the DS set has left "+
			"the parent link: waiting for %v", msg, ttl, why)
	}
	if why != nil {
		msg += fmt.Sprintf(" (%v)", why)
	}
	return fmt.Sprintf("%s until %s: the DS and DNSKEY TTLs (%s) after no parent name server answered a DS (%s)",
		msg, u.Until(ttl).UTC().Format(time.RFC3339), ttl, u.ParentGoneAt.UTC().Format(time.RFC3339))
}

// unsignWait is how long a zone whose DNSSEC is off stays signed after no parent server answers
// its DS: the parent's DS TTL (the rollover machine's ParentDSTTL), as long as a resolver may
// hold the DS it fetched last, plus the DNSKEY TTL, as long as a resolver may hold a DNSKEY set
// it validated with that DS (validators keep it as the zone's trusted keys for its TTL).
func (r *Reconciler) unsignWait() time.Duration {
	ds := cmp.Or(r.RolloverTTLs.ParentDS, dsTTL*time.Second).Truncate(time.Second)
	return ds + cmp.Or(r.RolloverTTLs.DNSKEY, dnskeyTTL)
}

// errNoParentDNSZone: the zone is not linked to a parent DNSZone; its DS, if any, is at a
// registrar, out of dnsplane's sight.
var errNoParentDNSZone = errors.New("the parent is not a DNSZone dnsplane links: a DS given to the parent's " +
	"registrar is to be removed there first")

// parentDropped says whether the DS set has left every parent of the zone, with u and the parent
// it asked recorded in it, and why not. The DS has left when the parent link's write without
// it has landed (dsLeftLink: never from a parent's answer alone, which a write in flight may
// yet change) and every name server of each parent DNSZone recorded in u, or named by the
// link, or found now, answers no DS (noDSServed). A zone that has no link and was linked to no
// parent DNSZone during the turn-off counts as dropped at once (errNoParentDNSZone is the note):
// the TTLs are waited out from then.
func (r *Reconciler) parentDropped(ctx context.Context, z *dnsv1.DNSZone, u dnssec.Unsigning) (bool, dnssec.Unsigning, error) {
	parent, err := r.dsLeftLink(ctx, z)
	u = r.learnParent(ctx, z, u, parent)
	if err != nil {
		return false, u, err
	}
	if len(u.Parents) == 0 {
		return true, u, errNoParentDNSZone
	}
	if err := noDSServed(ctx, u.ParentServers, z.Spec.Zone); err != nil {
		return false, u, fmt.Errorf("parent DNSZone %s: %w", strings.Join(u.Parents, ", "), err)
	}
	return true, u, nil
}

// learnParent is u with the parent DNSZone of z recorded, and its name servers: the one the
// parent link names (parent), else, for a zone linked to its parent domain, the one found
// now. A parent whose provider does not resolve is recorded without servers.
func (r *Reconciler) learnParent(ctx context.Context, z *dnsv1.DNSZone, u dnssec.Unsigning, parent *client.ObjectKey) dnssec.Unsigning {
	var p *dnsv1.DNSZone
	if parent != nil {
		p = &dnsv1.DNSZone{}
		if err := r.Client.Get(ctx, *parent, p); err != nil {
			u, _ = u.WithParent(parent.String(), nil)
			return u
		}
	} else if z.Spec.LinkToParentDomain {
		p, _, _, _ = r.findParent(ctx, z)
	}
	if p == nil {
		return u
	}
	var servers []string
	if res, err := r.Providers.Resolve(ctx, p.Namespace, p.Spec.ProviderRef.Name); err == nil {
		servers = res.ServedBy
	}
	u, _ = u.WithParent(client.ObjectKeyFromObject(p).String(), servers)
	return u
}

// dsLeftLink says whether the zone's parent link holds no DS that may still reach its parent
// (nil error): the link DNSEndpoint is gone (its finalizer holds it until its records have left
// the parent), or it holds no DS endpoint and is Ready at its generation (its write without the
// DS has landed). parent is the DNSZone the link names, nil without a link.
func (r *Reconciler) dsLeftLink(ctx context.Context, z *dnsv1.DNSZone) (*client.ObjectKey, error) {
	link := &dnsv1.DNSEndpoint{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: z.Namespace, Name: z.Name + ParentLinkSuffix}, link)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the parent link: %w", err)
	}
	var parent *client.ObjectKey
	if ref := link.Spec.ZoneRef; ref != nil {
		k := client.ObjectKey{Namespace: cmp.Or(ref.Namespace, link.Namespace), Name: ref.Name}
		parent = &k
	}
	switch {
	case !link.DeletionTimestamp.IsZero():
		return parent, fmt.Errorf("the parent link %s is being removed: its records have not left the parent yet", link.Name)
	case slices.ContainsFunc(link.Spec.Endpoints, func(e dnsv1.Endpoint) bool { return e.RecordType == "DS" }):
		return parent, fmt.Errorf("the parent link %s still holds a DS set", link.Name)
	case !landed(link):
		return parent, fmt.Errorf("the parent link %s's write without the DS set has not landed yet (not Ready at generation %d)",
			link.Name, link.Generation)
	}
	return parent, nil
}

// landed says whether a DNSEndpoint's write for its current generation is done: Ready=True,
// observed at its generation. Pure.
func landed(ep *dnsv1.DNSEndpoint) bool {
	ready := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionReady)
	return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == ep.Generation &&
		ep.Status.ObservedGeneration == ep.Generation
}

// noDSServed says whether every server (host:port) answers a DS query for zone without a DS
// record (NOERROR or NXDOMAIN); the error names the first that does not. No server: an error.
func noDSServed(ctx context.Context, servers []string, zone string) error {
	if len(servers) == 0 {
		return errors.New("no parent name server to ask")
	}
	for _, s := range servers {
		if err := serverNoDS(ctx, s, zone); err != nil {
			return fmt.Errorf("parent name server %s: %w", s, err)
		}
	}
	return nil
}

// serverNoDS asks server for zone's DS RRset over TCP and checks that it answers none.
func serverNoDS(ctx context.Context, server, zone string) error {
	ctx, cancel := context.WithTimeout(ctx, keyQueryTimeout)
	defer cancel()
	m := new(dns.Msg)
	m.SetQuestion(dnswire.Fqdn(zone), dns.TypeDS)
	m.SetEdns0(dns.DefaultMsgSize, true)
	resp, _, err := (&dns.Client{Net: "tcp"}).ExchangeContext(ctx, m, server)
	if err != nil {
		return fmt.Errorf("DS query: %w", err)
	}
	if resp.Rcode != dns.RcodeSuccess && resp.Rcode != dns.RcodeNameError {
		return fmt.Errorf("DS query: %s", dns.RcodeToString[resp.Rcode])
	}
	if ds := dsKeys(resp.Answer); len(ds) > 0 {
		return fmt.Errorf("it answers the DS %v", ds)
	}
	return nil
}

// mayBeSigned says whether z's status shows a signing state (status.dnssec, or a Secure
// condition other than Unsigned): only then is its key Secret read when DNSSEC is off, so that
// a zone never signed costs no Secret read per reconcile.
func mayBeSigned(z *dnsv1.DNSZone) bool {
	c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure)
	return z.Status.DNSSEC != nil || (c != nil && c.Reason != dnsv1.ReasonUnsigned)
}

// unsignedNow reports a zone served unsigned: Secure=False, reason Unsigned, with spec.dnssec
// disabled; no Secure condition and no status.dnssec without spec.dnssec.
func (r *Reconciler) unsignedNow(z *dnsv1.DNSZone) {
	z.Status.DNSSEC = nil
	if z.Spec.DNSSEC == nil {
		meta.RemoveStatusCondition(&z.Status.Conditions, dnsv1.ConditionSecure)
		return
	}
	r.setSecure(z, dnsv1.ReasonUnsigned, "spec.dnssec.enabled is false: the zone is served unsigned")
}

// resumeSigning is ks with its turn-off undone, for a zone whose DNSSEC is turned on again: no
// Unsigning, and a rollover in progress forgets what it had seen of the servers and the parent
// (the DS left the parent meanwhile), so its waits run again from new observations. changed:
// there was a turn-off to undo.
func resumeSigning(ks dnssec.KeySet) (dnssec.KeySet, bool) {
	if ks.Unsigning == nil {
		return ks, false
	}
	ks.Unsigning = nil
	if ks.Rollover != nil {
		ro := *ks.Rollover
		ro.ServedAt, ro.ParentAt = time.Time{}, time.Time{}
		ks.Rollover = &ro
	}
	return ks, true
}

// keySignerOff turns off, child last, the DNSSEC of a zone whose provider signs with the keys
// dnsplane hands it (push): the provider keeps the key set it holds while the turn-off's steps
// run (unsignStep, as for the embedded server); once the turn-off is done, or without a key
// Secret, the provider is handed an empty key set. A hand-over it refuses gives
// ProviderActionNeeded and is tried again at the SOA poll interval. done: the Secure condition
// is set here; otherwise the usual path reports Unsigned.
func (r *Reconciler) keySignerOff(ctx context.Context, z *dnsv1.DNSZone, push keyPush) (bool, time.Duration, error) {
	sec, ks, err := r.readKeySet(ctx, z)
	if err != nil {
		wake, err := r.keysFailed(z, err)
		return true, wake, err
	}
	if sec != nil && keysNeeded(ks) {
		if wake, err := r.unsignStep(ctx, z, sec, ks); err != nil || wake > 0 {
			return true, wake, err
		}
	}
	if _, err := push(ctx, dnssec.KeySet{}); err != nil {
		r.setSecure(z, dnsv1.ReasonProviderActionNeeded, fmt.Sprintf("the zone is to be served unsigned; %v", err))
		return true, r.keySignerRetry(), nil
	}
	return false, 0, nil
}

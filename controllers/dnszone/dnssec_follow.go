package dnszone

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// followReread is how often a zone that follows a copied key set reads its key Secret again
// once every name server answers it: the signer's period (controllers/signing.Reread), so a
// new copy is reported about when it is signed with.
const followReread = 30 * time.Second

// ReasonRolloverNotHere (Warning Event): the rollover annotation on a zone that follows a
// copied key set, removed: its rollovers run where its keys are generated.
const ReasonRolloverNotHere = "RolloverNotHere"

// gslbKeys runs the DNSSEC of a zone whose keys are shared between clusters (docs/dnssec.md,
// "Gslb zones"), and says whether it did (handled). A zone with spec.dnssec.keys.source Copied
// follows the key set the admin copies into its key Secret (followKeys); a signed zone of the
// embedded server into which a Gslb publishes has its keys driven as any other's, with the
// servers of every Gslb peer cluster asked beside its own (driveSharedKeys). Any other zone
// takes the usual path.
func (r *Reconciler) gslbKeys(ctx context.Context, z *dnsv1.DNSZone, resolved provider.Resolved) (time.Duration, bool, error) {
	d := z.Spec.DNSSEC
	if d == nil {
		return 0, false, nil
	}
	copied := d.Keys.Source == dnsv1.KeySourceCopied
	if !copied && !d.Enabled {
		return 0, false, nil
	}
	if !resolved.Provider.Capabilities().SignsOnline {
		if !copied {
			return 0, false, nil
		}
		r.setSecure(z, dnsv1.ReasonNotSupported, fmt.Sprintf("keys source Copied is for zones the embedded server (dnsplane.io/local) "+
			"signs; the provider of Secret %q is not it", z.Spec.ProviderRef.Name))
		z.Status.DNSSEC = nil
		return 0, true, nil
	}
	peers, err := r.gslbPeers(ctx, z)
	if err != nil {
		return 0, true, err
	}
	servers := slices.Clone(resolved.ServedBy)
	for _, p := range peers {
		if !slices.Contains(servers, p) {
			servers = append(servers, p)
		}
	}
	if copied {
		wake, err := r.followKeys(ctx, z, servers)
		return wake, true, err
	}
	if len(peers) == 0 {
		return 0, false, nil
	}
	wake, err := r.driveSharedKeys(ctx, z, servers)
	return wake, true, err
}

// gslbPeers returns the name servers (host:port) of the other clusters that serve z: the
// addresses of the Member peers in status.peers of every Gslb that publishes into z (from z's
// namespace, or from one its delegation.allowedNamespaces lists), sorted, each once. A Gslb
// writes there --ext-gslb-clusters, or the clusters of the edge NS set as last read.
func (r *Reconciler) gslbPeers(ctx context.Context, z *dnsv1.DNSZone) ([]string, error) {
	var list dnsv1.GslbList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list Gslbs: %w", err)
	}
	var out []string
	for _, g := range list.Items {
		if g.Spec.ZoneRef.NamespacedName(g.Namespace) != client.ObjectKeyFromObject(z) {
			continue
		}
		if g.Namespace != z.Namespace && (z.Spec.Delegation == nil || !slices.Contains(z.Spec.Delegation.AllowedNamespaces, g.Namespace)) {
			continue
		}
		for _, p := range g.Status.Peers {
			if p.Role != dnsv1.PeerRoleWitness && p.Address != "" {
				out = append(out, p.Address)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// driveSharedKeys drives the keys of a zone that other clusters serve too (driveKeys over
// servers, this cluster's and the peers'). Before the machine runs, every server must answer the
// SOA signed by each active zone-signing key of the persisted key set (zoneSigned): a cluster
// that has not got the key set's last copy, or signs with other keys, holds the rollover in
// its phase (Secure=False, reason Signing, naming the server) until it does.
func (r *Reconciler) driveSharedKeys(ctx context.Context, z *dnsv1.DNSZone, servers []string) (time.Duration, error) {
	sec, ks, err := r.readKeySet(ctx, z)
	if err == nil && sec != nil && ks.Unsigning == nil {
		if err := zoneSigned(ctx, servers, ks); err != nil {
			r.setSecure(z, dnsv1.ReasonSigning, fmt.Sprintf("keys %s; waiting for every name server of the zone, the Gslb peers' included, "+
				"to answer it signed with them (copy the key Secret %s to the clusters that follow it): %v", keyList(ks), z.Name+KeySecretSuffix, err))
			return r.keySignerRetry(), nil
		}
	}
	return r.driveKeys(ctx, z, servers, nil)
}

// followKeys reports a zone that follows a copied key set: it reads the key Secret and never
// writes it, makes no key and runs no rollover; the signer signs with the key set as copied.
// A Secret that is missing gives KeysNotCopied, one that holds no usable key set KeysInvalid;
// with enabled false, the zone is Unsigning until the copied key set records its turn-off
// done, then Unsigned. Otherwise Secure follows what the servers and the parent answer
// (followSecure). A rollover annotation is removed: rollovers run where the keys are made.
func (r *Reconciler) followKeys(ctx context.Context, z *dnsv1.DNSZone, servers []string) (time.Duration, error) {
	if _, asked := manualTrigger(z); asked {
		r.Recorder.Event(z, corev1.EventTypeWarning, ReasonRolloverNotHere, "rollovers of copied keys run at the cluster that generates them; annotation "+AnnotationRollover+" removed")
		if err := r.consumeTrigger(ctx, z); err != nil {
			return 0, err
		}
	}
	name := z.Name + KeySecretSuffix
	sec, ks, err := r.readKeySet(ctx, z)
	switch {
	case errors.Is(err, errKeysInvalid):
		r.setSecure(z, dnsv1.ReasonKeysInvalid, err.Error()+"; copy it again from the cluster that generates the zone's keys")
		z.Status.DNSSEC = nil
		return CredentialRetry, nil
	case err != nil:
		return 0, err
	case sec == nil && !z.Spec.DNSSEC.Enabled, sec != nil && !z.Spec.DNSSEC.Enabled && ks.Unsigning != nil && ks.Unsigning.Done:
		r.unsignedNow(z)
		return 0, nil
	case sec == nil:
		r.setSecure(z, dnsv1.ReasonKeysNotCopied, fmt.Sprintf("spec.dnssec.keys.source is Copied and there is no key Secret %s: copy it "+
			"from the cluster that generates the zone's keys (docs/dnssec.md, \"Gslb zones\"); no key is made here", name))
		z.Status.DNSSEC = nil
		return CredentialRetry, nil
	case !z.Spec.DNSSEC.Enabled:
		r.setSecure(z, dnsv1.ReasonUnsigning, fmt.Sprintf("spec.dnssec.enabled is false: the zone stays signed with the keys %s copied in "+
			"Secret %s until a copy records the turn-off done at the cluster that generates them", keyList(ks), name))
		z.Status.DNSSEC = followStatus(ks)
		return followReread, nil
	}
	pol, err := r.keyPolicy(z.Spec.DNSSEC)
	if err != nil {
		return 0, fmt.Errorf("keys of %s: %w", z.Spec.Zone, err)
	}
	seen := r.observeKeys(ctx, z, servers, ks, pol)
	if seen.notServed == nil {
		seen.notServed = zoneSigned(ctx, servers, ks)
	}
	z.Status.DNSSEC = followStatus(ks)
	r.followSecure(z, ks, seen)
	if seen.notServed != nil || (seen.linked && !secureNow(z)) {
		return r.keySignerRetry(), nil
	}
	return followReread, nil
}

// followStatus is status.dnssec of a copied key set: its keys and rollover phase; no DS set
// (the cluster that generates the keys publishes it) and no next rollover (its lifetimes
// are that cluster's).
func followStatus(ks dnssec.KeySet) *dnsv1.DNSSECStatus {
	st := keyStatus(ks, nil, dnsv1.DNSSECKeys{})
	st.NextRollover = nil
	if ks.Rollover != nil {
		st.RolloverPhase = string(ks.Rollover.Role) + " " + string(ks.Rollover.Phase)
	}
	return st
}

// followSecure sets the Secure condition of a zone that follows the copied key set ks from
// what was seen of its servers (this cluster's and the Gslb peers') and its parent's.
func (r *Reconciler) followSecure(z *dnsv1.DNSZone, ks dnssec.KeySet, seen keysSeen) {
	keys := fmt.Sprintf("keys %s copied in Secret %s", keyList(ks), z.Name+KeySecretSuffix)
	if ro := ks.Rollover; ro != nil {
		keys += fmt.Sprintf(" (%s rollover in phase %s at the cluster that generates them)", ro.Role, ro.Phase)
	}
	switch {
	case !meta.IsStatusConditionTrue(z.Status.Conditions, dnsv1.ConditionZoneAvailable):
		r.setSecure(z, dnsv1.ReasonSigning, keys+"; the zone's server signs with them once the zone is available")
	case seen.notServed != nil:
		r.setSecure(z, dnsv1.ReasonSigning, fmt.Sprintf("%s; waiting for every name server of the zone, the Gslb peers' included, to answer "+
			"it signed with them (a copy not taken up yet, or older or newer than another cluster's): %v", keys, seen.notServed))
	case !seen.linked:
		r.setSecure(z, dnsv1.ReasonDSPending, keys+"; every name server answers them; the zone's DS set is published by the cluster that "+
			"generates the keys (its status.dnssec.ds)")
	case errors.Is(seen.chain, errChainBroken):
		r.setSecure(z, dnsv1.ReasonChainBroken, seen.chain.Error())
	case seen.notAtParent != nil || seen.chain != nil:
		r.setSecure(z, dnsv1.ReasonDSPending, fmt.Sprintf("%s; every name server answers them; the parent's DS set, published by the "+
			"cluster that generates the keys, is not there yet: %v", keys, cmp.Or(seen.notAtParent, seen.chain)))
	case ks.Rollover != nil:
		r.setSecure(z, dnsv1.ReasonRolloverInProgress, keys+"; the chain from the parent's DS verifies")
	default:
		r.setSecure(z, dnsv1.ReasonSecure, keys+"; every name server answers them, every parent name server their DS set, "+
			"and the chain from it to the SOA verifies")
	}
}

// zoneSigned says whether every server (host:port) answers the SOA of ks's zone with a valid
// RRSIG by each active zone-signing key (ZSK or CSK) of ks: the signatures of the zone's data,
// which the DNSKEY check (keysServed) does not see. The error names the first server that
// does not, and why.
func zoneSigned(ctx context.Context, servers []string, ks dnssec.KeySet) error {
	for _, s := range servers {
		answer, err := ask(ctx, s, ks.Zone, dns.TypeSOA)
		if err != nil {
			return fmt.Errorf("name server %s: %w", s, err)
		}
		soa, sigs := split(answer, dns.TypeSOA)
		for _, k := range ks.Keys {
			if k.SignsZone() && !signedBy(sigs, soa, k.DNSKEY) {
				return fmt.Errorf("name server %s: no valid RRSIG of the SOA by %s %d", s, k.Role, k.Tag())
			}
		}
	}
	return nil
}
